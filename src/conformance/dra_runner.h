// RunDraConformance: runs the selected checks of the DRA catalogue against a
// DRA driver through the conformance core (core.h) and collects the results
// in the RunReport the device-plugin catalogue's runs make, so that the
// reports, the exit codes and the version matrix are the same. The checks that leave the driver as
// they found it share one DraSession (one driver start, one registration); the others get one each.
#ifndef DEVMGR_CONFORMANCE_DRA_RUNNER_H_
#define DEVMGR_CONFORMANCE_DRA_RUNNER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "conformance/core.h"
#include "conformance/dra_catalogue.h"
#include "conformance/dra_session.h"
#include "conformance/dra_target.h"
#include "kubelet/profile.h"

namespace devmgr::conformance {

struct DraRunOptions {
  // Absolute kubelet root the sessions use (its plugins_registry, plugins and
  // cdi directories are re-created for each). "" = a new directory under
  // /tmp, removed afterwards.
  std::string dir;
  DraTimeouts timeouts;
  // 1.34 or newer (the DRA registration devmgr emulates).
  Profile profile = DefaultProfile();
  // As RunOptions: ECMAScript regular expressions over "<id> <title> <tags>".
  std::string focus;
  std::string skip;
  // Fault SPECs (apiserver/faults.h) every session's API endpoint gets
  // before the driver starts (--api-fault); counted per session.
  std::vector<std::string> api_faults;
};

// The selected checks, in catalogue order. InvalidArgument for a bad regular
// expression or a --focus that matches no check.
absl::StatusOr<std::vector<const DraCheckInfo*>> SelectDraChecks(const std::string& focus,
                                                                 const std::string& skip);

// FailedPrecondition for environment problems (the directory cannot be
// used, the driver command cannot run); InvalidArgument for bad options
// (a profile older than 1.34 among them). `progress` is called after each
// check.
absl::StatusOr<RunReport> RunDraConformance(
    DraTarget& target, const DraRunOptions& opts,
    const std::function<void(const CheckResult&)>& progress = nullptr);

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_DRA_RUNNER_H_
