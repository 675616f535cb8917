#include "pod/quantity.h"

#include <string>

#include "common/status_testutil.h"
#include "gtest/gtest.h"

namespace devmgr::pod {
namespace {

Quantity Q(const std::string& s) {
  absl::StatusOr<Quantity> q = Quantity::Parse(s);
  EXPECT_OK(q) << s << ": " << q.status();
  return q.ok() ? *q : Quantity();
}

TEST(QuantityTest, ValueRoundsUp) {
  struct Case {
    const char* text;
    int64_t value;
    int64_t milli;
  } cases[] = {
      {"1", 1, 1000},
      {"2", 2, 2000},
      {"500m", 1, 500},
      {"0.5", 1, 500},
      {"1k", 1000, 1000000},
      {"1Ki", 1024, 1024000},
      {"1e3", 1000, 1000000},
      {"1E3", 1000, 1000000},
      {"1.5Ki", 1536, 1536000},
      {"1Mi", 1048576, 1048576000},
      {"0", 0, 0},
      {"1n", 1, 1},
      {"-1", -1, -1000},
      {"-500m", -1, -500},
      {"+3", 3, 3000},
      {"01", 1, 1000},
      {"1.", 1, 1000},
      {".5", 1, 500},
      {"1e-3", 1, 1},
      {"1e+3", 1000, 1000000},
      {"1.0000000001", 2, 1001},
      {"0.0000000001", 1, 1},
      {"12G", 12000000000, 12000000000000},
      {"1u", 1, 1},
      {"k", 0, 0},
      {".", 0, 0},
  };
  for (const Case& c : cases) {
    Quantity q = Q(c.text);
    EXPECT_EQ(q.Value(), c.value) << c.text;
    EXPECT_EQ(q.MilliValue(), c.milli) << c.text;
  }
}

TEST(QuantityTest, Invalid) {
  const char* format_wrong[] = {"",      "abc",  "1 ",  " 1",   "1.5.5",
                                "1e3.5", "1m5x", "1/2", "0x10", "1Kib"};
  for (const char* s : format_wrong) {
    absl::StatusOr<Quantity> q = Quantity::Parse(s);
    ASSERT_FALSE(q.ok()) << s;
    EXPECT_EQ(q.status().message(),
              "quantities must match the regular expression "
              "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        << s;
  }
  const char* bad_suffix[] = {"1K", "1e", "1kk", "1m5", "1ki", "--1", "1e-", "1Ti3"};
  for (const char* s : bad_suffix) {
    absl::StatusOr<Quantity> q = Quantity::Parse(s);
    ASSERT_FALSE(q.ok()) << s;
    EXPECT_EQ(q.status().message(), "unable to parse quantity's suffix") << s;
  }
}

TEST(QuantityTest, IsIntegerIsTheApiServersCheck) {
  EXPECT_TRUE(Q("1").IsInteger());
  EXPECT_TRUE(Q("1k").IsInteger());
  EXPECT_TRUE(Q("1000m").IsInteger());
  EXPECT_FALSE(Q("500m").IsInteger());
  EXPECT_FALSE(Q("0.5").IsInteger());
  EXPECT_FALSE(Q("1.001").IsInteger());
  // MilliValue rounds up first, so this counts as an integer (Go quirk).
  EXPECT_TRUE(Q("1.9999999").IsInteger());
}

TEST(QuantityTest, CanonicalString) {
  struct Case {
    const char* text;
    const char* canonical;
  } cases[] = {
      {"1", "1"},           {"2", "2"},        {"500m", "500m"},  {"0.5", "500m"},
      {"1000", "1k"},       {"1000m", "1"},    {"1Ki", "1Ki"},    {"1024Ki", "1Mi"},
      {"1e3", "1e3"},       {"1000e0", "1e3"}, {"1.5Ki", "1536"}, {"0", "0"},
      {"+1", "+1"},         {"01", "01"},      {"1.0", "1"},      {"2000000", "2M"},
      {"0.1Ki", "102400m"}, {"8Ki", "8Ki"},    {"1e21", "1e21"},  {"1000E", "1e21"},
      {"100", "100"},       {"1.5", "1500m"},  {"1e-3", "1e-3"},  {"-0.5", "-500m"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Q(c.text).String(), c.canonical) << c.text;
  }
}

TEST(QuantityTest, CmpAndEquality) {
  EXPECT_EQ(Q("1").Cmp(Q("1000m")), 0);
  EXPECT_EQ(Q("1k").Cmp(Q("1e3")), 0);
  EXPECT_EQ(Q("1").Cmp(Q("2")), -1);
  EXPECT_EQ(Q("1Ki").Cmp(Q("1k")), 1);
  EXPECT_EQ(Quantity::FromInt64(3).String(), "3");
}

TEST(QuantityTest, BinaryCappedAndHugeRejected) {
  EXPECT_EQ(Q("8Ei").Value(), INT64_MAX);
  absl::StatusOr<Quantity> q = Quantity::Parse("1e40");
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(Q("0e99999").Value(), 0);
  EXPECT_EQ(Q("1e-99999").Value(), 1);
}

}  // namespace
}  // namespace devmgr::pod
