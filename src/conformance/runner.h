// RunConformance: runs the selected checks of the catalogue against a
// target and collects the results. The checks that leave the plugin as they
// found it share one Session (one emulated kubelet, one plugin start); the
// restarts get a fresh one each (CheckInfo::session).
#ifndef DEVMGR_CONFORMANCE_RUNNER_H_
#define DEVMGR_CONFORMANCE_RUNNER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "conformance/check.h"
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

struct RunReport {
  std::string target;
  std::string kubelet_version;  // the profile's name
  absl::Time started;
  absl::Duration duration;  // wall time of the whole run
  // Plugin sessions the run started (each a fresh emulated kubelet and, with
  // --plugin, a fresh plugin process).
  int sessions = 0;
  std::vector<CheckResult> results;

  int Count(Level level, Status status) const;
  int Count(Status status) const;
  // True when no MUST check failed.
  bool MustPassed() const;
};

// The selected checks, in catalogue order. InvalidArgument for a bad
// regular expression ("--focus: ...").
absl::StatusOr<std::vector<const CheckInfo*>> SelectChecks(const std::string& focus,
                                                           const std::string& skip);

// True for a real kubelet's root or a directory in it (after resolving
// symlinks and dots): a session wipes or re-creates what it uses there, which
// must never happen to a kubelet's sockets and checkpoints.
bool InRealKubeletDir(const std::string& dir);

// The directory a run works in: `dir` when given (absolute, and not in a real
// kubelet's directory: the refusal says `what_happens_there`), else a new one
// named /tmp/<temp_prefix>-XXXXXX that the run removes (`temp`).
struct RunDir {
  std::string path;
  bool temp = false;
};
absl::StatusOr<RunDir> ChooseRunDir(const std::string& dir, const std::string& temp_prefix,
                                    const std::string& what_happens_there);

// FailedPrecondition for environment problems (the directory cannot be
// used, the plugin command cannot run, --socket does not answer);
// InvalidArgument for bad options. `progress` is called after each check.
absl::StatusOr<RunReport> RunConformance(
    Target& target, const RunOptions& opts,
    const std::function<void(const CheckResult&)>& progress = nullptr);

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_RUNNER_H_
