// ManualTimers: a Timers whose time moves only when a test advances it; due
// callbacks run on the advancing thread. Header-only; for *_test.cc files.
#ifndef DEVMGR_DRA_TIMERS_TESTUTIL_H_
#define DEVMGR_DRA_TIMERS_TESTUTIL_H_

#include <functional>
#include <map>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dra/timers.h"

namespace devmgr::dra {

// Thread-safe.
class ManualTimers final : public Timers {
 public:
  Id After(absl::Duration delay, std::function<void()> fn) override {
    absl::MutexLock l(&mu_);
    const Id id = next_id_++;
    pending_.emplace(std::make_pair(now_ + delay, id), std::move(fn));
    return id;
  }
  bool Cancel(Id id) override {
    absl::MutexLock l(&mu_);
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->first.second != id) continue;
      pending_.erase(it);
      return true;
    }
    return false;
  }
  // Moves time forward by `d`, running every timer that falls due, in order,
  // each without the lock held.
  void Advance(absl::Duration d) {
    mu_.Lock();
    const absl::Time until = now_ + d;
    while (!pending_.empty() && pending_.begin()->first.first <= until) {
      auto first = pending_.begin();
      now_ = first->first.first;
      std::function<void()> fn = std::move(first->second);
      pending_.erase(first);
      mu_.Unlock();
      fn();
      mu_.Lock();
    }
    now_ = until;
    mu_.Unlock();
  }
  // How many timers wait.
  size_t Pending() {
    absl::MutexLock l(&mu_);
    return pending_.size();
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_) = absl::UnixEpoch();
  Id next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::pair<absl::Time, Id>, std::function<void()>> pending_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_TIMERS_TESTUTIL_H_
