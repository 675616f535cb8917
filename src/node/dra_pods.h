// DraPods: the node's side of DRA for its pods. What a cluster splits
// between the resource claim controller (a claim per template entry), the
// scheduler (allocation, status.reservedFor) and the kubelet (prepare before
// the containers start, unprepare when the pod goes) happens here, in that
// order, over the embedded API endpoint's store and the DRA manager.
#ifndef DEVMGR_NODE_DRA_PODS_H_
#define DEVMGR_NODE_DRA_PODS_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "apiserver/store.h"
#include "dra/dra_plugin_handler.h"
#include "dra/health_info.h"
#include "dra/manager.h"
#include "nlohmann/json.hpp"
#include "pod/pod.h"
#include "topology/admit_result.h"

namespace devmgr::node {

// The pod's status reasons when its claims fail. In a cluster the pod would
// stay Pending (unschedulable, or retried by the pod worker); devmgr fails
// it with the message the scheduler or the kubelet's event would show.
inline constexpr char kDraSchedulingFailed[] = "FailedScheduling";
inline constexpr char kDraPrepareFailed[] = "FailedPrepareDynamicResources";

// Observes one of the kubelet's DRA operations of a pod ("PrepareResources",
// "UnprepareResources"): whether it failed, and how long it took.
using DraOperationObserver =
    std::function<void(const std::string& operation, bool failed, absl::Duration duration)>;

// Thread-safe. `store` and `manager` (not owned) must outlive it.
class DraPods {
 public:
  // `on_operation` (may be empty) sees each PrepareResources and
  // UnprepareResources the kubelet would time for
  // dra_operations_duration_seconds: every pod's, claims or not (its
  // PrepareDynamicResources before the sandbox, UnprepareDynamicResources
  // in syncTerminatedPod).
  DraPods(apiserver::Store* store, std::string node_name, dra::Manager* manager,
          DraOperationObserver on_operation = {})
      : store_(store),
        node_name_(std::move(node_name)),
        manager_(manager),
        on_operation_(std::move(on_operation)) {}

  // Before the pod's containers start: its claims resolved (template claims
  // created), allocated on this node and reserved for the pod, then
  // prepared (dra::Manager::PrepareResources). A pod without claims passes
  // untouched. A pod prepared already is prepared again (no-op for the
  // manager when its claims are prepared). Rejected: reason kDraSchedulingFailed with the
  // resolution's or the allocator's message, or kDraPrepareFailed with "Failed to prepare dynamic
  // resources: <the manager's error>" (the kubelet's event).
  topology::AdmitResult Prepare(const pod::Pod& pod) ABSL_LOCKS_EXCLUDED(mu_, op_mu_);

  // The pod is gone: its claims are unprepared (dra::Manager::
  // UnprepareResources) and then released (ReleasePodClaims: reservedFor
  // dropped, the claims made for it deleted). On an unprepare error the
  // pod is kept (a later call retries, as the kubelet keeps the pod
  // Terminating). Unknown pods: OK. `observe`: false for the kubelet's
  // reconcile loop, which unprepares without the operation's metric.
  absl::Status Unprepare(const std::string& pod_uid, bool observe = true)
      ABSL_LOCKS_EXCLUDED(mu_, op_mu_);

  // The pod is gone while the kubelet is down: only the API side happens
  // (the claim controller releases its claims, ReleasePodClaims); no driver
  // is called and dra_manager_state keeps its claims, for the reconcile
  // loop of a kubelet that starts later (ReconcileOrphans). The pod is
  // forgotten. Unknown pods: OK.
  absl::Status Release(const std::string& pod_uid) ABSL_LOCKS_EXCLUDED(mu_, op_mu_);

  // The DRA manager's reconcile loop for the pods this object does not
  // know (dra::Manager::ReconcileInactive over `active` and the pods it
  // knows, which Unprepare handles): claims restored from the checkpoint
  // for pods gone while the kubelet was down. Returns their UIDs.
  std::vector<std::string> ReconcileOrphans(const std::vector<std::string>& active)
      ABSL_LOCKS_EXCLUDED(mu_, op_mu_);

  // The CDI device IDs of the container (dra::Manager::ContainerCdiIds);
  // empty for a pod without claims.
  std::vector<std::string> ContainerCdiIds(const std::string& pod_uid,
                                           const std::string& container) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // The claims the container uses, whole, as the PodResources API lists
  // them (dra::Manager::ContainerClaimInfos); empty for a pod without claims
  // or one this node has not synced yet. Failure: the manager's.
  absl::StatusOr<std::vector<dra::ClaimInfoState>> ContainerClaimInfos(
      const std::string& pod_uid, const std::string& container) const ABSL_LOCKS_EXCLUDED(mu_);

  // The UIDs of the pods whose claims were prepared and not yet unprepared.
  std::vector<std::string> PodUids() const ABSL_LOCKS_EXCLUDED(mu_);

  // The pod's manifest as resolved (with status.resourceClaimStatuses), what
  // the DRA manager's UpdateAllocatedResourcesStatus reads; nullopt for a
  // pod Prepare has not seen (or Unprepare released).
  std::optional<nlohmann::json> PodManifest(const std::string& pod_uid) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Hands an operation that began at `start` to on_operation_.
  void Observe(const std::string& operation, const absl::Status& result, absl::Time start) const;

  apiserver::Store* const store_;
  const std::string node_name_;
  dra::Manager* const manager_;
  const DraOperationObserver on_operation_;

  // ReleasePodClaims for the gone pod, retried on conflicts; failures logged.
  void ReleaseClaims(const std::string& pod_uid, const nlohmann::json& manifest);

  // Serialises Prepare and Unprepare: two pods' allocations must not pick
  // the same device (the scheduler binds one pod at a time).
  absl::Mutex op_mu_;
  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(op_mu_);
  // Pod UID -> its manifest as resolved (metadata.uid set, with
  // status.resourceClaimStatuses), what unprepare and the CDI IDs read.
  std::map<std::string, nlohmann::json> pods_ ABSL_GUARDED_BY(mu_);
};

// The status file's "dra" section (docs/serve.md): the registered drivers
// with their endpoints, and the DRA manager's claim-info cache (what
// dra_manager_state holds, and whether each claim was prepared since the
// node started), and with `health` (nullptr: the section is left out) the
// DRA manager's device health cache (what dra_health_state holds).
nlohmann::json DraStatusJson(const dra::DraPluginHandler& handler, const dra::Manager& manager,
                             const dra::HealthInfoCache* health = nullptr);

}  // namespace devmgr::node

#endif  // DEVMGR_NODE_DRA_PODS_H_
