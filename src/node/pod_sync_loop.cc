#include "node/pod_sync_loop.h"

#include <utility>

namespace devmgr::node {

PodSyncLoop::PodSyncLoop(PodManager* pods, PodSyncLoopOptions opts) : pods_(pods), opts_(opts) {}

PodSyncLoop::~PodSyncLoop() { Stop(); }

void PodSyncLoop::Start() {
  {
    absl::MutexLock l(&mu_);
    if (!stopped_) return;
    stopped_ = false;
    if (opts_.timers != nullptr) {
      timers_ = opts_.timers;
    } else {
      own_timers_ = std::make_unique<dra::RealTimers>();
      timers_ = own_timers_.get();
    }
  }
  Schedule(0, opts_.retry_period, [this] { pods_->RetryFailedSyncs(); });
  Schedule(1, opts_.reconcile_period, [this] { pods_->ReconcileDra(); });
}

void PodSyncLoop::Stop() {
  std::unique_ptr<dra::RealTimers> own;
  {
    absl::MutexLock l(&mu_);
    if (stopped_) return;
    stopped_ = true;
    for (dra::Timers::Id& id : pending_) {
      if (id != 0) timers_->Cancel(id);
      id = 0;
    }
    own = std::move(own_timers_);
  }
  own.reset();  // waits for a running job
}

void PodSyncLoop::Schedule(int slot, absl::Duration period, std::function<void()> job) {
  absl::MutexLock l(&mu_);
  if (stopped_) return;
  pending_[slot] = timers_->After(period, [this, slot, period, job] {
    job();
    Schedule(slot, period, job);
  });
}

}  // namespace devmgr::node
