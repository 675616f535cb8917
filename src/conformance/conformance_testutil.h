// Shared fixtures of the conformance tests: deadlines short enough that
// every check takes well under a few seconds, and a wiped temp directory.
#ifndef DEVMGR_CONFORMANCE_CONFORMANCE_TESTUTIL_H_
#define DEVMGR_CONFORMANCE_CONFORMANCE_TESTUTIL_H_

#include <string>

#include "common/temp_dir_testutil.h"
#include "conformance/session.h"
#include "conformance/test_kubelet.h"

namespace devmgr::conformance::testutil {

inline Timeouts FastTimeouts() {
  Timeouts t;
  t.rpc = absl::Seconds(2);
  t.register_within = absl::Milliseconds(500);
  t.serve_wait = absl::Milliseconds(500);
  t.first_list_within = absl::Milliseconds(500);
  t.observe = absl::Milliseconds(400);
  t.list_window = absl::Milliseconds(400);
  t.prestart = absl::Seconds(1);
  t.reregister_within = absl::Seconds(3);
  // The SHOULD companions: as wide as the widest MUST window here, so that a
  // loaded machine does not turn a fast plugin into a SHOULD finding.
  t.prompt_within = absl::Seconds(3);
  t.stop_grace = absl::Seconds(1);
  t.latency_budget = absl::Seconds(1);
  t.latency_samples = 3;
  return t;
}

// A fresh directory under /tmp, removed with everything in it at the end.
using TempDir = devmgr::testutil::TempDir;
}  // namespace devmgr::conformance::testutil

#endif  // DEVMGR_CONFORMANCE_CONFORMANCE_TESTUTIL_H_
