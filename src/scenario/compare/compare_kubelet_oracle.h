// OracleProcess: one kubelet-oracle process (tests/kubelet-oracle,
// docs/oracle.md), the real kubelet device manager of one kubernetes
// release behind a JSON line protocol, driven by `devmgr run
// --compare-kubelet` (compare_kubelet.h).
#ifndef DEVMGR_SCENARIO_COMPARE_COMPARE_KUBELET_ORACLE_H_
#define DEVMGR_SCENARIO_COMPARE_COMPARE_KUBELET_ORACLE_H_

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace devmgr::scenario {

class OracleProcess {
 public:
  OracleProcess() = default;
  OracleProcess(const OracleProcess&) = delete;
  OracleProcess& operator=(const OracleProcess&) = delete;
  ~OracleProcess() { Stop(); }

  // Starts `binary --dir plugin_dir` (its stderr goes to `stderr_path`) and
  // reads its ready line (the kubernetes release it was built from).
  absl::Status Start(const std::string& binary, const std::string& plugin_dir,
                     const std::string& stderr_path, absl::Duration timeout);
  // One request, one answer. An answer with ok:false is returned as is;
  // a dead or silent oracle is an error (with the tail of its stderr).
  absl::StatusOr<nlohmann::json> Call(nlohmann::json request,
                                      absl::Duration timeout = absl::Seconds(30));
  // `quit`, then SIGKILL when it does not exit within a few seconds.
  // Idempotent.
  void Stop();

  const std::string& kubernetes() const { return kubernetes_; }

 private:
  absl::StatusOr<std::string> ReadLine(absl::Duration timeout);
  std::string StderrTail() const;

  pid_t pid_ = -1;
  int fd_ = -1;  // a socketpair end: the oracle's stdin and stdout
  std::string buffer_;
  std::string stderr_path_;
  std::string kubernetes_;
  int next_id_ = 1;
};

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_COMPARE_COMPARE_KUBELET_ORACLE_H_
