#include "dra/timers.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "dra/timers_testutil.h"
#include "gtest/gtest.h"

namespace devmgr::dra {
namespace {

TEST(RealTimersTest, RunsADueCallbackAndNotACancelledOne) {
  RealTimers timers;
  absl::Notification fired;
  bool cancelled_ran = false;
  const Timers::Id cancelled = timers.After(absl::Milliseconds(20), [&] { cancelled_ran = true; });
  EXPECT_TRUE(timers.Cancel(cancelled));
  const Timers::Id id = timers.After(absl::Milliseconds(10), [&] { fired.Notify(); });
  EXPECT_TRUE(fired.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_FALSE(timers.Cancel(id));
  EXPECT_FALSE(cancelled_ran);
}

TEST(RealTimersTest, DestructionDropsPendingTimers) {
  bool ran = false;
  {
    RealTimers timers;
    timers.After(absl::Hours(1), [&] { ran = true; });
  }
  EXPECT_FALSE(ran);
}

// Skip moves the clock: what fell due runs before it returns, the rest waits.
TEST(RealTimersTest, SkippingRunsWhatFellDueBeforeItReturns) {
  RealTimers t;
  std::atomic<int> ran{0};
  t.After(absl::Seconds(30), [&] { ran += 1; });
  t.After(absl::Hours(1), [&] { ran += 10; });
  ASSERT_TRUE(t.AwaitPending(absl::ZeroDuration()));
  t.Skip(absl::Seconds(30));
  EXPECT_EQ(ran.load(), 1);
  EXPECT_TRUE(t.AwaitPending(absl::ZeroDuration()));
}

TEST(RealTimersTest, ACancelledTimerDoesNotRunWhenSkippedPast) {
  RealTimers t;
  std::atomic<bool> ran{false};
  const Timers::Id id = t.After(absl::Seconds(30), [&] { ran = true; });
  EXPECT_TRUE(t.Cancel(id));
  EXPECT_FALSE(t.Cancel(id));
  EXPECT_FALSE(t.AwaitPending(absl::ZeroDuration()));
  t.Skip(absl::Minutes(1));
  EXPECT_FALSE(ran.load());
}

TEST(RealTimersTest, AwaitPendingWakesForATimerAddedMeanwhile) {
  RealTimers t;
  std::thread adder([&] { t.After(absl::Seconds(30), [] {}); });
  EXPECT_TRUE(t.AwaitPending(absl::Seconds(30)));
  adder.join();
}

TEST(ManualTimersTest, RunsDueTimersInOrderOnAdvance) {
  ManualTimers timers;
  std::vector<int> order;
  timers.After(absl::Seconds(30), [&] { order.push_back(30); });
  timers.After(absl::Seconds(10), [&] { order.push_back(10); });
  timers.Advance(absl::Seconds(29));
  EXPECT_EQ(order, std::vector<int>({10}));
  timers.Advance(absl::Seconds(1));
  EXPECT_EQ(order, std::vector<int>({10, 30}));
  EXPECT_EQ(timers.Pending(), 0u);
}

// On the virtual clock: nothing runs until the owner asks; then what the
// clock made due runs, in due order, also a timer a callback adds that is
// due already; a cancelled one never runs.
TEST(ClockTimersTest, RunDueRunsWhatTheClockMadeDue) {
  FakeClock clock;
  ClockTimers timers(&clock);
  std::vector<int> order;
  timers.After(absl::Seconds(30), [&] { order.push_back(30); });
  timers.After(absl::Seconds(10), [&] {
    order.push_back(10);
    timers.After(absl::ZeroDuration(), [&] { order.push_back(0); });
  });
  const Timers::Id cancelled = timers.After(absl::Seconds(5), [&] { order.push_back(5); });
  EXPECT_TRUE(timers.Cancel(cancelled));
  EXPECT_FALSE(timers.Cancel(cancelled));
  EXPECT_EQ(timers.RunDue(), 0);
  clock.Advance(absl::Seconds(29));
  EXPECT_TRUE(order.empty());  // moving the clock alone runs nothing
  EXPECT_EQ(timers.RunDue(), 2);
  EXPECT_EQ(order, std::vector<int>({10, 0}));
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(timers.Pending(), 1u);
  EXPECT_EQ(timers.RunDue(), 1);
  EXPECT_EQ(order, std::vector<int>({10, 0, 30}));
  EXPECT_EQ(timers.Pending(), 0u);
}

}  // namespace
}  // namespace devmgr::dra
