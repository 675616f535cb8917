// PodStatusSyncer: the slice of the kubelet's pod sync that writes device
// health into pod status (KEP-4680, gate ResourceHealthStatus). A pod's
// status is generated when it is admitted, whenever the device manager
// queues its UID (a ListAndWatch response changed the health of a device it
// holds), and at its periodic resync: the kubelet re-queues every pod
// worker at wait.Jitter(syncFrequency, 0.5) after each sync, i.e. 1 to 1.5
// minutes with the default --sync-frequency of 1m. Each generation runs the
// device manager's UpdateAllocatedResourcesStatus over the pod's regular
// containers, then the DRA manager's (dra_status), as the container manager
// calls them. The DRA manager's health updates (KEP-4680, DRAResourceHealth)
// come on a channel of their own (SendDraUpdate), which the worker takes as
// it takes the device manager's. See docs/resource-health.md.
#ifndef DEVMGR_NODE_POD_STATUS_SYNC_H_
#define DEVMGR_NODE_POD_STATUS_SYNC_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "manager/manager.h"
#include "pod/pod.h"

namespace devmgr::node {

// The kubelet's default --sync-frequency (KubeletConfiguration syncFrequency).
inline constexpr absl::Duration kDefaultSyncFrequency = absl::Minutes(1);
// pod_workers.go workerResyncIntervalJitterFactor.
inline constexpr double kResyncJitterFactor = 0.5;
// The DRA manager's update channel: make(chan resourceupdates.Update, 100).
inline constexpr size_t kDraUpdateChannelCapacity = 100;

struct PodStatusSyncOptions {
  // The ResourceHealthStatus gate; off, the syncer does nothing and no pod
  // has an allocatedResourcesStatus.
  bool enabled = false;
  // Periodic resyncs follow this clock (the node's). Must outlive the syncer.
  const Clock* clock = nullptr;
  absl::Duration sync_frequency = kDefaultSyncFrequency;
  // wait.Jitter's random factor, in [0, 1): the next periodic sync is due
  // sync_frequency * (1 + 0.5 * jitter()) after a sync. Empty: uniform
  // random, as in the kubelet.
  std::function<double()> jitter;
  // How often the worker looks for due periodic syncs (the kubelet's
  // syncTicker: one second). Real time.
  absl::Duration tick = absl::Seconds(1);
  // The DRA manager's UpdateAllocatedResourcesStatus for the pod (by UID),
  // run after the device manager's on the same statuses. Empty: none (no
  // DRA on the node). Called with no lock of the syncer held but one sync
  // at a time.
  std::function<void(const std::string& pod_uid, std::vector<manager::ContainerResourceStatus>*)>
      dra_status;
};

// Thread-safe.
class PodStatusSyncer {
 public:
  PodStatusSyncer(manager::Manager* manager, PodStatusSyncOptions opts);
  ~PodStatusSyncer();
  PodStatusSyncer(const PodStatusSyncer&) = delete;
  PodStatusSyncer& operator=(const PodStatusSyncer&) = delete;

  bool enabled() const { return opts_.enabled; }

  // Starts the worker: it takes the device manager's queued pods as they
  // come and runs due periodic syncs every tick. `active_pod_uids` (may be
  // empty) limits syncing to the pods the kubelet considers active.
  void Start(std::function<std::vector<std::string>()> active_pod_uids);
  // Joins the worker. Idempotent.
  void Stop();

  // Called after every state change a status reader may want to see.
  void SetChangeCallback(std::function<void()> cb);

  // An admitted pod: remembered, and its status generated now (its first
  // sync). A re-admitted pod (kubelet restart) keeps its previous status as
  // the starting point, as the kubelet starts from the API server's.
  void PodAdmitted(const pod::Pod& pod);
  // A deleted pod: forgotten, status and all (the kubelet's status manager
  // drops the statuses of pods that left its pod manager), so that the
  // syncer's memory follows the live pods. A sync of the pod under way
  // finishes without bringing it back. Unknown UIDs are ignored.
  void PodDeleted(const std::string& uid);
  // Syncs the pods named by one element of the update channel that are
  // known and active; others are skipped (logged at -v 3).
  void HandleUpdate(const std::vector<std::string>& pod_uids);
  // Syncs every pod whose periodic resync is due by the clock; returns how
  // many were synced.
  int SyncDuePods();
  // The DRA manager's update channel (HandleWatchResourcesStream): the pods
  // holding devices whose health a report changed. Never blocks: on a full
  // channel (kDraUpdateChannelCapacity elements) the element is dropped,
  // "DRA health update channel is full, discarding pod update notification"
  // logged, and false returned. The worker syncs the pods as it does the
  // device manager's (HandleUpdate). No-op (true) with the gate off.
  bool SendDraUpdate(std::vector<std::string> pod_uids) ABSL_LOCKS_EXCLUDED(mu_);
  // A pod lifecycle event (the PLEG's sync once the pod's containers
  // started): the pod is synced now when known and active.
  void SyncNow(const std::string& uid) ABSL_LOCKS_EXCLUDED(mu_);
  // DRA update elements waiting for the worker, for tests.
  size_t dra_queued() const ABSL_LOCKS_EXCLUDED(mu_);

  // pod UID -> its containers' statuses (regular containers, spec order), for
  // every pod synced at least once and not deleted since.
  std::map<std::string, std::vector<manager::ContainerResourceStatus>> Statuses() const;
  // Syncs so far (admissions, queued updates and periodic ones), for tests.
  int64_t sync_count() const;
  // The pods remembered (admitted, not deleted), for tests.
  size_t pod_count() const;

 private:
  struct PodState {
    std::vector<manager::ContainerResourceStatus> statuses;
    absl::Time next_sync = absl::InfiniteFuture();
    bool synced = false;
  };

  void Run();
  // Takes every element of the DRA channel (HandleUpdate each).
  void DrainDraUpdates() ABSL_LOCKS_EXCLUDED(mu_);
  bool IsActive(const std::string& uid) const ABSL_LOCKS_EXCLUDED(mu_);
  // generateAPIPodStatus' device-health part, then the resync re-queue.
  void SyncPod(const std::string& uid) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Duration NextResync();
  void Notify();

  manager::Manager* const manager_;
  const PodStatusSyncOptions opts_;
  const Clock* const clock_;

  mutable absl::Mutex mu_;
  std::map<std::string, PodState> pods_ ABSL_GUARDED_BY(mu_);
  std::function<std::vector<std::string>()> active_ ABSL_GUARDED_BY(mu_);
  std::function<void()> on_change_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int64_t syncs_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<std::vector<std::string>> dra_updates_ ABSL_GUARDED_BY(mu_);
  // Serialises SyncPod (the kubelet's pod worker: one sync at a time).
  absl::Mutex sync_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::thread worker_;
};

}  // namespace devmgr::node

#endif  // DEVMGR_NODE_POD_STATUS_SYNC_H_
