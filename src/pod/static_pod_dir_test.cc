#include "pod/static_pod_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/synchronization/notification.h"
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pod/uid.h"

namespace devmgr::pod {
namespace {

using ::testing::HasSubstr;
using Kind = ManifestChange::Kind;

std::string PodYaml(const std::string& name, int gpus = 1) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  containers:\n  - name: c\n    resources:\n      limits: "
         "{example.com/dev: " +
         std::to_string(gpus) + "}\n";
}

class StaticPodDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/devmgr-spd-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }
  std::string P(const std::string& name) { return dir_ + "/" + name; }
  std::string dir_;
};

TEST_F(StaticPodDirTest, AddChangeRemove) {
  Write("a.yaml", PodYaml("a"));
  Write("b.json", PodYaml("b"));  // YAML content is fine in a .json file
  Write(".hidden.yaml", PodYaml("h"));
  Write("notes.txt", PodYaml("t"));
  Write("a.yaml~", PodYaml("backup"));
  std::filesystem::create_directory(dir_ + "/sub.yaml");
  StaticPodDir watcher({.path = dir_});

  std::vector<ManifestChange> c = watcher.ScanNow();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].kind, Kind::kAdded);
  EXPECT_EQ(c[0].path, P("a.yaml"));
  ASSERT_EQ(c[0].pods.size(), 1u);
  EXPECT_EQ(c[0].pods[0].name, "a");
  EXPECT_EQ(c[0].pods[0].source, P("a.yaml"));
  EXPECT_EQ(c[1].path, P("b.json"));

  EXPECT_TRUE(watcher.ScanNow().empty());  // nothing changed

  Write("a.yaml", PodYaml("a", 2));
  std::filesystem::remove(P("b.json"));
  c = watcher.ScanNow();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].kind, Kind::kChanged);
  EXPECT_EQ(c[0].pods[0].containers[0].limits.at("example.com/dev"), 2);
  EXPECT_EQ(c[1].kind, Kind::kRemoved);
  ASSERT_EQ(c[1].pods.size(), 1u);
  EXPECT_EQ(c[1].pods[0].name, "b");
  EXPECT_EQ(watcher.CurrentPods().size(), 1u);
}

// Like the kubelet's hash UID: an edited pod is a new pod, a re-read or
// re-formatted one is the same pod, and metadata.uid wins.
TEST_F(StaticPodDirTest, UidsFollowThePodsContent) {
  Write("a.yaml", PodYaml("a"));
  Write("u.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: u, uid: my-uid}\nspec:\n"
        "  containers: [{name: c}]\n");
  StaticPodDir first({.path = dir_});
  std::vector<ManifestChange> c = first.ScanNow();
  ASSERT_EQ(c.size(), 2u);
  const std::string uid = c[0].pods[0].uid;
  EXPECT_EQ(uid.size(), 36u);
  EXPECT_EQ(uid[14], '5');  // a version-5 UUID
  EXPECT_NE(uid, DeterministicPodUid("default", "a"));
  EXPECT_EQ(c[1].pods[0].uid, "my-uid");

  StaticPodDir again({.path = dir_});  // devmgr restarted: the same UID
  EXPECT_EQ(again.ScanNow()[0].pods[0].uid, uid);

  // Comments and layout are not the pod.
  Write("a.yaml", "# a comment\n" + PodYaml("a"));
  EXPECT_EQ(first.ScanNow()[0].pods[0].uid, uid);

  Write("a.yaml", PodYaml("a", 2));
  c = first.ScanNow();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].kind, Kind::kChanged);
  EXPECT_NE(c[0].pods[0].uid, uid);
}

TEST_F(StaticPodDirTest, ParseErrorsAreReportedOnce) {
  Write("bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: [x\n");
  StaticPodDir watcher({.path = dir_});
  std::vector<ManifestChange> c = watcher.ScanNow();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].kind, Kind::kAdded);
  EXPECT_TRUE(c[0].pods.empty());
  EXPECT_THAT(std::string(c[0].error.message()), HasSubstr(P("bad.yaml") + ":4:1: "));
  EXPECT_TRUE(watcher.ScanNow().empty());
  EXPECT_TRUE(watcher.CurrentPods().empty());
  Write("bad.yaml", PodYaml("fixed"));
  c = watcher.ScanNow();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].kind, Kind::kChanged);
  EXPECT_OK(c[0].error);
  EXPECT_EQ(c[0].pods[0].name, "fixed");
}

TEST_F(StaticPodDirTest, MissingDirectoryAndSingleFile) {
  StaticPodDir missing({.path = dir_ + "/nope"});
  EXPECT_TRUE(missing.ScanNow().empty());
  Write("one.txt", PodYaml("one"));
  StaticPodDir single({.path = P("one.txt")});
  std::vector<ManifestChange> c = single.ScanNow();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].pods[0].name, "one");
}

TEST_F(StaticPodDirTest, AllNonDotFilesWhenExtensionsNotRequired) {
  Write("pod", PodYaml("p"));
  Write(".swp", "junk");
  StaticPodDir watcher({.path = dir_, .manifest_extensions_only = false});
  EXPECT_FALSE(watcher.IsManifestName(".x.yaml"));
  EXPECT_TRUE(watcher.IsManifestName("x"));
  std::vector<ManifestChange> c = watcher.ScanNow();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].path, P("pod"));
}

TEST_F(StaticPodDirTest, StartScansImmediatelyAndStops) {
  Write("a.yaml", PodYaml("a"));
  StaticPodDir watcher({.path = dir_, .period = absl::Hours(1)});
  absl::Notification first;
  std::vector<ManifestChange> seen;
  ASSERT_OK(watcher.Start([&](const std::vector<ManifestChange>& changes) {
    if (!first.HasBeenNotified()) {
      seen = changes;
      first.Notify();
    }
  }));
  ASSERT_TRUE(first.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(watcher.Start(nullptr).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].pods[0].name, "a");
  watcher.Stop();  // returns promptly despite the 1 h period
  watcher.Stop();
}

}  // namespace
}  // namespace devmgr::pod
