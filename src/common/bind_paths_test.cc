#include "common/bind_paths.h"

#include "gtest/gtest.h"

namespace devmgr {
namespace {

const std::vector<BindPath> kServeBinds = {
    {"/tmp/r/device-plugins", "/var/lib/kubelet/device-plugins"},
    {"/tmp/r/plugins_registry", "/var/lib/kubelet/plugins_registry"},
    {"/tmp/r/plugins", "/var/lib/kubelet/plugins"},
    {"/tmp/r/cdi", "/var/run/cdi"},
};

TEST(PathUnderTest, ComparesWholeComponents) {
  EXPECT_TRUE(PathUnder("/a/b", "/a/b"));
  EXPECT_TRUE(PathUnder("/a/b/c", "/a/b"));
  EXPECT_TRUE(PathUnder("/a/b/c", "/a/b/"));
  EXPECT_TRUE(PathUnder("/a", "/"));
  EXPECT_FALSE(PathUnder("/a/bc", "/a/b"));
  EXPECT_FALSE(PathUnder("/a", "/a/b"));
  EXPECT_FALSE(PathUnder("/a", ""));
}

TEST(HostPathOfTest, ADriversDraSocketUnderThePluginsDirIsDialledOnTheHost) {
  EXPECT_EQ(HostPathOf("/var/lib/kubelet/plugins/gpu.example.com/dra.sock", kServeBinds),
            "/tmp/r/plugins/gpu.example.com/dra.sock");
  // The registration socket as the endpoint (a driver that serves both on one).
  EXPECT_EQ(HostPathOf("/var/lib/kubelet/plugins_registry/gpu.example.com-reg.sock", kServeBinds),
            "/tmp/r/plugins_registry/gpu.example.com-reg.sock");
  EXPECT_EQ(HostPathOf("/var/lib/kubelet/plugins", kServeBinds), "/tmp/r/plugins");
}

TEST(HostPathOfTest, OtherPathsAreDialledAsGiven) {
  for (const std::string p :
       {"/tmp/r/plugins/x/dra.sock", "/var/lib/kubelet/pluginsX/dra.sock",
        "/var/lib/kubelet/dra.sock", "/run/x.sock", "relative/plugins/x.sock", ""}) {
    EXPECT_EQ(HostPathOf(p, kServeBinds), p);
  }
  EXPECT_EQ(HostPathOf("/var/lib/kubelet/plugins/x/dra.sock", {}),
            "/var/lib/kubelet/plugins/x/dra.sock");
}

TEST(HostPathOfTest, ThePathIsNormalisedFirst) {
  EXPECT_EQ(HostPathOf("/var/lib/kubelet//plugins/./x/dra.sock", kServeBinds),
            "/tmp/r/plugins/x/dra.sock");
  // ".." leaves the bound directory for its sibling, as in the namespace.
  EXPECT_EQ(HostPathOf("/var/lib/kubelet/plugins/../plugins_registry/x.sock", kServeBinds),
            "/tmp/r/plugins_registry/x.sock");
  EXPECT_EQ(HostPathOf("/var/lib/kubelet/plugins/../pods/x.sock", kServeBinds),
            "/var/lib/kubelet/plugins/../pods/x.sock");
}

TEST(HostPathOfTest, TheDeepestBindWins) {
  const std::vector<BindPath> binds = {
      {"/h/kubelet", "/var/lib/kubelet"}, {"/h/p/", "/var/lib/kubelet/plugins/"}, {"/", "/host"}};
  EXPECT_EQ(HostPathOf("/var/lib/kubelet/plugins/x/dra.sock", binds), "/h/p/x/dra.sock");
  EXPECT_EQ(HostPathOf("/var/lib/kubelet/pods/x.sock", binds), "/h/kubelet/pods/x.sock");
  EXPECT_EQ(HostPathOf("/host/run/x.sock", binds), "/run/x.sock");
  EXPECT_EQ(HostPathOf("/host", binds), "/");
}

}  // namespace
}  // namespace devmgr
