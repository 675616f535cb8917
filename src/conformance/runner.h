// RunConformance: runs the selected checks of the device-plugin catalogue
// against a target and collects the results, through the conformance core
// (core.h). The checks that leave the plugin as they found it share one
// Session (one emulated kubelet, one plugin start); the restarts get a fresh
// one each (CheckInfo::session).
#ifndef DEVMGR_CONFORMANCE_RUNNER_H_
#define DEVMGR_CONFORMANCE_RUNNER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "conformance/check.h"
#include "conformance/core.h"
#include "conformance/session.h"
#include "conformance/target.h"
#include "kubelet/profile.h"

namespace devmgr::conformance {

struct RunOptions {
  // Absolute device-plugin directory the emulated kubelet serves in. It is
  // wiped before every check. "" = a new directory under /tmp (removed
  // afterwards).
  std::string dir;
  Timeouts timeouts;
  Profile profile = DefaultProfile();
  // ECMAScript regular expressions matched against "<id> <title> <tags>":
  // run the checks matching focus ("" = all) and not matching skip.
  std::string focus;
  std::string skip;
  // When set, the tester's kubelet records here what a kubelet would over
  // the whole run (every check, session and kubelet restart): each Register
  // RPC it receives, and each Allocate RPC the tester makes with its
  // duration (see SessionOptions::metrics). Not owned. nullptr = none.
  metrics::KubeletMetrics* metrics = nullptr;
};

// The selected checks, in catalogue order. InvalidArgument for a bad
// regular expression ("--focus: ...").
absl::StatusOr<std::vector<const CheckInfo*>> SelectChecks(const std::string& focus,
                                                           const std::string& skip);

// FailedPrecondition for environment problems (the directory cannot be
// used, the plugin command cannot run, --socket does not answer);
// InvalidArgument for bad options. `progress` is called after each check.
absl::StatusOr<RunReport> RunConformance(
    Target& target, const RunOptions& opts,
    const std::function<void(const CheckResult&)>& progress = nullptr);

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_RUNNER_H_
