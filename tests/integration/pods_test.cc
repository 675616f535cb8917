// Issue 4 end to end: pod admission, allocation, runtime options,
// PreStartContainer and garbage collection, through node::PodManager and
// the emulated kubelet, against the reference plugin over real sockets.
#include <set>

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node/pod_manager.h"
#include "pod/manifest_parser.h"
#include "tests/integration/test_env.h"

namespace devmgr::testutil {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace pods_test {

using ::testing::ElementsAre;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAre;

constexpr char kGpu[] = "example.com/gpu";

std::string FourGpus(const std::string& extra = "") {
  return std::string(R"(
resource: example.com/gpu
devices:
  - {id: gpu-0, numa: [0]}
  - {id: gpu-1, numa: [0]}
  - {id: gpu-2, numa: [1]}
  - {id: gpu-3, numa: [1]}
allocate:
  envs:
    EXAMPLE_VISIBLE_DEVICES: "{{.DeviceIDs}}"
  per_device:
    cdi_devices: ["example.com/gpu={{.DeviceID}}"]
)") + extra;
}

class PodsTest : public ::testing::Test {
 protected:
  void Start(const std::string& plugin_yaml, const std::string& version = "1.32") {
    node_ = MakeNode(dir_.path(), &clock_, version, &changes_);
    pods_ = std::make_unique<node::PodManager>(node_.get());
    ASSERT_OK(node_->Start(pods_->MakeStartOptions(false)));
    plugin_ = MakePlugin(plugin_yaml, dir_.path());
    ASSERT_OK(plugin_->Start());
    ASSERT_TRUE(changes_.WaitFor([&] { return Find(*node_, kGpu).allocatable == 4; }));
  }
  node::PodRecord Admit(const pod::Pod& p) { return AdmitOrFail(*pods_, p); }
  // Devices of one container.
  std::vector<std::string> Devices(const std::string& uid, const std::string& container) {
    return ContainerDevices(*node_, uid, container, kGpu);
  }
  int Calls(const std::string& method) {
    return static_cast<int>(ReceivedCalls(*plugin_, method).size());
  }
  std::vector<plugin::CallRecord> CallsOf(const std::string& method) {
    return ReceivedCalls(*plugin_, method);
  }

  TempDir dir_;
  FakeClock clock_;
  ChangeSignal changes_;
  ChangeSignal changes2_;  // for a restarted node; outlives every node
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<node::PodManager> pods_;
  std::unique_ptr<plugin::SamplePlugin> plugin_;
};

TEST_F(PodsTest, SingleGpuPodGetsADeviceAndItsRuntimeOptions) {
  Start(FourGpus());
  auto rec = Admit(MakePod("cuda", {"main:1"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  auto devs = Devices(rec.pod.uid, "main");
  ASSERT_THAT(devs, SizeIs(1));
  ASSERT_TRUE(rec.containers[0].run_options.has_value());
  const auto& opts = *rec.containers[0].run_options;
  ASSERT_THAT(opts.envs, SizeIs(1));
  EXPECT_EQ(opts.envs[0].name, "EXAMPLE_VISIBLE_DEVICES");
  EXPECT_EQ(opts.envs[0].value, devs[0]);
  EXPECT_THAT(opts.cdi_devices, ElementsAre("example.com/gpu=" + devs[0]));
  // One container per Allocate call, with the chosen device.
  auto allocs = CallsOf("Allocate");
  ASSERT_THAT(allocs, SizeIs(1));
  EXPECT_EQ(allocs[0].args["container_requests"].size(), 1u);
  EXPECT_EQ(allocs[0].args["container_requests"][0]["devices_ids"][0], devs[0]);
  EXPECT_EQ(Find(*node_, kGpu).allocated, devs);
}

TEST_F(PodsTest, AskingForMoreThanIsHealthyFailsWithTheKubeletsText) {
  Start(FourGpus());
  auto rec = Admit(MakePod("greedy", {"main:5"}));
  EXPECT_EQ(rec.phase, pod::Phase::kFailed);
  EXPECT_EQ(rec.reason, "UnexpectedAdmissionError");
  EXPECT_EQ(rec.message,
            "Allocate failed due to requested number of devices unavailable for "
            "example.com/gpu. Requested: 5, Available: 4, which is unexpected");
  EXPECT_EQ(Calls("Allocate"), 0);
}

TEST_F(PodsTest, AppContainerReusesTheInitContainersDevices) {
  Start(FourGpus());
  auto rec = Admit(MakePod("reuse", {"init:setup:2", "main:2"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  auto init = Devices(rec.pod.uid, "setup");
  auto main = Devices(rec.pod.uid, "main");
  ASSERT_THAT(init, SizeIs(2));
  EXPECT_EQ(init, main);
  EXPECT_THAT(Find(*node_, kGpu).allocated, SizeIs(2));
}

TEST_F(PodsTest, SidecarDevicesAreNotReused) {
  Start(FourGpus());
  auto rec = Admit(MakePod("sidecar", {"sidecar:proxy:1", "main:1"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  auto side = Devices(rec.pod.uid, "proxy");
  auto main = Devices(rec.pod.uid, "main");
  ASSERT_THAT(side, SizeIs(1));
  ASSERT_THAT(main, SizeIs(1));
  EXPECT_NE(side, main);
}

TEST_F(PodsTest, TwoAppContainersShareNothing) {
  Start(FourGpus());
  auto rec = Admit(MakePod("two", {"a:2", "b:2"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  std::set<std::string> all;
  for (const auto& d : Devices(rec.pod.uid, "a")) all.insert(d);
  for (const auto& d : Devices(rec.pod.uid, "b")) all.insert(d);
  EXPECT_THAT(all, SizeIs(4));
}

TEST_F(PodsTest, PreferredAllocationIsHonoured) {
  Start(
      FourGpus("options: {get_preferred_allocation_available: true}\n"
               "preferred_allocation: {policy: last}\n"));
  auto rec = Admit(MakePod("pref", {"main:2"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  EXPECT_THAT(Devices(rec.pod.uid, "main"), UnorderedElementsAre("gpu-2", "gpu-3"));
  auto calls = CallsOf("GetPreferredAllocation");
  ASSERT_THAT(calls, SizeIs(1));
  const auto& req = calls[0].args["container_requests"][0];
  EXPECT_EQ(req["allocation_size"], 2);
  EXPECT_EQ(req["available_deviceIDs"].size(), 4u);
  EXPECT_TRUE(!req.contains("must_include_deviceIDs") || req["must_include_deviceIDs"].empty());
}

TEST_F(PodsTest, PartialPreferenceIsFilledUp) {
  Start(
      FourGpus("options: {get_preferred_allocation_available: true}\n"
               "preferred_allocation: {policy: fixed, devices: [gpu-3]}\n"));
  auto rec = Admit(MakePod("partial", {"main:2"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  auto devs = Devices(rec.pod.uid, "main");
  ASSERT_THAT(devs, SizeIs(2));
  EXPECT_THAT(devs, ::testing::Contains("gpu-3"));
}

TEST_F(PodsTest, InvalidPreferenceIsIgnored) {
  Start(
      FourGpus("options: {get_preferred_allocation_available: true}\n"
               "preferred_allocation: {policy: fixed, devices: [no-such-gpu, gpu-9]}\n"));
  auto rec = Admit(MakePod("invalid", {"main:2"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  EXPECT_THAT(Devices(rec.pod.uid, "main"), SizeIs(2));
}

TEST_F(PodsTest, FailingPreferredAllocationRejectsThePod) {
  Start(
      FourGpus("options: {get_preferred_allocation_available: true}\n"
               "faults:\n  get_preferred_allocation: {error: {code: 2, message: nope}}\n"));
  auto rec = Admit(MakePod("prefail", {"main:2"}));
  EXPECT_EQ(rec.phase, pod::Phase::kFailed);
  EXPECT_EQ(rec.message,
            "Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: "
            "rpc error: code = Unknown desc = nope, which is unexpected");
}

TEST_F(PodsTest, FailingAllocateRejectsThePod) {
  Start(FourGpus("faults:\n  allocate: {error: {code: 14, message: device busy}}\n"));
  auto rec = Admit(MakePod("allocfail", {"main:1"}));
  EXPECT_EQ(rec.phase, pod::Phase::kFailed);
  EXPECT_EQ(rec.reason, "UnexpectedAdmissionError");
  EXPECT_EQ(rec.message,
            "Allocate failed due to rpc error: code = Unavailable desc = device busy, which is "
            "unexpected");
  // The RPC error rebuilds allocatedDevices: nothing stays in use.
  EXPECT_THAT(Find(*node_, kGpu).allocated, SizeIs(0));
}

TEST_F(PodsTest, AllocateWithNoContainerResponsesRejectsThePod) {
  Start(FourGpus("faults:\n  allocate: {wrong_count: 0}\n"));
  auto rec = Admit(MakePod("wrongcount", {"main:1"}));
  EXPECT_EQ(rec.phase, pod::Phase::kFailed);
  EXPECT_EQ(rec.message,
            "Allocate failed due to no containers return in allocation response "
            "&AllocateResponse{ContainerResponses:[]*ContainerAllocateResponse{},}, which is "
            "unexpected");  // the fixture's 1.33-and-older profile (gogo's String())
}

TEST_F(PodsTest, ExtraContainerResponsesAreIgnored) {
  Start(FourGpus("faults:\n  allocate: {wrong_count: 2}\n"));
  auto rec = Admit(MakePod("extra", {"main:1"}));
  EXPECT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
}

TEST_F(PodsTest, PreStartContainerIsCalledWhenRequiredEvenWhenSlow) {
  Start(
      FourGpus("options: {pre_start_required: true}\n"
               "faults:\n  pre_start_container: {delay: 300ms}\n"));
  auto rec = Admit(MakePod("prestart", {"main:2"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  EXPECT_TRUE(rec.containers[0].start_error.empty()) << rec.containers[0].start_error;
  auto calls = CallsOf("PreStartContainer");
  ASSERT_THAT(calls, SizeIs(1));
  std::vector<std::string> ids = calls[0].args["devices_ids"];
  std::vector<std::string> devs = Devices(rec.pod.uid, "main");
  EXPECT_THAT(ids, UnorderedElementsAre(devs[0], devs[1]));
}

TEST_F(PodsTest, FailingPreStartContainerFailsTheContainerStart) {
  Start(
      FourGpus("options: {pre_start_required: true}\n"
               "faults:\n  pre_start_container: {error: {code: 2, message: not ready}}\n"));
  auto rec = Admit(MakePod("prestartfail", {"main:1"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning);
  EXPECT_EQ(rec.containers[0].start_error,
            "device plugin PreStartContainer rpc failed with err: rpc error: code = Unknown "
            "desc = not ready");
  EXPECT_FALSE(rec.containers[0].running);
}

TEST_F(PodsTest, DeletingAPodFreesItsDevicesForTheNextPod) {
  Start(FourGpus());
  auto a = Admit(MakePod("a", {"main:4"}));
  ASSERT_EQ(a.phase, pod::Phase::kRunning) << a.message;
  auto b = Admit(MakePod("b", {"main:1"}));
  EXPECT_EQ(b.phase, pod::Phase::kFailed);
  EXPECT_EQ(b.message,
            "Allocate failed due to requested number of devices unavailable for "
            "example.com/gpu. Requested: 1, Available: 0, which is unexpected");
  ASSERT_OK(pods_->DeletePod(a.pod.uid));
  auto c = Admit(MakePod("c", {"main:4"}));
  EXPECT_EQ(c.phase, pod::Phase::kRunning) << c.message;
}

TEST_F(PodsTest, ContainerRestartKeepsItsDevicesWithoutReallocation) {
  Start(FourGpus());
  auto rec = Admit(MakePod("restart", {"main:2"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning);
  auto before = Devices(rec.pod.uid, "main");
  ASSERT_OK(pods_->RestartContainer(rec.pod.uid, "main"));
  EXPECT_EQ(Devices(rec.pod.uid, "main"), before);
  EXPECT_EQ(Calls("Allocate"), 1);
  EXPECT_EQ(pods_->Find(rec.pod.uid)->containers[0].restart_count, 1);
}

TEST_F(PodsTest, DevicesOfATerminatedPodAreCollectedBeforeTheNextAllocation) {
  Start(FourGpus());
  auto a = Admit(MakePod("done", {"main:4"}));
  ASSERT_EQ(a.phase, pod::Phase::kRunning);
  ASSERT_OK(pods_->SetPhase(a.pod.uid, pod::Phase::kSucceeded));
  // Nothing is collected until an allocation runs the GC.
  EXPECT_THAT(Find(*node_, kGpu).allocated, SizeIs(4));
  auto b = Admit(MakePod("next", {"main:4"}));
  EXPECT_EQ(b.phase, pod::Phase::kRunning) << b.message;
  EXPECT_TRUE(Devices(a.pod.uid, "main").empty());
}

TEST_F(PodsTest, AllocationsSurviveAKubeletRestartThroughTheCheckpoint) {
  Start(FourGpus());
  auto a = Admit(MakePod("survivor", {"main:3"}));
  ASSERT_EQ(a.phase, pod::Phase::kRunning);
  const auto before = Devices(a.pod.uid, "main");
  node_->Stop();
  // A restarted kubelet: reads the checkpoint, re-admits the running pod
  // (kubelet-restart shortcut), the plugin re-registers.
  auto node2 = MakeNode(dir_.path(), &clock_, "1.32", &changes2_);
  ASSERT_OK(node2->Start(pods_->MakeStartOptions(false)));
  EXPECT_EQ(Find(*node2, kGpu).allocated, before);
  pods_->ReadmitAfterRestart(node2.get());
  EXPECT_EQ(pods_->Find(a.pod.uid)->phase, pod::Phase::kRunning);
  ASSERT_TRUE(changes2_.WaitFor([&] { return Find(*node2, kGpu).allocatable == 4; }));
  // A new pod only gets what is left.
  node_ = std::move(node2);
  auto b = Admit(MakePod("newcomer", {"main:2"}));
  EXPECT_EQ(b.phase, pod::Phase::kFailed);
  auto c = Admit(MakePod("fits", {"main:1"}));
  ASSERT_EQ(c.phase, pod::Phase::kRunning) << c.message;
  EXPECT_THAT(before, ::testing::Not(::testing::Contains(Devices(c.pod.uid, "main")[0])));
}

}  // namespace pods_test
}  // namespace devmgr::testutil
