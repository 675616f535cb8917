#include "plugin/dir_watcher.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/status_testutil.h"
#include "gtest/gtest.h"

namespace devmgr::plugin {
namespace {

class DirWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/devmgr-watch-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_OK(w_.Init());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Events already queued (none are waited for: every file operation below
  // has queued its inotify events before it returned).
  std::vector<DirWatcher::Event> Pending() {
    bool woken = false;
    return w_.Wait(absl::ZeroDuration(), &woken);
  }
  // A unix socket bound at `path`, as the kubelet makes kubelet.sock.
  static void BindSocket(const std::string& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
    ::close(fd);
  }
  // The kubelet's checkpoint write: temp file created, written, closed,
  // renamed over the checkpoint.
  void WriteLikeTheKubelet() {
    std::ofstream(dir_ + "/.12345") << "data";
    std::filesystem::rename(dir_ + "/.12345", dir_ + "/kubelet_internal_checkpoint");
  }

  std::string dir_;
  DirWatcher w_;
};

TEST_F(DirWatcherTest, EntriesWatchSeesSocketsComeAndGoButNotWrites) {
  w_.Watch(dir_);
  std::ofstream(dir_ + "/existing") << "x";
  ASSERT_EQ(Pending().size(), 1u);  // its creation

  BindSocket(dir_ + "/kubelet.sock");
  std::vector<DirWatcher::Event> ev = Pending();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].name, "kubelet.sock");
  EXPECT_TRUE(ev[0].created);

  // Appending to a file there is no entry change.
  std::ofstream(dir_ + "/existing", std::ios::app) << "more";
  EXPECT_TRUE(Pending().empty());

  // A checkpoint write: the temp file's creation and the rename (out of one
  // name, into the other), nothing for the write and the close.
  WriteLikeTheKubelet();
  ev = Pending();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_TRUE(ev[0].created);
  EXPECT_EQ(ev[0].name, ".12345");
  EXPECT_TRUE(ev[1].deleted);
  EXPECT_TRUE(ev[2].created);
  EXPECT_EQ(ev[2].name, "kubelet_internal_checkpoint");

  ASSERT_EQ(::unlink((dir_ + "/kubelet.sock").c_str()), 0);
  ev = Pending();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_TRUE(ev[0].deleted);
  EXPECT_EQ(ev[0].name, "kubelet.sock");
}

TEST_F(DirWatcherTest, WritesWatchAlsoSeesAppends) {
  std::ofstream(dir_ + "/control") << "";
  w_.Watch(dir_, DirWatcher::Content::kWrites);
  std::ofstream(dir_ + "/control", std::ios::app) << "health g0 Unhealthy\n";
  const std::vector<DirWatcher::Event> ev = Pending();
  ASSERT_FALSE(ev.empty());
  for (const DirWatcher::Event& e : ev) {
    EXPECT_EQ(e.name, "control");
    EXPECT_FALSE(e.created);
    EXPECT_FALSE(e.deleted);
  }
}

// The same directory watched for entries (the device-plugin directory) and
// for writes (a control file in it): the wider watch wins, either order.
TEST_F(DirWatcherTest, WatchingADirectoryAgainWidensItsWatch) {
  std::ofstream(dir_ + "/control") << "";
  w_.Watch(dir_);
  w_.Watch(dir_, DirWatcher::Content::kWrites);
  w_.Watch(dir_);  // does not narrow it again
  std::ofstream(dir_ + "/control", std::ios::app) << "x\n";
  EXPECT_FALSE(Pending().empty());
}

TEST_F(DirWatcherTest, AMissingDirectoryIsReportedWhenItAppears) {
  const std::string sub = dir_ + "/later";
  w_.Watch(sub);
  EXPECT_TRUE(Pending().empty());
  ASSERT_TRUE(std::filesystem::create_directory(sub));
  const std::vector<DirWatcher::Event> ev = Pending();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].dir, sub);
  EXPECT_EQ(ev[0].name, "");
  EXPECT_TRUE(ev[0].created);
}

// More events than one read's buffer holds (300 long names, about 70 KB of
// events): one Wait reports them all, in order.
TEST_F(DirWatcherTest, ABurstLargerThanOneReadIsReportedWhole) {
  w_.Watch(dir_);
  constexpr int kFiles = 300;
  auto name = [](int i) { return std::string(200, 'f') + std::to_string(i); };
  for (int i = 0; i < kFiles; ++i) std::ofstream(dir_ + "/" + name(i)) << "";
  const std::vector<DirWatcher::Event> ev = Pending();
  ASSERT_EQ(ev.size(), static_cast<size_t>(kFiles));
  for (int i = 0; i < kFiles; ++i) {
    EXPECT_EQ(ev[i].name, name(i));
    EXPECT_TRUE(ev[i].created);
    EXPECT_FALSE(ev[i].overflow);
  }
}

}  // namespace
}  // namespace devmgr::plugin
