#include "conformance/dra_timers.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace devmgr::conformance {
namespace {

TEST(SkippableTimersTest, SkippingRunsWhatFellDueBeforeItReturns) {
  SkippableTimers t;
  std::atomic<int> ran{0};
  t.After(absl::Seconds(30), [&] { ran += 1; });
  t.After(absl::Hours(1), [&] { ran += 10; });
  ASSERT_TRUE(t.AwaitPending(absl::ZeroDuration()));
  t.Skip(absl::Seconds(30));
  EXPECT_EQ(ran.load(), 1);
  // The later one still waits.
  EXPECT_TRUE(t.AwaitPending(absl::ZeroDuration()));
}

TEST(SkippableTimersTest, TimersRunInRealTimeToo) {
  SkippableTimers t;
  absl::Notification done;
  t.After(absl::Milliseconds(10), [&] { done.Notify(); });
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST(SkippableTimersTest, ACancelledTimerDoesNotRun) {
  SkippableTimers t;
  std::atomic<bool> ran{false};
  const dra::Timers::Id id = t.After(absl::Seconds(30), [&] { ran = true; });
  EXPECT_TRUE(t.Cancel(id));
  EXPECT_FALSE(t.Cancel(id));
  EXPECT_FALSE(t.AwaitPending(absl::ZeroDuration()));
  t.Skip(absl::Minutes(1));
  EXPECT_FALSE(ran.load());
}

TEST(SkippableTimersTest, AwaitPendingWakesForATimerAddedMeanwhile) {
  SkippableTimers t;
  std::thread adder([&] { t.After(absl::Seconds(30), [] {}); });
  EXPECT_TRUE(t.AwaitPending(absl::Seconds(30)));
  adder.join();
}

TEST(SkippableTimersTest, PendingTimersAreDroppedAtDestruction) {
  std::atomic<bool> ran{false};
  {
    SkippableTimers t;
    t.After(absl::Seconds(30), [&] { ran = true; });
  }
  EXPECT_FALSE(ran.load());
}

}  // namespace
}  // namespace devmgr::conformance
