// PodSyncLoop: the two periodic jobs of the kubelet around pods' DRA claims,
// on timers (dra::Timers): the pod worker's retry of a failed sync after its
// back-off (PodManager::RetryFailedSyncs; the kubelet's backOffPeriod is
// 10 s) and the DRA manager's reconcile loop (PodManager::ReconcileDra,
// every 60 s), which unprepares the claims of pods that are gone.
#ifndef DEVMGR_NODE_POD_SYNC_LOOP_H_
#define DEVMGR_NODE_POD_SYNC_LOOP_H_

#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dra/timers.h"
#include "node/pod_manager.h"

namespace devmgr::node {

struct PodSyncLoopOptions {
  absl::Duration retry_period = absl::Seconds(10);
  absl::Duration reconcile_period = absl::Seconds(60);
  // nullptr: timers of its own (wall clock). An injected one must outlive
  // the loop.
  dra::Timers* timers = nullptr;
};

// Thread-safe. Stop is idempotent and run by the destructor; `pods` must
// outlive the loop.
class PodSyncLoop {
 public:
  PodSyncLoop(PodManager* pods, PodSyncLoopOptions opts);
  ~PodSyncLoop();
  PodSyncLoop(const PodSyncLoop&) = delete;
  PodSyncLoop& operator=(const PodSyncLoop&) = delete;

  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Cancels what is pending and waits for a running job.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Runs `job` after `period`, then again every `period` until Stop; its
  // pending timer is pending_[slot].
  void Schedule(int slot, absl::Duration period, std::function<void()> job)
      ABSL_LOCKS_EXCLUDED(mu_);

  PodManager* const pods_;
  const PodSyncLoopOptions opts_;
  absl::Mutex mu_;
  // Made by Start when none were injected; dropped (joined) by Stop.
  std::unique_ptr<dra::RealTimers> own_timers_ ABSL_GUARDED_BY(mu_);
  dra::Timers* timers_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool stopped_ ABSL_GUARDED_BY(mu_) = true;
  // The pending timer of each job (index 0: retry, 1: reconcile).
  dra::Timers::Id pending_[2] ABSL_GUARDED_BY(mu_) = {0, 0};
};

}  // namespace devmgr::node

#endif  // DEVMGR_NODE_POD_SYNC_LOOP_H_
