// CallLog: the reference DRA driver's record of the DRAPlugin RPCs it
// receives (NodePrepareResources, NodeUnprepareResources), one JSON line
// each, appended to a file (--call-log, else $DEVMGR_DRA_CALL_LOG; none when
// both are empty). `devmgr run` sets the variable for every DRA driver it
// starts, and `devmgr run --compare-kubelet` compares the lines of each side
// (docs/oracle.md, "Differential runs": DRA). docs/sample-dra-driver.md
// describes the lines.
#ifndef DEVMGR_DRAPLUGIN_CALL_LOG_H_
#define DEVMGR_DRAPLUGIN_CALL_LOG_H_

#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "draplugin/driver_core.h"

namespace devmgr::draplugin {

// The environment variable a call log path may come from.
inline constexpr char kCallLogEnv[] = "DEVMGR_DRA_CALL_LOG";

// Thread-safe. An empty path logs nothing.
class CallLog {
 public:
  explicit CallLog(std::string path) : path_(std::move(path)) {}

  // One line: {"method", "service" ("v1" or "v1beta1"), "claims": [{namespace,
  // name, uid}] in request order, "errors": {uid: error} of the claims that
  // failed}. Written after the answer is made, before it is sent. A write
  // failure is logged once and otherwise ignored.
  void Record(const std::string& method, const std::string& service,
              const std::vector<ClaimRef>& claims, const std::map<std::string, std::string>& errors)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::string path_;
  absl::Mutex mu_;
  bool warned_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace devmgr::draplugin

#endif  // DEVMGR_DRAPLUGIN_CALL_LOG_H_
