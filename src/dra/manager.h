// The kubelet's DRA manager (pkg/kubelet/cm/dra, 1.34-1.37) without gRPC:
// the claim-info cache, NodePrepareResources / NodeUnprepareResources
// batched per driver through DriverCalls (dra/driver_calls.h), the CDI
// device IDs of a container, and the dra_manager_state checkpoint
// (dra/checkpoint.h) in the layout of the configured kubelet release.
//
// What is followed (docs/profiles.md "DRA"; kubelet pkg/kubelet/cm/dra manager.go):
//   * prepare: every claim's drivers must be registered before anything is
//     touched; claims not prepared yet go to one call per driver (a claim
//     whose results name two drivers goes to both); the response is checked
//     (unknown claim UID, per-claim error, claims left out); the devices are
//     stored per driver, the claims marked prepared, the pod UID added and
//     the checkpoint written before success is returned;
//   * a prepared claim only gains the pod UID (no call);
//   * unprepare: the pod UID is dropped; a claim no pod uses any more gets
//     one call per driver and leaves the cache; the checkpoint is written;
//     no claim object is needed;
//   * "prepared" is not checkpointed: after Start every restored claim is
//     prepared again on the next PrepareResources; 1.34-1.36 append the
//     driver's devices to the restored ones, 1.37 replaces them;
//   * error texts are the kubelet's ("prepare dynamic resources: DRA driver
//     x is not registered", "... NodePrepareResources skipped 1
//     ResourceClaims", ...).
//
// Where this differs on purpose: the kubelet adds the pod UID and writes the
// checkpoint before calling the drivers (its reconcile loop unprepares
// what a failed prepare left); here a call either commits all of its changes
// to the cache and the checkpoint, or none (a failed prepare leaves no trace
// of the pod, a failed unprepare keeps the pod's claims as they were), and a
// retry repeats the driver calls (drivers must be idempotent, #141966).
// Where the kubelet iterates Go maps (drivers of a batch, drivers of a claim,
// checkpoint entries), the order here is by driver name and claim UID.
#ifndef DEVMGR_DRA_MANAGER_H_
#define DEVMGR_DRA_MANAGER_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "checkpoint/file_store.h"
#include "common/fs.h"
#include "dra/checkpoint_encoder.h"
#include "dra/driver_calls.h"
#include "dra/pod_claims.h"
#include "dra/state.h"
#include "nlohmann/json.hpp"

namespace devmgr::dra {

struct ManagerOptions {
  // The kubelet's root directory: the checkpoint is <state_dir>/dra_manager_state.
  std::string state_dir;
  // The kubelet release emulated (1.<minor>): the checkpoint layout
  // (LayoutForMinor) and whether a re-prepare resets the devices (37+).
  int kubelet_minor = 37;
  // fsync the checkpoint (as the kubelet); false for fast tests.
  bool fsync = true;
  // Not owned; nullptr: fs::Default(). Must outlive the manager.
  fs::Filesystem* filesystem = nullptr;
};

// One claim of the cache (the kubelet's ClaimInfo): the checkpointed state
// and whether the drivers prepared it since this manager started.
struct ClaimInfo {
  ClaimInfoState state;
  bool prepared = false;

  bool operator==(const ClaimInfo&) const = default;
};

// Thread-safe. PrepareResources, UnprepareResources and Start run one at a
// time (as the kubelet's pod workers for one node do per pod, here for all
// pods); the driver calls and the checkpoint write happen outside the cache
// lock, so ContainerCdiIds and ClaimInfos never wait for a driver.
class Manager {
 public:
  // `drivers` (not owned) must outlive the manager.
  Manager(DriverCalls* drivers, ManagerOptions options);
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // The kubelet's NewManager: reads the checkpoint of options.state_dir. A
  // missing file is an empty cache (and an empty checkpoint is written, as
  // GetOrCreate does); every restored claim is not prepared. Failure: the
  // texts of ReadAndVerify (dra/checkpoint.h), e.g. DataLoss "create
  // ResourceClaim cache: GetOrCreate() on checkpoint state: failed to get
  // checkpoint dra_manager_state: checkpoint is corrupted"; the cache is
  // then left empty.
  absl::Status Start();

  // Prepares the claims of `pod` (a Pod manifest as the API has it):
  // `claims` are its ResourceClaim objects (resource.k8s.io/v1, allocated
  // and reserved for the pod), in the pod's claim order (as
  // PodClaimResolution::claims, dra/pod_claims.h, holds them). On success every
  // claim is prepared, holds the pod's UID and is in the checkpoint. Failure
  // (nothing changed), the message prefixed "prepare dynamic resources: ":
  //   InvalidArgument: the pod or a claim is malformed; a claim without
  //     status.allocation ("ResourceClaim <name>: not allocated");
  //   FailedPrecondition: "pod <name> (<uid>) is not allowed to use
  //     ResourceClaim <claim> (<claim uid>)" (not in status.reservedFor);
  //     "DRA driver <d> is not registered"; "old ResourceClaim with same
  //     name <n> and different UID <old uid> still exists (previous pod
  //     force-deleted?!)";
  //   the driver call's code: "NodePrepareResources: <error>";
  //   Internal: "NodePrepareResources returned result for unknown claim UID
  //     <uid>", "NodePrepareResources failed for ResourceClaim <name>:
  //     <error>", "NodePrepareResources skipped <n> ResourceClaims";
  //   the write's code: "checkpoint ResourceClaim state: <error>".
  absl::Status PrepareResources(const nlohmann::json& pod,
                                const std::vector<nlohmann::json>& claims);

  // Drops `pod` from every cached claim that holds its UID; claims no pod
  // holds any more are unprepared (one call per driver) and leave the cache;
  // the checkpoint is written. Claims the cache does not hold are skipped.
  // Failure (nothing changed), prefixed "unprepare dynamic resources: ":
  // "DRA driver <d> is not registered", "NodeUnprepareResources: <error>",
  // "NodeUnprepareResources returned result for unknown claim UID <uid>",
  // "NodeUnprepareResources failed for ResourceClaim <name>: <error>",
  // "NodeUnprepareResources skipped <n> ResourceClaims", "checkpoint
  // ResourceClaim state: <error>".
  absl::Status UnprepareResources(const nlohmann::json& pod);

  // The kubelet's reconcileLoop, one pass (pkg/kubelet/cm/dra/manager.go
  // at v1.34.4 and v1.37.2; the kubelet runs it every 60 s once its pod
  // sources are ready): every pod UID a cached claim holds that `active`
  // lacks is unprepared from the cache alone, as UnprepareResources
  // unprepares a pod (no manifest, no claim object needed: e.g. a pod
  // deleted while the kubelet was down, whose claims were restored from
  // the checkpoint). A pod that fails is logged ("Unpreparing pod resources
  // in reconcile loop failed, will retry") and left as it was for the next
  // pass. Returns the UIDs of the pods unprepared, in UID order.
  std::vector<std::string> ReconcileInactive(const std::set<std::string>& active);

  // The CDI device IDs for container `container_name` of `pod` (the
  // kubelet's GetResources): for each of the pod's claims in
  // spec.resourceClaims order, each entry of the container's
  // resources.claims naming it: the IDs of the claim's devices (drivers by
  // name, devices in stored order) whose request names include the entry's
  // request, or all devices when the entry has no request or the device no
  // request names. Pod claims without a claim (template entries with none
  // recorded) are skipped. Failure: InvalidArgument for a malformed pod;
  // Internal "internal error: unable to get claim info for ResourceClaim
  // <name>" when a claim is not cached.
  absl::StatusOr<std::vector<std::string>> ContainerCdiIds(const nlohmann::json& pod,
                                                           const std::string& container_name) const;

  // The claims container `container_name` of `pod` uses, as the PodResources
  // API lists them (the kubelet's GetContainerClaimInfos): for each of the
  // pod's claims in spec.resourceClaims order, one copy of the cached claim
  // per entry of the container's resources.claims naming it. The entry's
  // request does not narrow it (the whole claim is listed), and a claim named
  // by two entries is listed twice. Pod claims that need no claim (a status
  // entry without a name) are skipped. Failure: InvalidArgument for a
  // malformed pod; FailedPrecondition `pod "<ns>/<name>": ResourceClaim not
  // created yet` when a template entry has no status entry (any container);
  // Internal "unable to get information for ResourceClaim <name>" when a
  // claim is not cached.
  absl::StatusOr<std::vector<ClaimInfoState>> ContainerClaimInfos(
      const nlohmann::json& pod, const std::string& container_name) const ABSL_LOCKS_EXCLUDED(mu_);

  // The cache, by claim UID.
  std::map<std::string, ClaimInfo> ClaimInfos() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Cache = std::map<std::string, ClaimInfo>;

  absl::Status PrepareLocked(const nlohmann::json& pod, const std::vector<nlohmann::json>& claims)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(op_mu_);
  absl::Status UnprepareLocked(const nlohmann::json& pod) ABSL_EXCLUSIVE_LOCKS_REQUIRED(op_mu_);
  // Drops `pod_uid` from the claims `uids` of `next` (claim UIDs that hold
  // it); unprepares those no pod holds any more, then commits `next`.
  absl::Status UnprepareClaimsLocked(const std::string& pod_uid,
                                     const std::vector<std::string>& uids, Cache next)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(op_mu_);
  absl::Status CallPrepare(const std::string& driver, const std::vector<ClaimRef>& claims,
                           Cache& next) const;
  absl::Status CallUnprepare(const std::string& driver, const std::vector<ClaimRef>& claims) const;
  // Makes `cache` the manager's cache and writes it as the checkpoint. A
  // failed write is prefixed with `error_prefix` (the kubelet's two texts)
  // and leaves the cache changed, as the kubelet's in-memory cache is.
  absl::Status Commit(Cache cache,
                      std::string_view error_prefix = "checkpoint ResourceClaim state: ")
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(op_mu_);
  // Makes `cache` the manager's cache without writing it (what the kubelet
  // changed in memory before an operation failed).
  void Keep(Cache cache) ABSL_EXCLUSIVE_LOCKS_REQUIRED(op_mu_);
  Cache Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);

  // Constant after construction.
  DriverCalls* const drivers_;
  const ManagerOptions options_;
  const StateLayout layout_;
  const checkpoint::FileStore store_;

  // Serialises Start, PrepareResources and UnprepareResources.
  absl::Mutex op_mu_;
  CheckpointEncoder encoder_ ABSL_GUARDED_BY(op_mu_);
  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(op_mu_);
  Cache cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_MANAGER_H_
