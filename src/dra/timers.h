// Timers: callbacks that run once after a delay, the seam through which the
// DRA plugin handler's 30 s ResourceSlice wiping delay is driven (RealTimers
// in production, ClockTimers on `devmgr run`'s virtual clock, ManualTimers
// in dra/timers_testutil.h for tests).
#ifndef DEVMGR_DRA_TIMERS_H_
#define DEVMGR_DRA_TIMERS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace devmgr::dra {

// Thread-safe. Callbacks run without any lock of the implementation held, so
// they may call After and Cancel.
class Timers {
 public:
  using Id = uint64_t;
  virtual ~Timers() = default;
  // Runs `fn` once, `delay` from now. Returns a non-zero id for Cancel.
  virtual Id After(absl::Duration delay, std::function<void()> fn) = 0;
  // Cancels a timer that has not started to run. Returns whether it did; false
  // when the timer ran, is running or is unknown.
  virtual bool Cancel(Id id) = 0;
};

// Wall-clock timers on one thread of their own, joined by the destructor
// (pending timers are dropped, a running callback is waited for). Their
// clock is the wall clock plus whatever Skip added: a DRA conformance
// session moves it past the kubelet's 30 s wipe instead of waiting for a
// delay the driver has no part in.
class RealTimers final : public Timers {
 public:
  RealTimers();
  ~RealTimers() override;
  RealTimers(const RealTimers&) = delete;
  RealTimers& operator=(const RealTimers&) = delete;

  Id After(absl::Duration delay, std::function<void()> fn) override ABSL_LOCKS_EXCLUDED(mu_);
  bool Cancel(Id id) override ABSL_LOCKS_EXCLUDED(mu_);

  // Waits until a timer is pending; false when none is after `timeout`.
  bool AwaitPending(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);
  // Moves the timers' clock `d` ahead, then waits until every timer that
  // fell due has run.
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
  // (due time on the timers' clock, id) -> callback, earliest first.
  std::map<std::pair<absl::Time, Id>, std::function<void()>> pending_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: started when the members above are ready
};

// Timers on a Clock that moves by itself only when told (a FakeClock: the
// virtual clock of `devmgr run`): due times are the clock's, and due
// callbacks run when the owner calls RunDue after moving the clock, on its
// thread, in due order, each without the lock held. Nothing runs otherwise.
class ClockTimers final : public Timers {
 public:
  // `clock` (not owned) must outlive the timers.
  explicit ClockTimers(const Clock* clock) : clock_(clock) {}
  ClockTimers(const ClockTimers&) = delete;
  ClockTimers& operator=(const ClockTimers&) = delete;

  Id After(absl::Duration delay, std::function<void()> fn) override ABSL_LOCKS_EXCLUDED(mu_);
  bool Cancel(Id id) override ABSL_LOCKS_EXCLUDED(mu_);
  // Runs every timer due by the clock's now (also those a callback adds
  // that are due already); returns how many ran.
  int RunDue() ABSL_LOCKS_EXCLUDED(mu_);
  // How many timers wait.
  size_t Pending() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const Clock* const clock_;
  absl::Mutex mu_;
  Id next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::pair<absl::Time, Id>, std::function<void()>> pending_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_TIMERS_H_
