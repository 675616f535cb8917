#include "transport/go_path.h"

#include "gtest/gtest.h"

namespace devmgr::transport {
namespace {

TEST(GoPathTest, CleanMatchesGo) {
  EXPECT_EQ(GoPathClean(""), ".");
  EXPECT_EQ(GoPathClean("/"), "/");
  EXPECT_EQ(GoPathClean("//a//b/"), "/a/b");
  EXPECT_EQ(GoPathClean("/a/./b/../c"), "/a/c");
  EXPECT_EQ(GoPathClean("/.."), "/");
  EXPECT_EQ(GoPathClean("/../../x"), "/x");
  EXPECT_EQ(GoPathClean("a/../.."), "..");
  EXPECT_EQ(GoPathClean("../a/b"), "../a/b");
  EXPECT_EQ(GoPathClean("a/.."), ".");
}

TEST(GoPathTest, JoinLikeTheKubeletJoinsEndpoints) {
  const std::string dir = "/var/lib/kubelet/device-plugins/";
  EXPECT_EQ(GoPathJoin({dir, "gpu.sock"}), "/var/lib/kubelet/device-plugins/gpu.sock");
  EXPECT_EQ(GoPathJoin({dir, "../gpu.sock"}), "/var/lib/kubelet/gpu.sock");
  // An absolute endpoint is appended, not used as is.
  EXPECT_EQ(GoPathJoin({dir, "/tmp/gpu.sock"}), "/var/lib/kubelet/device-plugins/tmp/gpu.sock");
  EXPECT_EQ(GoPathJoin({dir, "sub/gpu.sock"}), "/var/lib/kubelet/device-plugins/sub/gpu.sock");
  EXPECT_EQ(GoPathJoin({dir, ""}), "/var/lib/kubelet/device-plugins");
  EXPECT_EQ(GoPathJoin({dir, "a=b.sock"}), "/var/lib/kubelet/device-plugins/a=b.sock");
  EXPECT_EQ(GoPathJoin({"", ""}), "");
  EXPECT_EQ(GoPathJoin({"", "kubelet.sock"}), "kubelet.sock");
}

TEST(GoPathTest, PlainSocketNames) {
  EXPECT_TRUE(IsPlainSocketName("gpu.sock"));
  EXPECT_TRUE(IsPlainSocketName("vendor.com_gpu=1.sock"));
  EXPECT_FALSE(IsPlainSocketName(""));
  EXPECT_FALSE(IsPlainSocketName("../gpu.sock"));
  EXPECT_FALSE(IsPlainSocketName("/tmp/gpu.sock"));
  EXPECT_FALSE(IsPlainSocketName("a/b.sock"));
  EXPECT_FALSE(IsPlainSocketName(".."));
}

}  // namespace
}  // namespace devmgr::transport
