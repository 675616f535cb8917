// Clock: the source of time for grace periods, deadlines and timestamps, so
// that tests and scenarios can fast-forward it.
#ifndef DEVMGR_COMMON_CLOCK_H_
#define DEVMGR_COMMON_CLOCK_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace devmgr {

// Thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

// Wall-clock time. Thread-safe.
class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  // A process-wide instance; never destroyed.
  static Clock& Get();
};

// A clock that moves only when told to. Starts at the real time of its
// construction unless given a start. Thread-safe.
class FakeClock final : public Clock {
 public:
  FakeClock() : now_(absl::Now()) {}
  explicit FakeClock(absl::Time start) : now_(start) {}
  absl::Time Now() const override {
    absl::MutexLock l(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock l(&mu_);
    now_ += d;
  }
  void Set(absl::Time t) {
    absl::MutexLock l(&mu_);
    now_ = t;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr

#endif  // DEVMGR_COMMON_CLOCK_H_
