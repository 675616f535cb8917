#include "plugin/control.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::plugin {
namespace {

using ::testing::ElementsAre;
using Kind = ControlCommand::Kind;

ControlCommand MustParse(const std::string& line) {
  auto c = ParseControlLine(line);
  EXPECT_OK(c);
  EXPECT_TRUE(c.ok() && c->has_value());
  return c.ok() && c->has_value() ? **c : ControlCommand{};
}

TEST(ControlTest, ParsesCommands) {
  ControlCommand c = MustParse("health dev-1 Unhealthy");
  EXPECT_EQ(c.kind, Kind::kHealth);
  EXPECT_EQ(c.device.id, "dev-1");
  EXPECT_EQ(c.device.health, "Unhealthy");
  c = MustParse("add \"a b\\x00\" Healthy 0,1");
  EXPECT_EQ(c.kind, Kind::kAdd);
  EXPECT_EQ(c.device.id, std::string("a b\0", 4));
  EXPECT_TRUE(c.device.has_topology);
  EXPECT_THAT(c.device.numa_nodes, ElementsAre(0, 1));
  c = MustParse("add x Unhealthy none");
  EXPECT_TRUE(c.device.has_topology);
  EXPECT_TRUE(c.device.numa_nodes.empty());
  c = MustParse("add x");
  EXPECT_FALSE(c.device.has_topology);
  EXPECT_EQ(c.device.health, "Healthy");
  EXPECT_EQ(MustParse("remove x").kind, Kind::kRemove);
  EXPECT_EQ(MustParse("end-streams").kind, Kind::kEndStreams);
  EXPECT_EQ(MustParse("restart").kind, Kind::kRestart);
  EXPECT_EQ(MustParse("register").kind, Kind::kRegister);
  auto blank = ParseControlLine("   # comment");
  ASSERT_OK(blank);
  EXPECT_FALSE(blank->has_value());
}

TEST(ControlTest, RejectsBadLines) {
  EXPECT_EQ(ParseControlLine("helth a b").status().message(),
            "unknown control command 'helth' (did you mean 'health'?)");
  EXPECT_EQ(ParseControlLine("health a").status().message(), "usage: health ID HEALTH");
  EXPECT_EQ(ParseControlLine("add a Healthy 0,x").status().message(), "bad NUMA node list '0,x'");
  EXPECT_EQ(ParseControlLine("remove \"a").status().message(), "unterminated quoted word");
}

TEST(ControlTest, ReaderReturnsAppendedLinesOnly) {
  char tmpl[] = "/tmp/dmctlXXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/ctl";
  ControlFileReader r(path);
  EXPECT_TRUE(r.ReadNewLines().empty());
  {
    std::ofstream f(path, std::ios::app);
    f << "health a Unhealthy\nhealth b";
  }
  EXPECT_THAT(r.ReadNewLines(), ElementsAre("health a Unhealthy"));
  {
    std::ofstream f(path, std::ios::app);
    f << " Healthy\n";
  }
  EXPECT_THAT(r.ReadNewLines(), ElementsAre("health b Healthy"));
  EXPECT_TRUE(r.ReadNewLines().empty());
  {
    std::ofstream f(path, std::ios::trunc);  // truncated: read from the start
    f << "end-streams\n";
  }
  EXPECT_THAT(r.ReadNewLines(), ElementsAre("end-streams"));
  unlink(path.c_str());
  rmdir(tmpl);
}

}  // namespace
}  // namespace devmgr::plugin
