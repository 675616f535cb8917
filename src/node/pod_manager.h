// PodManager: the slice of the kubelet's pod lifecycle that the device
// manager sees: pods admitted (or rejected) in order, containers started
// (GetDeviceRunContainerOptions, PreStartContainer), pods deleted or
// terminated (they leave the active set and are garbage-collected at the
// next allocation), container restarts, and what a restarted kubelet is
// handed (active pods, the runtime's running containers).
#ifndef DEVMGR_NODE_POD_MANAGER_H_
#define DEVMGR_NODE_POD_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "manager/manager.h"
#include "pod/pod.h"

namespace devmgr::node {

class Node;

// One container as the runtime would report it.
struct ContainerRecord {
  std::string name;
  std::string container_id;  // changes on every restart
  bool running = false;
  int restart_count = 0;
  // The merged device runtime options of the last start (nullopt: none).
  std::optional<manager::RunContainerOptions> run_options;
  // The error of the last start, e.g. a PreStartContainer failure.
  std::string start_error;
  // The NUMA affinity the topology manager stored for the container at
  // admission (bit i = node i); nullopt: none stored, a nil affinity
  // ("any"), or policy none.
  std::optional<uint64_t> numa_affinity;
  // The CDI device IDs of the pod's prepared DRA claims that the container
  // uses (the CRI ContainerConfig.CDIDevices), as of its last start.
  std::vector<std::string> cdi_devices;
};

struct PodRecord {
  pod::Pod pod;
  // kPending while being admitted, kRunning once admitted and started,
  // kFailed when rejected (reason/message set) or marked failed,
  // kSucceeded when marked so.
  pod::Phase phase = pod::Phase::kPending;
  std::string reason;   // e.g. UnexpectedAdmissionError
  std::string message;  // e.g. Allocate failed due to ..., which is unexpected
  bool deleted = false;
  // Admitted, but the pod worker's sync failed before the containers
  // started (its DRA claims could not be allocated or prepared; reason and
  // message say why): the pod stays Pending and RetryFailedSyncs tries again.
  bool sync_failed = false;
  std::vector<ContainerRecord> containers;  // kubelet order (init, then app)
};

struct PodManagerOptions {
  // Keep the record of a deleted pod (PodRecord::deleted) for reports and
  // expectations, as `devmgr run` does: a scenario is finite. Off (`devmgr
  // serve`), a deleted pod's record goes at once, as it leaves the kubelet's
  // pod manager, so that a long-running node's memory follows its live pods.
  bool keep_deleted = true;
};

// Thread-safe. `node` must outlive the PodManager (or be replaced by a
// ReadmitAfter... call). Calls into the manager are made without this
// class's lock, because the manager calls back (active pods, readiness).
class PodManager {
 public:
  explicit PodManager(Node* node, PodManagerOptions opts = {});

  // Admission as the kubelet does it (topology manager admit handler, which
  // allocates), then container start: GetDeviceRunContainerOptions for
  // every container in order. A rejected pod is recorded as Failed with the
  // kubelet's reason and message. InvalidArgument when an active pod with
  // the same UID exists (a deleted or terminated one is replaced).
  absl::StatusOr<PodRecord> AddPod(const pod::Pod& pod);
  // The pod leaves the active set; its devices are freed at the next
  // garbage collection (the next allocation). The node forgets its device
  // health status and topology hints; its record is kept or dropped as
  // PodManagerOptions::keep_deleted says. NotFound for an unknown UID.
  absl::Status DeletePod(const std::string& uid);
  // Succeeded or Failed: the pod is terminated and no longer active.
  absl::Status SetPhase(const std::string& uid, pod::Phase phase);
  // The runtime restarts a container: a new container ID, and container
  // start again (GetDeviceRunContainerOptions; no re-allocation when the
  // devices are cached).
  absl::Status RestartContainer(const std::string& uid, const std::string& container);

  // The pod worker's retry (the kubelet requeues a failed sync after its
  // back-off): every active pod whose sync failed is synced again, and its
  // containers start when that succeeds.
  void RetryFailedSyncs();
  // The DRA manager's reconcile loop (Node::DraReconcile): claims still
  // prepared for pods that are no longer active are unprepared (those of
  // pods this node synced also released), including claims restored from
  // dra_manager_state for pods deleted while the kubelet was down.
  void ReconcileDra();

  // The UIDs of active pods (admitted, not terminated, not deleted).
  std::vector<std::string> ActivePodUids() const;
  std::vector<PodRecord> Pods() const;
  std::optional<PodRecord> Find(const std::string& uid_or_ns_name) const;

  // The StartOptions a (re)starting kubelet gets: active pods, a container
  // map of every known container and the running set. With
  // `node_rebooted`, no container is running (and none is in the map).
  manager::StartOptions MakeStartOptions(bool node_rebooted);
  // After a kubelet restart: re-admits every active pod, in admission order,
  // with the manager's sources not yet ready (running containers take the
  // kubelet-restart shortcut), then marks sources ready. Pods rejected now
  // become Failed, as on a real node.
  void ReadmitAfterRestart(Node* new_node);
  // After a node reboot: every container is stopped; active pods are
  // re-admitted and started again on `new_node`.
  void ReadmitAfterReboot(Node* new_node);

 private:
  // Never called with mu_ held: the manager calls back into
  // ActivePodUids() and the sources-ready flag.
  void AdmitAndStart(Node* node, const std::string& uid, bool start_containers)
      ABSL_LOCKS_EXCLUDED(mu_);
  void StartContainers(Node* node, const std::string& uid) ABSL_LOCKS_EXCLUDED(mu_);
  // The sync's DRA step (Node::PrepareDynamicResources), recorded on the
  // pod; true when the containers may start.
  bool SyncDra(Node* node, const pod::Pod& p) ABSL_LOCKS_EXCLUDED(mu_);
  // After a successful sync: the pod runs and (with `start_containers`) its
  // containers start, unless it was deleted meanwhile.
  void Run(Node* node, const std::string& uid, bool start_containers) ABSL_LOCKS_EXCLUDED(mu_);
  // What the node keeps per pod and forgets when the pod is deleted: its
  // device-health status and its topology hints; its DRA claims are
  // unprepared.
  static void ForgetOnNode(Node* node, const std::string& uid, bool terminated_before = false);
  std::string NewContainerId(const std::string& uid, const std::string& name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A record in admission order, with its admission sequence number.
  struct Slot {
    uint64_t seq = 0;
    PodRecord rec;
  };
  using SlotIt = std::list<Slot>::iterator;
  // The first record, in admission order, whose UID or "namespace/name" is
  // the key; pods_.end() when none.
  SlotIt FindSlotLocked(const std::string& uid_or_ns_name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  PodRecord* FindLocked(const std::string& uid_or_ns_name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Re-files the record in active_ after its phase or deleted flag changed.
  void UpdateActiveLocked(SlotIt it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the record of a deleted pod unless options say to keep it.
  void DropDeletedLocked(SlotIt it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const PodManagerOptions opts_;

  std::atomic<bool> sources_ready_{true};
  mutable absl::Mutex mu_;
  Node* node_ ABSL_GUARDED_BY(mu_);
  // Every pod added (deleted ones too when options keep them; a re-added
  // UID replaces its record), in admission order. A list, so that the indexes below stay
  // valid; lookups by UID and the active set cost O(1) and O(active), not
  // O(pods ever added).
  std::list<Slot> pods_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, SlotIt> by_uid_ ABSL_GUARDED_BY(mu_);
  // The active records (see Active in the .cc), by admission sequence.
  std::map<uint64_t, SlotIt> active_ ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_container_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace devmgr::node

#endif  // DEVMGR_NODE_POD_MANAGER_H_
