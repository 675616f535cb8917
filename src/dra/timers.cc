#include "dra/timers.h"

#include <utility>

namespace devmgr::dra {

RealTimers::RealTimers() : thread_([this] { Loop(); }) {}

RealTimers::~RealTimers() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    changed_.Signal();
  }
  thread_.join();
}

Timers::Id RealTimers::After(absl::Duration delay, std::function<void()> fn) {
  absl::MutexLock l(&mu_);
  const Id id = next_id_++;
  pending_.emplace(std::make_pair(absl::Now() + delay, id), std::move(fn));
  changed_.Signal();
  return id;
}

bool RealTimers::Cancel(Id id) {
  absl::MutexLock l(&mu_);
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->first.second != id) continue;
    pending_.erase(it);
    return true;
  }
  return false;
}

void RealTimers::Loop() {
  absl::MutexLock l(&mu_);
  while (!stopping_) {
    if (pending_.empty()) {
      changed_.Wait(&mu_);
      continue;
    }
    auto first = pending_.begin();
    if (absl::Now() < first->first.first) {
      changed_.WaitWithDeadline(&mu_, first->first.first);
      continue;
    }
    std::function<void()> fn = std::move(first->second);
    pending_.erase(first);
    mu_.Unlock();
    fn();
    mu_.Lock();
  }
}

}  // namespace devmgr::dra
