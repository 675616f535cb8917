#include "process/plugin_process.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::node {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

std::string TempDir() {
  char tmpl[] = "/tmp/devmgr-pp-XXXXXX";
  return mkdtemp(tmpl);
}

TEST(PluginProcessTest, CapturesOutputAndExitCode) {
  PluginProcess p({.command = "echo hello; echo oops >&2; exit 3"});
  ASSERT_OK(p.Start());
  ASSERT_TRUE(p.WaitExit(absl::Seconds(10)));
  p.Stop();
  EXPECT_EQ(p.exit_code(), 3);
  EXPECT_THAT(p.OutputTail(10), Contains("hello"));
  EXPECT_THAT(p.OutputTail(10), Contains("oops"));
}

// `exec` cannot be put in front of these: `exec A=1 cmd` and `exec exec cmd`
// look for programs named "A=1" and "exec" (exit 127).
TEST(PluginProcessTest, RunsACommandThatStartsWithAnAssignmentOrExec) {
  PluginProcess assign({.command = "GREETING=hello sh -c 'echo $GREETING-there'"});
  ASSERT_OK(assign.Start());
  ASSERT_TRUE(assign.WaitExit(absl::Seconds(10)));
  EXPECT_EQ(assign.exit_code(), 0);
  EXPECT_THAT(assign.OutputTail(10), Contains("hello-there"));

  PluginProcess exec({.command = "  exec echo direct"});
  ASSERT_OK(exec.Start());
  ASSERT_TRUE(exec.WaitExit(absl::Seconds(10)));
  EXPECT_EQ(exec.exit_code(), 0);
  EXPECT_THAT(exec.OutputTail(10), Contains("direct"));
}

TEST(PluginProcessTest, ASimpleCommandIsExecedSoItsPidIsThePlugins) {
  PluginProcess p({.command = "sleep 100"});
  ASSERT_OK(p.Start());
  // The shell replaces itself with sleep; without exec it would stay "sh".
  const std::string comm_path = "/proc/" + std::to_string(p.pid()) + "/comm";
  std::string name;
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (name != "sleep" && absl::Now() < deadline) {
    std::ifstream comm(comm_path);
    std::getline(comm, name);
    if (name != "sleep") absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(name, "sleep");
  p.Stop(absl::Seconds(5));
}

TEST(PluginProcessTest, StopTerminatesAStoppedProcessAndItsChildren) {
  PluginProcess p({.command = "sleep 100 & sleep 100"});
  ASSERT_OK(p.Start());
  p.Signal(SIGSTOP);
  p.Stop(absl::Seconds(5));
  EXPECT_FALSE(p.running());
  EXPECT_EQ(p.exit_code(), 128 + SIGTERM);
}

TEST(PluginProcessTest, ReportsABadWorkingDirectory) {
  PluginProcess p({.command = "true", .working_dir = "/nonexistent/dir"});
  absl::Status s = p.Start();
  EXPECT_THAT(std::string(s.message()), HasSubstr("chdir /nonexistent/dir"));
}

TEST(PluginProcessTest, TheEnvironmentIsDevmgrsWithTheOverrides) {
  setenv("DEVMGR_PP_INHERITED", "kept", 1);
  setenv("DEVMGR_PP_REPLACED", "old", 1);
  PluginProcess p({.command = "echo \"$DEVMGR_PP_INHERITED $DEVMGR_PP_REPLACED $DEVMGR_PP_ADDED\"",
                   .env = {{"DEVMGR_PP_REPLACED", "new"}, {"DEVMGR_PP_ADDED", "added"}}});
  ASSERT_OK(p.Start());
  ASSERT_TRUE(p.WaitExit(absl::Seconds(10)));
  EXPECT_THAT(p.OutputTail(10), Contains("kept new added"));
  unsetenv("DEVMGR_PP_INHERITED");
  unsetenv("DEVMGR_PP_REPLACED");
}

// The child of a threaded process only makes system calls before exec: with
// another thread allocating all the time, every start still returns (a child
// that allocated could wait forever for a lock held at the fork, and Start
// with it).
TEST(PluginProcessTest, StartsWhileAnotherThreadAllocates) {
  const bool private_mount = CheckPrivateMountSupported().ok();
  const std::string dir = TempDir();
  std::atomic<bool> stop{false};
  std::thread churn([&stop] {
    while (!stop.load()) {
      std::vector<std::string> v;
      for (int i = 0; i < 64; ++i) v.emplace_back(100 + i, 'x');
    }
  });
  for (int i = 0; i < 20; ++i) {
    PluginProcess p({.command = "true",
                     .env = {{"N", std::to_string(i)}},
                     .private_mount = private_mount,
                     .plugin_dir = dir});
    ASSERT_OK(p.Start());
    ASSERT_TRUE(p.WaitExit(absl::Seconds(30)));
    EXPECT_EQ(p.exit_code(), 0);
  }
  stop = true;
  churn.join();
  std::system(("rm -rf " + dir).c_str());
}

TEST(PluginProcessTest, AFailedMountIsReportedWithItsPathAndError) {
  if (!CheckPrivateMountSupported().ok()) GTEST_SKIP() << "no mount namespaces here";
  PluginProcess p({.command = "true", .private_mount = true, .plugin_dir = "/nonexistent/dp"});
  absl::Status s = p.Start();
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("private mount namespace: bind-mount /nonexistent/dp over "
                        "/var/lib/kubelet/device-plugins: No such file or directory"));
}

TEST(PluginProcessTest, PrivateMountShowsTheEmulatorDirAtTheKubeletPath) {
  if (!CheckPrivateMountSupported().ok()) GTEST_SKIP() << "no mount namespaces here";
  struct stat st;
  const bool host_had_kubelet = stat(kKubeletRoot, &st) == 0;
  const std::string dir = TempDir();
  std::ofstream(dir + "/marker") << "x";
  PluginProcess p({.command = "ls /var/lib/kubelet/device-plugins; touch "
                              "/var/lib/kubelet/device-plugins/from-plugin",
                   .private_mount = true,
                   .plugin_dir = dir});
  ASSERT_OK(p.Start());
  ASSERT_TRUE(p.WaitExit(absl::Seconds(10)));
  p.Stop();
  EXPECT_EQ(p.exit_code(), 0) << ::testing::PrintToString(p.OutputTail(10));
  EXPECT_THAT(p.OutputTail(10), Contains("marker"));
  EXPECT_EQ(stat((dir + "/from-plugin").c_str(), &st), 0);
  // The host's /var/lib/kubelet is neither created nor written.
  EXPECT_EQ(stat(kKubeletRoot, &st) == 0, host_had_kubelet);
  EXPECT_NE(stat("/var/lib/kubelet/device-plugins/from-plugin", &st), 0);
  std::system(("rm -rf " + dir).c_str());
}

// A DRA driver with the kubelet's paths hard-coded: its DRA socket under
// /var/lib/kubelet/plugins and its CDI specs in /var/run/cdi and /etc/cdi
// land in devmgr's directories, at the host paths PrivateMountBinds maps
// them to. Where the host lacks /var/lib/kubelet, /run/cdi or /etc/cdi, the
// parent is rebuilt inside the namespace (its entries still there) and the
// host's is left as it was.
TEST(PluginProcessTest, PrivateMountShowsThePluginsAndCdiDirsAtTheKubeletPaths) {
  if (!CheckPrivateMountSupported().ok()) GTEST_SKIP() << "no mount namespaces here";
  struct stat st;
  const auto exists = [&st](const std::string& p) { return stat(p.c_str(), &st) == 0; };
  const bool had_kubelet = exists(kKubeletRoot);
  const bool had_run_cdi = exists(kCdiDynamicPath);
  const bool had_etc_cdi = exists(kCdiStaticPath);
  const std::string root = TempDir();
  const PluginProcessOptions opts = {
      .command =
          "set -e; mkdir -p /var/lib/kubelet/plugins/drv.example.com; "
          "touch /var/lib/kubelet/plugins/drv.example.com/dra.sock; "
          "echo '{}' > /var/run/cdi/drv.example.com-a.json; "
          "echo '{}' > /etc/cdi/drv.example.com-b.json; "
          "test -r /etc/passwd; test -d /run; echo ok",
      .private_mount = true,
      .plugin_dir = root,  // the device-plugin dir, unused here
      .registry_dir = root + "/plugins_registry",
      .plugins_dir = root + "/plugins",
      .cdi_dir = root + "/cdi"};
  for (const std::string& d : {opts.registry_dir, opts.plugins_dir, opts.cdi_dir}) {
    ASSERT_EQ(mkdir(d.c_str(), 0755), 0) << d;
  }
  PluginProcess p(opts);
  ASSERT_OK(p.Start());
  ASSERT_TRUE(p.WaitExit(absl::Seconds(10)));
  p.Stop();
  EXPECT_EQ(p.exit_code(), 0) << ::testing::PrintToString(p.OutputTail(10));
  EXPECT_THAT(p.OutputTail(10), Contains("ok"));
  const std::vector<BindPath> binds = PrivateMountBinds(opts);
  const std::string endpoint = "/var/lib/kubelet/plugins/drv.example.com/dra.sock";
  EXPECT_EQ(HostPathOf(endpoint, binds), root + "/plugins/drv.example.com/dra.sock");
  EXPECT_TRUE(exists(HostPathOf(endpoint, binds)));
  EXPECT_TRUE(exists(root + "/cdi/drv.example.com-a.json"));
  EXPECT_TRUE(exists(root + "/cdi/drv.example.com-b.json"));
  // The host's directories are as they were.
  EXPECT_EQ(exists(kKubeletRoot), had_kubelet);
  EXPECT_EQ(exists(kCdiDynamicPath), had_run_cdi);
  EXPECT_EQ(exists(kCdiStaticPath), had_etc_cdi);
  EXPECT_FALSE(exists(endpoint));
  EXPECT_FALSE(exists(std::string(kCdiDynamicPath) + "/drv.example.com-a.json"));
  EXPECT_FALSE(exists(std::string(kCdiStaticPath) + "/drv.example.com-b.json"));
  std::system(("rm -rf " + root).c_str());
}

TEST(PluginProcessTest, PrivateMountBindsListsWhatIsBoundWhere) {
  PluginProcessOptions o{.plugin_dir = "/r/dp", .plugins_dir = "/r/plugins"};
  EXPECT_TRUE(PrivateMountBinds(o).empty());  // no private mount, nothing bound
  o.private_mount = true;
  o.extra_binds = {{"/r/tmp", "/tmp"}};
  std::vector<std::string> listed;
  for (const BindPath& b : PrivateMountBinds(o)) listed.push_back(b.host + " " + b.inside);
  EXPECT_THAT(listed, ::testing::ElementsAre("/r/dp /var/lib/kubelet/device-plugins",
                                             "/r/plugins /var/lib/kubelet/plugins", "/r/tmp /tmp"));
  o.cdi_dir = "/r/cdi";
  EXPECT_EQ(HostPathOf("/etc/cdi/x.json", PrivateMountBinds(o)), "/r/cdi/x.json");
  EXPECT_EQ(HostPathOf("/var/run/cdi/x.json", PrivateMountBinds(o)), "/r/cdi/x.json");
}

// A bind over the directory that holds the plugin (a clone under /tmp, run
// with a private /tmp) must not hide the program: it is opened before the
// mounts. Plain and quoted paths, a space in the path, arguments kept.
TEST(PluginProcessTest, PrivateMountRunsAProgramUnderABoundOverDirectory) {
  if (!CheckPrivateMountSupported().ok()) GTEST_SKIP() << "no mount namespaces here";
  const std::string host = TempDir();
  const std::string hidden = host + "/clone with space";
  const std::string plain = host + "/clone";
  for (const std::string& d : {hidden, plain}) {
    ASSERT_EQ(mkdir(d.c_str(), 0755), 0);
    std::ofstream(d + "/plugin.sh") << "#!/bin/sh\necho \"ran $1 $2\"\n";
    ASSERT_EQ(chmod((d + "/plugin.sh").c_str(), 0755), 0);
  }
  const std::string private_tmp = TempDir();
  std::ofstream(private_tmp + "/private-marker") << "x";
  const std::string plugin_dir = TempDir();
  for (const std::string& command :
       {"exec '" + hidden + "/plugin.sh' 'a b' c", plain + "/plugin.sh x y"}) {
    PluginProcess p({.command = command,
                     .private_mount = true,
                     .plugin_dir = plugin_dir,
                     .extra_binds = {{private_tmp, host}}});
    ASSERT_OK(p.Start());
    ASSERT_TRUE(p.WaitExit(absl::Seconds(10)));
    p.Stop();
    EXPECT_EQ(p.exit_code(), 0) << command << ": " << ::testing::PrintToString(p.OutputTail(10));
    EXPECT_THAT(p.OutputTail(10),
                Contains(absl::StrContains(command, "'a b'") ? "ran a b c" : "ran x y"));
  }
  // The bind was in place while the plugin ran: it saw the private directory.
  PluginProcess look({.command = "ls " + host,
                      .private_mount = true,
                      .plugin_dir = plugin_dir,
                      .extra_binds = {{private_tmp, host}}});
  ASSERT_OK(look.Start());
  ASSERT_TRUE(look.WaitExit(absl::Seconds(10)));
  EXPECT_THAT(look.OutputTail(10), Contains("private-marker"));
  for (const std::string& d : {host, private_tmp, plugin_dir}) {
    std::system(("rm -rf '" + d + "'").c_str());
  }
}

}  // namespace
}  // namespace devmgr::node
