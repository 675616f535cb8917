// Issue 2: re-registration per version profile (kubernetes#121994) and a
// kubelet restart (directory cleanup, plugin re-registration, checkpoint
// placeholders), over real sockets.
#include <sys/stat.h>

#include <fstream>

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/test_env.h"

namespace devmgr::testutil {
namespace {

std::string Plugin(const std::string& socket, int devices, const std::string& prefix = "d") {
  std::string y = "resource: example.com/res\nsocket: " + socket + "\ndevices:\n";
  for (int i = 0; i < devices; ++i) y += "  - {id: " + prefix + std::to_string(i) + "}\n";
  return y;
}

bool Exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

class ReRegistrationTest : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir dir_;
  FakeClock clock_;
  ChangeSignal changes_;
};

bool Counts(node::Node& n, ChangeSignal& c, int64_t capacity, int64_t allocatable) {
  return c.WaitFor([&] {
    auto s = Find(n, "example.com/res");
    return s.capacity == capacity && s.allocatable == allocatable;
  });
}

TEST_P(ReRegistrationTest, NewPluginReplacesTheOldOneAndTheOldStreamsEnd) {
  const std::string version = GetParam();
  auto node = MakeNode(dir_.path(), &clock_, version, &changes_);
  ASSERT_OK(node->Start());
  auto p1 = MakePlugin(Plugin("p1.sock", 2), dir_.path());
  ASSERT_OK(p1->Start());
  ASSERT_TRUE(Counts(*node, changes_, 2, 2));

  // p2: same resource, new socket, same devices: still 2 (its first list
  // replaces p1's).
  auto p2 = MakePlugin(Plugin("p2.sock", 2), dir_.path());
  ASSERT_OK(p2->Start());
  ASSERT_TRUE(p2->WaitForRegistered(absl::Seconds(10)));
  ASSERT_TRUE(p2->WaitForCalls("ListAndWatch", 1, absl::Seconds(10)));
  ASSERT_TRUE(Counts(*node, changes_, 2, 2));
  EXPECT_EQ(Find(*node, "example.com/res").endpoint_socket, dir_.path() + "/p2.sock");

  // The old plugin goes away (a rolling update).
  p1->Stop();
  if (version == "1.37") {
    // Fixed upstream in 1.37 (PR #135437): only p1's own connection is dropped.
    ASSERT_TRUE(node->server()->RunningStreamCount() <= 1 ||
                changes_.WaitFor([&] { return node->server()->RunningStreamCount() == 1; }));
    ASSERT_TRUE(changes_.WaitFor([&] { return node->server()->RunningStreamCount() == 1; }));
    EXPECT_TRUE(Counts(*node, changes_, 2, 2));
    EXPECT_FALSE(Find(*node, "example.com/res").stopped);
    // p2 still feeds the resource.
    ASSERT_TRUE(p2->SetHealth("d0", "Unhealthy"));
    EXPECT_TRUE(Counts(*node, changes_, 2, 1));
  } else {
    // kubernetes#121994: the old stream's end disconnects the NEW client;
    // the resource reads 0 allocatable although p2 is alive.
    ASSERT_TRUE(Counts(*node, changes_, 2, 0));
    EXPECT_TRUE(Find(*node, "example.com/res").stopped);
    ASSERT_TRUE(p2->SetHealth("d0", "Unhealthy"));
    // Nothing p2 says reaches the kubelet any more.
    EXPECT_TRUE(Counts(*node, changes_, 2, 0));
  }
}

TEST_P(ReRegistrationTest, APluginWithFewerDevicesReplacesTheList) {
  auto node = MakeNode(dir_.path(), &clock_, GetParam(), &changes_);
  ASSERT_OK(node->Start());
  auto p1 = MakePlugin(Plugin("p1.sock", 2), dir_.path());
  ASSERT_OK(p1->Start());
  ASSERT_TRUE(Counts(*node, changes_, 2, 2));
  auto p3 = MakePlugin(Plugin("p3.sock", 1, "x"), dir_.path());
  ASSERT_OK(p3->Start());
  ASSERT_TRUE(Counts(*node, changes_, 1, 1));
}

INSTANTIATE_TEST_SUITE_P(Profiles, ReRegistrationTest,
                         ::testing::Values("1.30", "1.31", "1.32", "1.33", "1.34+", "1.36", "1.37"),
                         [](const auto& info) {
                           std::string n = "v" + info.param;
                           for (char& c : n) {
                             if (c == '.') c = '_';
                             if (c == '+') c = 'p';
                           }
                           return n;
                         });

class KubeletRestartTest : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir dir_;
  FakeClock clock_;
  ChangeSignal changes_;
};

TEST_P(KubeletRestartTest, DirectoryIsCleanedAndThePluginReRegisters) {
  const std::string version = GetParam();
  auto node = MakeNode(dir_.path(), &clock_, version, &changes_);
  ASSERT_OK(node->Start());
  auto p = MakePlugin(Plugin("res.sock", 3), dir_.path());
  ASSERT_OK(p->Start());
  ASSERT_TRUE(Counts(*node, changes_, 3, 3));
  // The checkpoint is written after the device update that the counts show
  // (it once lagged behind them on a loaded machine).
  ASSERT_TRUE(
      changes_.WaitFor([&] { return Exists(dir_.path() + "/kubelet_internal_checkpoint"); }));
  std::ofstream(dir_.path() + "/stray-file") << "x";
  ASSERT_EQ(mkdir((dir_.path() + "/subdir").c_str(), 0755), 0);

  node->Stop();
  node.reset();
  // The plugin is still running; its socket is still there.
  ASSERT_TRUE(Exists(dir_.path() + "/res.sock"));

  ChangeSignal changes2;
  auto node2 = MakeNode(dir_.path(), &clock_, version, &changes2);
  // Hold the restarted kubelet's view before the plugin can re-register:
  // the checkpoint's registered resource is a stopped placeholder at 0/0.
  ASSERT_OK(node2->Start());
  EXPECT_TRUE(Exists(dir_.path() + "/subdir"));
  EXPECT_TRUE(Exists(dir_.path() + "/kubelet_internal_checkpoint"));
  // 1.30-1.32 remove every non-directory entry; 1.33+ only sockets.
  EXPECT_EQ(Exists(dir_.path() + "/stray-file"), version == "1.33" || version == "1.34+");

  // The plugin notices kubelet.sock re-created and registers again.
  ASSERT_TRUE(p->WaitForRegistrations(2, absl::Seconds(15)));
  ASSERT_TRUE(changes2.WaitFor([&] {
    auto s = Find(*node2, "example.com/res");
    return s.capacity == 3 && s.allocatable == 3 && !s.stopped;
  }));
}

TEST_P(KubeletRestartTest, RegisteredResourcesComeBackAsStoppedPlaceholders) {
  const std::string version = GetParam();
  auto node = MakeNode(dir_.path(), &clock_, version, &changes_);
  ASSERT_OK(node->Start());
  auto p = MakePlugin(Plugin("res.sock", 2) + "registration: {reregister: false}\n", dir_.path());
  ASSERT_OK(p->Start());
  ASSERT_TRUE(Counts(*node, changes_, 2, 2));
  node->Stop();
  node.reset();
  p->Stop();

  auto node2 = MakeNode(dir_.path(), &clock_, version, &changes_);
  ASSERT_OK(node2->Start());
  auto s = Find(*node2, "example.com/res");
  ASSERT_EQ(s.resource_name, "example.com/res");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.capacity, 0);
  auto res = node2->UpdateNodeStatus();
  EXPECT_EQ(res.capacity["example.com/res"], 0);
  EXPECT_EQ(res.allocatable["example.com/res"], 0);
  // Nobody re-registers: after the grace period the resource is removed.
  clock_.Advance(absl::Minutes(5) + absl::Seconds(1));
  node2->UpdateNodeStatus();
  EXPECT_FALSE(Has(*node2, "example.com/res"));
}

INSTANTIATE_TEST_SUITE_P(Profiles, KubeletRestartTest,
                         ::testing::Values("1.30", "1.32", "1.33", "1.34+"), [](const auto& info) {
                           std::string n = "v" + info.param;
                           for (char& c : n) {
                             if (c == '.') c = '_';
                             if (c == '+') c = 'p';
                           }
                           return n;
                         });

}  // namespace
}  // namespace devmgr::testutil
