#include "metrics/go_float.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace devmgr::metrics {
namespace {

TEST(FormatGoFloatTest, MatchesGoStrconvG) {
  EXPECT_EQ(FormatGoFloat(0), "0");
  EXPECT_EQ(FormatGoFloat(1), "1");
  EXPECT_EQ(FormatGoFloat(-1), "-1");
  EXPECT_EQ(FormatGoFloat(0.005), "0.005");
  EXPECT_EQ(FormatGoFloat(2.5), "2.5");
  EXPECT_EQ(FormatGoFloat(10), "10");
  EXPECT_EQ(FormatGoFloat(819.2), "819.2");
  EXPECT_EQ(FormatGoFloat(123456), "123456");
  EXPECT_EQ(FormatGoFloat(1e6), "1e+06");
  EXPECT_EQ(FormatGoFloat(1234567), "1.234567e+06");
  EXPECT_EQ(FormatGoFloat(0.0001), "0.0001");
  EXPECT_EQ(FormatGoFloat(0.00001), "1e-05");
  EXPECT_EQ(FormatGoFloat(0.000012345), "1.2345e-05");
  EXPECT_EQ(FormatGoFloat(1e21), "1e+21");
  EXPECT_EQ(FormatGoFloat(1.5e-300), "1.5e-300");
  EXPECT_EQ(FormatGoFloat(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatGoFloat(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatGoFloat(std::nan("")), "NaN");
}

TEST(FormatGoFloatTest, ExponentialBucketBoundsPrintShort) {
  double b = 0.05;
  const char* want[] = {"0.05", "0.1",  "0.2",  "0.4",   "0.8",   "1.6",   "3.2",  "6.4",
                        "12.8", "25.6", "51.2", "102.4", "204.8", "409.6", "819.2"};
  for (const char* w : want) {
    EXPECT_EQ(FormatGoFloat(b), w);
    b *= 2;
  }
}

}  // namespace
}  // namespace devmgr::metrics
