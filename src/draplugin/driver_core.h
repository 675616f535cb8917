// DriverCore: what the reference DRA driver does for NodePrepareResources
// and NodeUnprepareResources, without gRPC: read each claim from the API
// server, take the allocation results of its own driver name, write a CDI
// spec per claim, remember the prepared claims in a state file, and
// misbehave where the config says so (config.h, Misbehaviour).
#ifndef DEVMGR_DRAPLUGIN_DRIVER_CORE_H_
#define DEVMGR_DRAPLUGIN_DRIVER_CORE_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "draplugin/api_client.h"
#include "draplugin/claim_state.h"
#include "draplugin/config.h"

namespace devmgr::draplugin {

// A claim as the kubelet names it in a request.
struct ClaimRef {
  std::string namespace_;
  std::string uid;
  std::string name;
};

// One claim's answer: devices, or an error (then the devices are ignored).
struct PrepareResult {
  std::vector<PreparedDevice> devices;
  std::string error;
};

struct CoreOptions {
  std::string cdi_dir;     // where CDI specs go (--cdi-dir)
  std::string driver_dir;  // <plugin-dir>/<driver>: the state file (and wrong_dir specs)
};

// Thread-safe. Calls are serialized, as the kubeletplugin helper does by
// default: one Prepare or Unprepare runs at a time, its API reads and file
// writes included (a deliberate exception to "no lock across I/O": the
// serialization is the behaviour being reproduced). `api` must outlive the
// core.
class DriverCore {
 public:
  DriverCore(Config config, CoreOptions options, const ApiClient* api);
  DriverCore(const DriverCore&) = delete;
  DriverCore& operator=(const DriverCore&) = delete;

  // Restores the prepared claims from the state file; a missing file is a
  // fresh driver (OK). DataLoss for an unreadable file.
  absl::Status LoadState() ABSL_LOCKS_EXCLUDED(mu_);
  // Answers keyed by claim UID. A claim in misbehave.omit_claims has no entry.
  std::map<std::string, PrepareResult> Prepare(const std::vector<ClaimRef>& claims)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Errors keyed by claim UID ("" = success).
  std::map<std::string, std::string> Unprepare(const std::vector<ClaimRef>& claims)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Wakes a delayed Prepare (it then fails its claims). Idempotent.
  void Stop() {
    if (!stop_.HasBeenNotified()) stop_.Notify();
  }

  const Config& config() const { return config_; }
  std::string StatePath() const { return options_.driver_dir + "/" + kStateFileName; }
  // The directory specs are written to (--cdi-dir unless misbehave.cdi_spec is wrong_dir).
  std::string SpecDir() const;
  PreparedClaims PreparedForTest() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  PrepareResult PrepareOneLocked(const ClaimRef& claim) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The answer for a claim prepared before (idempotent, or not when so configured).
  PrepareResult PrepareAgainLocked(const ClaimRef& claim) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The devices of `claim_json` allocated by this driver; an error when the
  // claim is not allocated or was replaced (another UID).
  // *config: why the driver cannot apply the claim's opaque configs for it
  // (OK when it can).
  absl::StatusOr<std::vector<PreparedDevice>> AllocatedDevices(const ClaimRef& claim,
                                                               absl::Status* config) const;
  absl::Status WriteSpec(const ClaimRef& claim, const std::vector<PreparedDevice>& devices) const;
  // The state file with `prepared_` as it is now.
  absl::Status SaveLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const Config config_;
  const CoreOptions options_;
  const ApiClient* const api_;
  absl::Notification stop_;

  mutable absl::Mutex mu_;
  PreparedClaims prepared_ ABSL_GUARDED_BY(mu_);
  // UIDs of claims it has unprepared (misbehave.prepare_after_unprepare_fails).
  std::set<std::string> unprepared_ ABSL_GUARDED_BY(mu_);
  // UIDs of claims restored from the state file (misbehave.restored_unprepare_fails).
  std::set<std::string> restored_ ABSL_GUARDED_BY(mu_);
  // Those of them prepared again since (misbehave.restored_unprepare_needs_prepare).
  std::set<std::string> reprepared_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::draplugin

#endif  // DEVMGR_DRAPLUGIN_DRIVER_CORE_H_
