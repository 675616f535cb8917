#include "transport/plugin_dir_cleanup.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/status_testutil.h"
#include "common/temp_dir_testutil.h"
#include "gtest/gtest.h"
#include "transport/transport_testutil.h"

namespace devmgr::transport {
namespace {

namespace fs = std::filesystem;

using ::devmgr::testutil::MakeSocketFile;

class PluginDirCleanupTest : public testing::Test {
 protected:
  void SetUp() override {
    fs::create_directory(dir_.Join("sub"));
    std::ofstream(dir_.Join("sub/keep.txt")) << "x";
    std::ofstream(dir_.Join("stray")) << "x";
    std::ofstream(dir_.Join("DEPRECATION")) << "";
    std::ofstream(dir_.Join(kCheckpointFileName)) << "{}";
    MakeSocketFile(dir_.Join("kubelet.sock"));
    MakeSocketFile(dir_.Join("gpu.sock"));
    std::ofstream(outside_.Join("target")) << "precious";
    fs::create_symlink(outside_.Join("target"), dir_.Join("link"));
    fs::create_directory_symlink(outside_.path(), dir_.Join("dirlink"));
  }
  bool Exists(const std::string& name) {
    return fs::symlink_status(dir_.Join(name)).type() != fs::file_type::not_found;
  }
  testutil::TempDir dir_;
  testutil::TempDir outside_;
};

TEST_F(PluginDirCleanupTest, Profile132RemovesEveryNonDirectoryButTheCheckpoint) {
  ASSERT_OK(CleanupPluginDirectory(dir_.path(), dir_.Join(kCheckpointFileName), false));
  EXPECT_FALSE(Exists("stray"));
  EXPECT_FALSE(Exists("DEPRECATION"));
  EXPECT_FALSE(Exists("kubelet.sock"));
  EXPECT_FALSE(Exists("gpu.sock"));
  EXPECT_FALSE(Exists("link"));                      // the symlink itself...
  EXPECT_FALSE(Exists("dirlink"));                   // (Lstat: a symlink is not a directory)
  EXPECT_TRUE(fs::exists(outside_.Join("target")));  // ...never its target
  EXPECT_TRUE(Exists("sub"));
  EXPECT_TRUE(Exists("sub/keep.txt"));
  EXPECT_TRUE(Exists(kCheckpointFileName));
}

TEST_F(PluginDirCleanupTest, Profile133RemovesOnlySockets) {
  ASSERT_OK(CleanupPluginDirectory(dir_.path(), dir_.Join(kCheckpointFileName), true));
  EXPECT_TRUE(Exists("stray"));
  EXPECT_TRUE(Exists("DEPRECATION"));
  EXPECT_FALSE(Exists("kubelet.sock"));
  EXPECT_FALSE(Exists("gpu.sock"));
  EXPECT_TRUE(Exists("link"));
  EXPECT_TRUE(Exists("dirlink"));
  EXPECT_TRUE(Exists("sub/keep.txt"));
  EXPECT_TRUE(Exists(kCheckpointFileName));
  EXPECT_TRUE(fs::exists(outside_.Join("target")));
}

TEST_F(PluginDirCleanupTest, MissingDirectoryIsAnError) {
  const absl::Status s = CleanupPluginDirectory(dir_.Join("nope"), "", false);
  EXPECT_EQ(s.message(), "open " + dir_.Join("nope") + ": no such file or directory");
}

}  // namespace
}  // namespace devmgr::transport
