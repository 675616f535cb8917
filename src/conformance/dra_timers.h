// SkippableTimers: the timers of a DRA conformance session's kubelet (the
// DRA handler's 30 s ResourceSlice wipe). They run in real time, as the
// kubelet's do, and a check can move their clock ahead (Skip) instead of
// waiting for a delay the driver has no part in.
#ifndef DEVMGR_CONFORMANCE_DRA_TIMERS_H_
#define DEVMGR_CONFORMANCE_DRA_TIMERS_H_

#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dra/timers.h"

namespace devmgr::conformance {

// Thread-safe. Callbacks run on the timers' own thread without the lock
// held; the destructor drops pending timers and joins the thread.
class SkippableTimers final : public dra::Timers {
 public:
  SkippableTimers();
  ~SkippableTimers() override;
  SkippableTimers(const SkippableTimers&) = delete;
  SkippableTimers& operator=(const SkippableTimers&) = delete;

  Id After(absl::Duration delay, std::function<void()> fn) override ABSL_LOCKS_EXCLUDED(mu_);
  bool Cancel(Id id) override ABSL_LOCKS_EXCLUDED(mu_);

  // Waits until a timer is pending; false when none is after `timeout`.
  bool AwaitPending(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);
  // Moves the clock `d` ahead, then waits until every timer that fell due
  // has run.
  void Skip(absl::Duration d) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Time NowLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return absl::Now() + skipped_; }
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  absl::CondVar changed_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool running_ ABSL_GUARDED_BY(mu_) = false;  // a callback runs now
  Id next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::Duration skipped_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  // (due time on the skipped clock, id) -> callback, earliest first.
  std::map<std::pair<absl::Time, Id>, std::function<void()>> pending_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: started when the members above are ready
};

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_DRA_TIMERS_H_
