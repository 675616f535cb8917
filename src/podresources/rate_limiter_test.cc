#include "podresources/rate_limiter.h"

#include "gtest/gtest.h"

namespace devmgr::podresources {
namespace {

TEST(RateLimiterTest, BurstThenRefillAtQps) {
  RateLimiter l(kDefaultQps, kDefaultBurst);
  const absl::Time t0 = absl::UnixEpoch() + absl::Seconds(1000);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(l.AllowAt(t0)) << i;
  EXPECT_FALSE(l.AllowAt(t0));
  // 100 QPS: one token every 10 ms.
  EXPECT_FALSE(l.AllowAt(t0 + absl::Milliseconds(9)));
  EXPECT_TRUE(l.AllowAt(t0 + absl::Milliseconds(15)));
  EXPECT_FALSE(l.AllowAt(t0 + absl::Milliseconds(15)));
  EXPECT_TRUE(l.AllowAt(t0 + absl::Milliseconds(35)));
  EXPECT_TRUE(l.AllowAt(t0 + absl::Milliseconds(35)));
  EXPECT_FALSE(l.AllowAt(t0 + absl::Milliseconds(35)));
  // Never more than the burst, however long the pause.
  const absl::Time later = t0 + absl::Hours(1);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(l.AllowAt(later)) << i;
  EXPECT_FALSE(l.AllowAt(later));
}

TEST(RateLimiterTest, TimeGoingBackwardsAddsNothing) {
  RateLimiter l(1, 1);
  const absl::Time t0 = absl::UnixEpoch() + absl::Seconds(1000);
  EXPECT_TRUE(l.AllowAt(t0));
  EXPECT_FALSE(l.AllowAt(t0 - absl::Seconds(5)));
  EXPECT_FALSE(l.AllowAt(t0 + absl::Milliseconds(500)));
  EXPECT_TRUE(l.AllowAt(t0 + absl::Seconds(1)));
}

}  // namespace
}  // namespace devmgr::podresources
