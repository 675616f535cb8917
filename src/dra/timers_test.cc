#include "dra/timers.h"

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

}  // namespace
}  // namespace devmgr::dra
