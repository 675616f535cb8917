#include "node/pod_status_sync.h"

#include <algorithm>
#include <random>
#include <utility>

#include "common/logging.h"

namespace devmgr::node {

PodStatusSyncer::PodStatusSyncer(manager::Manager* manager, PodStatusSyncOptions opts)
    : manager_(manager),
      opts_(std::move(opts)),
      clock_(opts_.clock != nullptr ? opts_.clock : &RealClock::Get()) {}

PodStatusSyncer::~PodStatusSyncer() { Stop(); }

void PodStatusSyncer::Start(std::function<std::vector<std::string>()> active_pod_uids) {
  {
    absl::MutexLock l(&mu_);
    active_ = std::move(active_pod_uids);
    stop_ = false;
  }
  if (!opts_.enabled || worker_.joinable()) return;
  worker_ = std::thread([this] { Run(); });
}

void PodStatusSyncer::Stop() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  manager_->Updates().Wake();
  if (worker_.joinable()) worker_.join();
}

void PodStatusSyncer::SetChangeCallback(std::function<void()> cb) {
  absl::MutexLock l(&mu_);
  on_change_ = std::move(cb);
}

void PodStatusSyncer::Run() {
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      if (stop_) return;
    }
    // The syncLoop: a queued update, or the one-second tick that starts
    // the pod workers whose resync is due.
    std::optional<std::vector<std::string>> update = manager_->Updates().Receive(opts_.tick);
    if (update) HandleUpdate(*update);
    DrainDraUpdates();
    SyncDuePods();
  }
}

bool PodStatusSyncer::SendDraUpdate(std::vector<std::string> pod_uids) {
  if (!opts_.enabled) return true;
  bool queued = false;
  {
    absl::MutexLock l(&mu_);
    if (dra_updates_.size() < kDraUpdateChannelCapacity) {
      dra_updates_.push_back(pod_uids);
      queued = true;
    }
  }
  if (!queued) {
    std::string pods = "[";
    for (const std::string& uid : pod_uids) pods += (pods.size() > 1 ? " " : "") + uid;
    DM_ERROR("", "DRA health update channel is full, discarding pod update notification",
             {"pods", pods + "]"});
    return false;
  }
  // The worker waits on the device manager's channel: woken, it takes this
  // one too (the container manager's fan-in of both). A wake that comes
  // just before the worker starts to wait is only seen at the next tick.
  manager_->Updates().Wake();
  return true;
}

void PodStatusSyncer::DrainDraUpdates() {
  for (;;) {
    std::vector<std::string> uids;
    {
      absl::MutexLock l(&mu_);
      if (dra_updates_.empty()) return;
      uids = std::move(dra_updates_.front());
      dra_updates_.pop_front();
    }
    HandleUpdate(uids);
  }
}

size_t PodStatusSyncer::dra_queued() const {
  absl::MutexLock l(&mu_);
  return dra_updates_.size();
}

void PodStatusSyncer::SyncNow(const std::string& uid) {
  if (!opts_.enabled) return;
  {
    absl::MutexLock l(&mu_);
    if (pods_.count(uid) == 0) return;
  }
  if (IsActive(uid)) SyncPod(uid);
}

void PodStatusSyncer::PodAdmitted(const pod::Pod& pod) {
  if (!opts_.enabled) return;
  {
    absl::MutexLock l(&mu_);
    PodState& st = pods_[pod.uid];
    if (!st.synced) {
      // Only regular containers have statuses this feature writes.
      st.statuses.clear();
      for (const pod::Container& c : pod.containers) {
        manager::ContainerResourceStatus cs;
        cs.name = c.name;
        st.statuses.push_back(std::move(cs));
      }
    }
  }
  SyncPod(pod.uid);
}

void PodStatusSyncer::PodDeleted(const std::string& uid) {
  if (!opts_.enabled) return;
  bool erased;
  {
    absl::MutexLock l(&mu_);
    erased = pods_.erase(uid) != 0;
  }
  if (erased) {
    DM_VINFO(4, "Forgetting the status of a deleted pod", {"podUID", uid});
    Notify();
  }
}

void PodStatusSyncer::HandleUpdate(const std::vector<std::string>& pod_uids) {
  if (!opts_.enabled) return;
  for (const std::string& uid : pod_uids) {
    bool known;
    {
      absl::MutexLock l(&mu_);
      known = pods_.count(uid) != 0;
    }
    if (!known || !IsActive(uid)) {
      DM_VINFO(3, "Pod for the device health update is not found", {"podUID", uid});
      continue;
    }
    DM_VINFO(3, "Resyncing pod for a device health update", {"podUID", uid});
    SyncPod(uid);
  }
}

int PodStatusSyncer::SyncDuePods() {
  if (!opts_.enabled) return 0;
  const absl::Time now = clock_->Now();
  std::vector<std::string> due;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [uid, st] : pods_) {
      if (st.next_sync <= now) due.push_back(uid);
    }
  }
  int n = 0;
  for (const std::string& uid : due) {
    if (!IsActive(uid)) {
      // A terminated pod is no longer synced; it keeps its last status
      // until it is deleted (PodDeleted), which may have happened meanwhile.
      absl::MutexLock l(&mu_);
      if (auto it = pods_.find(uid); it != pods_.end())
        it->second.next_sync = absl::InfiniteFuture();
      continue;
    }
    SyncPod(uid);
    ++n;
  }
  return n;
}

bool PodStatusSyncer::IsActive(const std::string& uid) const {
  std::function<std::vector<std::string>()> active;
  {
    absl::MutexLock l(&mu_);
    active = active_;
  }
  if (!active) return true;
  const std::vector<std::string> uids = active();
  return std::find(uids.begin(), uids.end(), uid) != uids.end();
}

absl::Duration PodStatusSyncer::NextResync() {
  double j;
  if (opts_.jitter) {
    j = opts_.jitter();
  } else {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    j = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  }
  j = std::clamp(j, 0.0, 1.0);
  return opts_.sync_frequency + opts_.sync_frequency * (kResyncJitterFactor * j);
}

void PodStatusSyncer::SyncPod(const std::string& uid) {
  bool changed;
  {
    absl::MutexLock serial(&sync_mu_);
    std::vector<manager::ContainerResourceStatus> statuses;
    {
      absl::MutexLock l(&mu_);
      auto it = pods_.find(uid);
      if (it == pods_.end()) return;
      statuses = it->second.statuses;
    }
    // generateAPIPodStatus with the gate on.
    manager_->UpdateAllocatedResourcesStatus(uid, &statuses);
    if (opts_.dra_status) opts_.dra_status(uid, &statuses);
    absl::MutexLock l(&mu_);
    auto it = pods_.find(uid);
    if (it == pods_.end()) return;  // deleted during the sync
    PodState& st = it->second;
    changed = !st.synced || st.statuses != statuses;
    st.statuses = std::move(statuses);
    st.synced = true;
    // completeWork: the next periodic sync.
    st.next_sync = clock_->Now() + NextResync();
    ++syncs_;
  }
  if (changed) Notify();
}

void PodStatusSyncer::Notify() {
  std::function<void()> cb;
  {
    absl::MutexLock l(&mu_);
    cb = on_change_;
  }
  if (cb) cb();
}

std::map<std::string, std::vector<manager::ContainerResourceStatus>> PodStatusSyncer::Statuses()
    const {
  absl::MutexLock l(&mu_);
  std::map<std::string, std::vector<manager::ContainerResourceStatus>> out;
  for (const auto& [uid, st] : pods_) {
    if (st.synced) out[uid] = st.statuses;
  }
  return out;
}

int64_t PodStatusSyncer::sync_count() const {
  absl::MutexLock l(&mu_);
  return syncs_;
}

size_t PodStatusSyncer::pod_count() const {
  absl::MutexLock l(&mu_);
  return pods_.size();
}

}  // namespace devmgr::node
