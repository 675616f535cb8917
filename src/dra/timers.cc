#include "dra/timers.h"

#include <utility>

namespace devmgr::dra {

RealTimers::RealTimers() : thread_([this] { Loop(); }) {}

RealTimers::~RealTimers() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    changed_.SignalAll();
  }
  thread_.join();
}

Timers::Id RealTimers::After(absl::Duration delay, std::function<void()> fn) {
  absl::MutexLock l(&mu_);
  const Id id = next_id_++;
  pending_.emplace(std::make_pair(NowLocked() + delay, id), std::move(fn));
  changed_.SignalAll();
  return id;
}

bool RealTimers::Cancel(Id id) {
  absl::MutexLock l(&mu_);
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->first.second != id) continue;
    pending_.erase(it);
    changed_.SignalAll();
    return true;
  }
  return false;
}

bool RealTimers::AwaitPending(absl::Duration timeout) {
  absl::MutexLock l(&mu_);
  const absl::Time deadline = absl::Now() + timeout;
  while (pending_.empty() && !stopping_) {
    if (changed_.WaitWithDeadline(&mu_, deadline)) break;
  }
  return !pending_.empty();
}

void RealTimers::Skip(absl::Duration d) {
  absl::MutexLock l(&mu_);
  skipped_ += d;
  const absl::Time until = NowLocked();
  changed_.SignalAll();
  // Until the loop has run every timer due by then (it signals after each).
  while (!stopping_ &&
         (running_ || (!pending_.empty() && pending_.begin()->first.first <= until))) {
    changed_.Wait(&mu_);
  }
}

void RealTimers::Loop() {
  absl::MutexLock l(&mu_);
  while (!stopping_) {
    if (pending_.empty()) {
      changed_.Wait(&mu_);
      continue;
    }
    auto first = pending_.begin();
    const absl::Time now = NowLocked();
    if (now < first->first.first) {
      // The clock may be skipped meanwhile: any change wakes the wait.
      changed_.WaitWithTimeout(&mu_, first->first.first - now);
      continue;
    }
    std::function<void()> fn = std::move(first->second);
    pending_.erase(first);
    running_ = true;
    mu_.Unlock();
    fn();
    mu_.Lock();
    running_ = false;
    changed_.SignalAll();
  }
}

Timers::Id ClockTimers::After(absl::Duration delay, std::function<void()> fn) {
  const absl::Time due = clock_->Now() + delay;
  absl::MutexLock l(&mu_);
  const Id id = next_id_++;
  pending_.emplace(std::make_pair(due, id), std::move(fn));
  return id;
}

bool ClockTimers::Cancel(Id id) {
  absl::MutexLock l(&mu_);
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->first.second != id) continue;
    pending_.erase(it);
    return true;
  }
  return false;
}

int ClockTimers::RunDue() {
  int ran = 0;
  for (;;) {
    std::function<void()> fn;
    {
      const absl::Time now = clock_->Now();
      absl::MutexLock l(&mu_);
      if (pending_.empty() || pending_.begin()->first.first > now) return ran;
      fn = std::move(pending_.begin()->second);
      pending_.erase(pending_.begin());
    }
    fn();
    ++ran;
  }
}

size_t ClockTimers::Pending() {
  absl::MutexLock l(&mu_);
  return pending_.size();
}

}  // namespace devmgr::dra
