#include "common/logging.h"

#include <unistd.h>

#include <regex>

#include "absl/time/clock.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace devmgr::log {
namespace {

class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override { SetConsoleOutput(false); }
  void TearDown() override {
    Init(0, Format::kText);
    SetConsoleOutput(true);
  }
  static std::string Last() {
    std::string l = RecentLines(1).at(0);
    if (!l.empty() && l.back() == '\n') l.pop_back();
    return l;
  }
};

TEST_F(LoggingTest, TextIsKlogsHeaderThenQuotedMessageAndPairs) {
  Init(0, Format::kText);
  DM_INFO("Got registration request from device plugin with resource",
          {"resourceName", "example.com/gpu"}, {"count", 3}, {"ok", true});
  const std::string line = Last();
  // I1121 06:14:00.123456    4242 logging_test.cc:NN] "msg" k="v" n=3
  const std::regex re(
      "I\\d{4} \\d{2}:\\d{2}:\\d{2}\\.\\d{6} +(\\d+) logging_test\\.cc:\\d+\\] \"Got "
      "registration request from device plugin with resource\" "
      "resourceName=\"example.com/gpu\" count=3 ok=true");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(line, m, re)) << line;
  EXPECT_EQ(std::stoi(m[1]), getpid());
  // The pid is right-aligned in 7 columns after one space.
  EXPECT_EQ(line.find(fmt::format(" {:>7} ", getpid())), 21u) << line;
}

TEST_F(LoggingTest, TextErrorsAndWarnings) {
  Init(0, Format::kText);
  DM_ERROR("boom \"x\"", "Failed", {"path", "/a b"});
  EXPECT_EQ(Last()[0], 'E');
  EXPECT_NE(Last().find("] \"Failed\" err=\"boom \\\"x\\\"\" path=\"/a b\""), std::string::npos)
      << Last();
  DM_WARN("Careful");
  EXPECT_EQ(Last()[0], 'W');
}

TEST_F(LoggingTest, VerbosityFiltersVInfo) {
  Init(1, Format::kText);
  EXPECT_TRUE(V(1));
  EXPECT_FALSE(V(2));
  DM_VINFO(1, "shown at v1");
  EXPECT_NE(Last().find("\"shown at v1\""), std::string::npos);
  DM_VINFO(2, "hidden at v1");
  EXPECT_EQ(Last().find("hidden"), std::string::npos);
}

TEST_F(LoggingTest, JsonIsKlogsJsonFormat) {
  Init(4, Format::kJson);
  const double before = absl::ToDoubleMilliseconds(absl::Now() - absl::UnixEpoch());
  DM_VINFO(4, "Making allocation request for device plugin", {"resourceName", "example.com/gpu"},
           {"count", 2}, {"ready", false});
  const double after = absl::ToDoubleMilliseconds(absl::Now() - absl::UnixEpoch());
  const std::string line = Last();
  auto j = nlohmann::ordered_json::parse(line);
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"ts", "caller", "msg", "v", "resourceName", "count",
                                            "ready"}))
      << line;
  // ts: milliseconds since the epoch, as a float (component-base's encoder).
  EXPECT_GE(j["ts"].get<double>(), before);
  EXPECT_LE(j["ts"].get<double>(), after);
  EXPECT_TRUE(
      std::regex_match(j["caller"].get<std::string>(), std::regex("common/logging_test\\.cc:\\d+")))
      << j["caller"];
  EXPECT_EQ(j["msg"], "Making allocation request for device plugin");
  EXPECT_EQ(j["v"], 4);
  EXPECT_EQ(j["resourceName"], "example.com/gpu");
  EXPECT_EQ(j["count"], 2);
  EXPECT_EQ(j["ready"], false);
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST_F(LoggingTest, JsonErrorsCarryErrAndNoV) {
  Init(0, Format::kJson);
  DM_ERROR("dial failed", "Failed to connect", {"socket", "/x.sock"});
  auto j = nlohmann::ordered_json::parse(Last());
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"ts", "caller", "msg", "err", "socket"}));
  EXPECT_EQ(j["err"], "dial failed");
}

}  // namespace
}  // namespace devmgr::log
