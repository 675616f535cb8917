// Timers: callbacks that run once after a delay, the seam through which the
// DRA plugin handler's 30 s ResourceSlice wiping delay is driven (RealTimers
// in production, ManualTimers in dra/timers_testutil.h for tests).
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
// (pending timers are dropped, a running callback is waited for).
class RealTimers final : public Timers {
 public:
  RealTimers();
  ~RealTimers() override;
  RealTimers(const RealTimers&) = delete;
  RealTimers& operator=(const RealTimers&) = delete;

  Id After(absl::Duration delay, std::function<void()> fn) override;
  bool Cancel(Id id) override;

 private:
  void Loop();

  absl::Mutex mu_;
  absl::CondVar changed_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Id next_id_ ABSL_GUARDED_BY(mu_) = 1;
  // (due time, id) -> callback, earliest first.
  std::map<std::pair<absl::Time, Id>, std::function<void()>> pending_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_TIMERS_H_
