// Start/Stop and the checkpoint: when it is written, what it holds, and how
// Start restores from it (devicemanager manager.go; docs/checkpoint_format.md).
#include <sys/stat.h>

#include <filesystem>

#include "checkpoint/checkpoint.h"
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/manager_testutil.h"

namespace devmgr::manager {
namespace {

using testing::Ctr;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::MakePod;
using ::testing::UnorderedElementsAre;

constexpr char kFile[] = "kubelet_internal_checkpoint";

class CheckpointIoTest : public testing::ManagerFixture {
 protected:
  checkpoint::Checkpoint ReadBack() {
    auto cp = checkpoint::DecodeV2(dir_.Read(kFile));
    EXPECT_OK(cp);
    EXPECT_TRUE(checkpoint::ChecksumMatches(*cp));
    return *cp;
  }
  // A started manager on `plugin_dir` (fsync off) with one healthy
  // vendor.com/gpu device, and pod "p" active.
  std::unique_ptr<ManagerImpl> StartWithOneGpu(const std::string& plugin_dir) {
    ManagerOptions o;
    o.plugin_dir = plugin_dir;
    o.clock = &clock_;
    o.fsync = false;
    auto m = std::make_unique<ManagerImpl>(o);
    EXPECT_OK(m->Start(StartOpts()));
    SetActive({"p"});
    gpu_ = std::make_shared<FakePluginClient>();
    EXPECT_OK(m->PluginConnected("vendor.com/gpu", gpu_));
    m->PluginListAndWatchReceiver("vendor.com/gpu", gpu_.get(), testing::HealthyDevices(1));
    return m;
  }
  std::shared_ptr<FakePluginClient> gpu_;
};

TEST_F(CheckpointIoTest, WrittenAfterEveryListAndWatchResponse) {
  auto m = NewImpl();
  auto c = Connect(*m, "vendor.com/gpu");
  EXPECT_FALSE(dir_.Exists(kFile));  // PluginConnected does not write
  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(),
                                testing::Devices({{"a"}, {"b", "Unhealthy"}}));
  checkpoint::Checkpoint cp = ReadBack();
  EXPECT_FALSE(cp.data.pod_device_entries.has_value());
  ASSERT_TRUE(cp.data.registered_devices.has_value());
  ASSERT_EQ(cp.data.registered_devices->count("vendor.com/gpu"), 1u);
  EXPECT_THAT(*cp.data.registered_devices->at("vendor.com/gpu"), ElementsAre("a"));
  EXPECT_THAT(dir_.Read(kFile), HasSubstr("\"PodDeviceEntries\":null"));

  // No healthy device: an empty list, never null.
  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(), testing::Devices({{"a", "Unhealthy"}}));
  EXPECT_THAT(dir_.Read(kFile), HasSubstr("\"RegisteredDevices\":{\"vendor.com/gpu\":[]}"));
}

TEST_F(CheckpointIoTest, EmptyManagerWritesTheKubeletsEmptyCheckpoint) {
  auto m = NewImpl();
  auto c = Connect(*m, "vendor.com/gpu");
  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(), testing::HealthyDevices(1));
  m->PluginDisconnected("vendor.com/gpu", c.get());
  clock_.Advance(absl::Minutes(6));
  EXPECT_THAT(m->GetCapacity().removed, ElementsAre("vendor.com/gpu"));
  EXPECT_EQ(
      dir_.Read(kFile),
      "{\"Data\":{\"PodDeviceEntries\":null,\"RegisteredDevices\":{}},\"Checksum\":3467439661}");
}

TEST_F(CheckpointIoTest, StartRestoresRegisteredResourcesAsStoppedPlaceholders) {
  {
    auto m = NewImpl();
    ASSERT_OK(m->Start(StartOpts()));
    auto c = Connect(*m, "vendor.com/gpu");
    m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(), testing::HealthyDevices(3));
    m->Stop();
  }
  clock_.Advance(absl::Hours(1));
  auto m = NewImpl();
  ASSERT_OK(m->Start(StartOpts()));
  CapacityResult cap = m->GetCapacity();
  EXPECT_EQ(cap.capacity["vendor.com/gpu"], 0);
  EXPECT_EQ(cap.allocatable["vendor.com/gpu"], 0);
  auto snap = m->Snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_TRUE(snap[0].has_endpoint);
  EXPECT_TRUE(snap[0].stopped);
  EXPECT_EQ(snap[0].endpoint_socket, "");
  EXPECT_EQ(snap[0].stopped_since, clock_.Now());
  // Allocation against the placeholder fails as on a rebooted node.
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("c", {{"vendor.com/gpu", 1}})});
  topology::AdmitResult r = testing::AdmitPod(*m, pod);
  EXPECT_FALSE(r.admitted);
  EXPECT_EQ(r.reason, "UnexpectedAdmissionError");
  EXPECT_EQ(r.message,
            "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices "
            "vendor.com/gpu, which is unexpected");

  clock_.Advance(absl::Minutes(5) + absl::Seconds(1));
  EXPECT_THAT(m->GetCapacity().removed, ElementsAre("vendor.com/gpu"));
  EXPECT_EQ(ReadBack().data.registered_devices->size(), 0u);
}

TEST_F(CheckpointIoTest, AllocationsSurviveARestart) {
  SetActive({"p1"});
  {
    auto m = NewImpl();
    ASSERT_OK(m->Start(StartOpts()));
    auto c = Connect(*m, "vendor.com/gpu");
    m->PluginListAndWatchReceiver(
        "vendor.com/gpu", c.get(),
        testing::Devices({{"a", "Healthy", {0}}, {"b", "Healthy", {1}}, {"c"}}));
    auto pod = MakePod("p1", {Ctr("main", {{"vendor.com/gpu", 3}})});
    ASSERT_TRUE(testing::AdmitPod(*m, pod).admitted);
    m->Stop();
  }
  auto m = NewImpl();
  ASSERT_OK(m->Start(StartOpts()));
  PodDevices pd = m->PodDevicesForTest();
  ASSERT_TRUE(pd.HasPod("p1"));
  auto devs = pd.ContainerDevices("p1", "main", "vendor.com/gpu");
  ASSERT_TRUE(devs.has_value());
  EXPECT_THAT(*devs, UnorderedElementsAre("a", "b", "c"));
  EXPECT_THAT(m->AllocatedDevicesForTest()["vendor.com/gpu"], UnorderedElementsAre("a", "b", "c"));
  auto topo = pd.GetContainerDevices("p1", "main");
  EXPECT_EQ(topo["vendor.com/gpu"]["a"], std::vector<int64_t>{0});
  EXPECT_EQ(topo["vendor.com/gpu"]["b"], std::vector<int64_t>{1});
  EXPECT_TRUE(topo["vendor.com/gpu"]["c"].empty());
  auto allocs = m->Allocations();
  ASSERT_EQ(allocs.size(), 1u);
  ASSERT_TRUE(allocs[0].containers[0].options.has_value());
  ASSERT_EQ(allocs[0].containers[0].options->envs.size(), 1u);
  EXPECT_EQ(allocs[0].containers[0].options->envs[0].name, "DEVICES");

  // The plugin re-registers: the pod's container restarts with its devices.
  auto c = Connect(*m, "vendor.com/gpu");
  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(),
                                testing::Devices({{"a"}, {"b"}, {"c"}, {"d"}}));
  auto pod = MakePod("p1", {Ctr("main", {{"vendor.com/gpu", 3}})});
  ASSERT_OK(m->Allocate(pod, pod.containers[0]));
  EXPECT_TRUE(c->calls().allocate.empty());
  // The restored entry is written back.
  checkpoint::Checkpoint cp = ReadBack();
  ASSERT_TRUE(cp.data.pod_device_entries.has_value());
  EXPECT_EQ(cp.data.pod_device_entries->size(), 1u);
}

// The V1 (pre-1.20) golden file of the reference, section 8.6.
constexpr char kV1File[] =
    "{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":\"pod1\",\"ContainerName\":\"con1\","
    "\"ResourceName\":\"domain1.com/resource1\",\"DeviceIDs\":[\"dev1\",\"dev2\"],"
    "\"AllocResp\":\"\"}],\"RegisteredDevices\":{\"domain1.com/resource1\":[\"dev1\",\"dev2\"]}},"
    "\"Checksum\":2622669051}";

TEST_F(CheckpointIoTest, V1FallbackOnlyIn130WithDevicesOnNuma0) {
  for (const char* v : {"1.30", "1.31"}) {
    SCOPED_TRACE(v);
    dir_.Write(kFile, kV1File);
    auto m = NewImpl(testing::ProfileFor(v));
    ASSERT_OK(m->Start(StartOpts()));  // fail-open either way
    PodDevices pd = m->PodDevicesForTest();
    if (std::string(v) == "1.30") {
      ASSERT_TRUE(pd.HasPod("pod1"));
      const auto& info = pd.entries().at("pod1").at("con1").at("domain1.com/resource1");
      ASSERT_TRUE(info.device_ids.has_value());
      ASSERT_EQ(info.device_ids->size(), 1u);
      EXPECT_THAT(*info.device_ids->at(0), ElementsAre("dev1", "dev2"));
      EXPECT_EQ(m->GetCapacity().capacity["domain1.com/resource1"], 0);
    } else {
      EXPECT_EQ(pd.size(), 0u);
      EXPECT_THAT(m->Snapshot(), IsEmpty());
    }
  }
}

TEST_F(CheckpointIoTest, CorruptCheckpointStartsEmptyAndIsOverwritten) {
  std::string bad =
      "{\"Data\":{\"PodDeviceEntries\":null,\"RegisteredDevices\":{\"x.io/y\":[]}},"
      "\"Checksum\":1}";
  dir_.Write(kFile, bad);
  auto m = NewImpl();
  EXPECT_OK(m->Start(StartOpts()));
  EXPECT_THAT(m->Snapshot(), IsEmpty());
  EXPECT_EQ(dir_.Read(kFile), bad);  // left alone until the next write
  auto c = Connect(*m, "vendor.com/gpu");
  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(), testing::HealthyDevices(1));
  ReadBack();

  dir_.Write(kFile, "not json");
  auto m2 = NewImpl();
  EXPECT_OK(m2->Start(StartOpts()));
  EXPECT_THAT(m2->Snapshot(), IsEmpty());
}

// The kubelet's checkpoint manager makes the directory when it is built
// (0755, before the registration server's own 0750 MkdirAll finds it there),
// and the kubelet does not start when it cannot.
TEST_F(CheckpointIoTest, StartMakesTheDirectoryAsTheKubeletsCheckpointManagerDoes) {
  ManagerOptions o;
  o.plugin_dir = dir_.path() + "/a/device-plugins";
  o.clock = &clock_;
  ManagerImpl m(o);
  ASSERT_OK(m.Start(StartOpts()));
  struct stat st;
  ASSERT_EQ(::stat(o.plugin_dir.c_str(), &st), 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0755u & ~mask);

  dir_.Write("file", "x");
  ManagerOptions bad = o;
  bad.plugin_dir = dir_.path() + "/file/device-plugins";
  ManagerImpl m2(bad);
  const absl::Status s = m2.Start(StartOpts());
  // os.MkdirAll names the component that is not a directory.
  EXPECT_EQ(s.message(), "failed to initialize checkpoint manager: mkdir " + dir_.path() +
                             "/file: not a directory");
}

// The kubelet's FileStore makes a missing directory again before writing:
// a device-plugin directory removed under a running node comes back with the
// next checkpoint.
TEST_F(CheckpointIoTest, ARemovedDirectoryIsMadeAgainByTheNextWrite) {
  const std::string plugin_dir = dir_.path() + "/device-plugins";
  auto m = StartWithOneGpu(plugin_dir);
  std::filesystem::remove_all(plugin_dir);
  auto pod = MakePod("p", {Ctr("c", {{"vendor.com/gpu", 1}})});
  EXPECT_OK(m->Allocate(pod, pod.containers[0]));
  EXPECT_TRUE(dir_.Exists("device-plugins/kubelet_internal_checkpoint"));
}

TEST_F(CheckpointIoTest, WriteFailureFailsTheAllocationWithTheKubeletsText) {
  // A file where the directory should be: the store's stat succeeds, so
  // nothing is made, and creating the temp file fails.
  dir_.Write("file", "x");
  const std::string plugin_dir = dir_.path() + "/file";
  auto m = StartWithOneGpu(plugin_dir);
  auto pod = MakePod("p", {Ctr("c", {{"vendor.com/gpu", 1}})});
  absl::Status s = m->Allocate(pod, pod.containers[0]);
  EXPECT_THAT(
      std::string(s.message()),
      ::testing::StartsWith("failed to write checkpoint file \"kubelet_internal_checkpoint\": "
                            "open " +
                            plugin_dir + "/."));
  EXPECT_THAT(std::string(s.message()), ::testing::EndsWith(": not a directory"));
  // podDevices was updated before the write failed.
  EXPECT_TRUE(m->PodDevicesForTest().HasPod("p"));
}

}  // namespace
}  // namespace devmgr::manager
