// Allocation at the domain level: Allocate, devicesToAllocate,
// GetPreferredAllocation, GC, admission (devicemanager manager.go).
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/manager_testutil.h"

namespace devmgr::manager {
namespace {

using testing::Ctr;
using testing::Devices;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::MakePod;
using ::testing::SizeIs;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;
using ::testing::UnorderedElementsAreArray;

constexpr char kGpu[] = "vendor.com/gpu";

using AllocationTest = testing::AllocationFixture;

TEST_F(AllocationTest, SingleGpuPod) {
  SetUpManager(2);
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("cuda", {{kGpu, 1}, {"cpu", 1}})});
  topology::AdmitResult r = testing::AdmitPod(*m_, pod);
  EXPECT_TRUE(r.admitted);
  auto calls = c_->calls();
  ASSERT_THAT(calls.allocate, SizeIs(1));
  ASSERT_EQ(calls.allocate[0].container_requests_size(), 1);
  EXPECT_EQ(calls.allocate[0].container_requests(0).devices_ids_size(), 1);
  EXPECT_THAT(Devs("p", "cuda"), SizeIs(1));
  EXPECT_THAT(m_->AllocatedDevicesForTest()[kGpu], SizeIs(1));
  // Checkpointed.
  auto cp = checkpoint::DecodeV2(dir_.Read("kubelet_internal_checkpoint"));
  ASSERT_OK(cp);
  ASSERT_TRUE(cp->data.pod_device_entries.has_value());
  ASSERT_EQ(cp->data.pod_device_entries->size(), 1u);
  EXPECT_EQ((*cp->data.pod_device_entries)[0].container_name, "cuda");
  EXPECT_THAT((*cp->data.pod_device_entries)[0].device_ids->at(-1).value(), SizeIs(1));
}

TEST_F(AllocationTest, MoreThanHealthyFailsWithTheExactText) {
  SetUpManager(2);
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 3}})});
  topology::AdmitResult r = testing::AdmitPod(*m_, pod);
  EXPECT_FALSE(r.admitted);
  EXPECT_EQ(r.reason, "UnexpectedAdmissionError");
  EXPECT_EQ(r.message,
            "Allocate failed due to requested number of devices unavailable for vendor.com/gpu. "
            "Requested: 3, Available: 2, which is unexpected");
  EXPECT_TRUE(c_->calls().allocate.empty());
}

TEST_F(AllocationTest, NonDevicePluginResourcesAreIgnored) {
  SetUpManager(1);
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("c", {{"example.com/other", 5}})});
  EXPECT_TRUE(testing::AdmitPod(*m_, pod).admitted);
  EXPECT_EQ(m_->PodDevicesForTest().size(), 0u);
}

TEST_F(AllocationTest, InitContainerDevicesAreReusedByAppContainers) {
  SetUpManager(2);
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("app", {{kGpu, 2}})}, {Ctr("init", {{kGpu, 2}})});
  ASSERT_TRUE(testing::AdmitPod(*m_, pod).admitted);
  EXPECT_THAT(Devs("p", "app"), UnorderedElementsAreArray(Devs("p", "init")));
  EXPECT_THAT(c_->calls().allocate, SizeIs(2));
}

TEST_F(AllocationTest, SidecarDevicesAreNotReused) {
  SetUpManager(2);
  SetActive({"p"});
  // init (2) -> reuse {d0,d1}; sidecar (1) takes one of them for itself;
  // app (1) reuses the other.
  auto pod = MakePod("p", {Ctr("app", {{kGpu, 1}})},
                     {Ctr("init", {{kGpu, 2}}), Ctr("sidecar", {{kGpu, 1}}, true)});
  ASSERT_TRUE(testing::AdmitPod(*m_, pod).admitted);
  DeviceSet side = Devs("p", "sidecar");
  DeviceSet app = Devs("p", "app");
  ASSERT_THAT(side, SizeIs(1));
  ASSERT_THAT(app, SizeIs(1));
  EXPECT_NE(*side.begin(), *app.begin());

  // Without an init container, a sidecar and an app container share nothing.
  SetActive({"p", "q"});
  auto q = MakePod("q", {Ctr("app", {{kGpu, 1}})}, {Ctr("sidecar", {{kGpu, 1}}, true)});
  m_->PluginListAndWatchReceiver(kGpu, c_.get(), testing::HealthyDevices(4));
  ASSERT_TRUE(testing::AdmitPod(*m_, q).admitted);
  EXPECT_NE(*Devs("q", "sidecar").begin(), *Devs("q", "app").begin());
}

TEST_F(AllocationTest, TwoAppContainersShareNothing) {
  SetUpManager(2);
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("a", {{kGpu, 1}}), Ctr("b", {{kGpu, 1}}), Ctr("c", {{kGpu, 1}})});
  topology::AdmitResult r = testing::AdmitPod(*m_, pod);
  EXPECT_FALSE(r.admitted);
  EXPECT_EQ(r.message,
            "Allocate failed due to requested number of devices unavailable for vendor.com/gpu. "
            "Requested: 1, Available: 0, which is unexpected");
  EXPECT_NE(*Devs("p", "a").begin(), *Devs("p", "b").begin());
}

TEST_F(AllocationTest, PreferredAllocationIsHonoured) {
  SetUpManager(4, /*preferred=*/true);
  SetActive({"p"});
  c_->on_preferred = [](const v1beta1::PreferredAllocationRequest& req) {
    v1beta1::PreferredAllocationResponse resp;
    auto* c = resp.add_container_responses();
    c->add_deviceids("dev2");
    c->add_deviceids("dev3");
    return resp;
  };
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 2}})});
  ASSERT_TRUE(testing::AdmitPod(*m_, pod).admitted);
  EXPECT_THAT(Devs("p", "c"), UnorderedElementsAre("dev2", "dev3"));
  auto calls = c_->calls();
  ASSERT_THAT(calls.preferred, SizeIs(1));
  const auto& req = calls.preferred[0].container_requests(0);
  EXPECT_THAT(req.available_deviceids(), UnorderedElementsAre("dev0", "dev1", "dev2", "dev3"));
  EXPECT_THAT(req.must_include_deviceids(), IsEmpty());
  EXPECT_EQ(req.allocation_size(), 2);
}

TEST_F(AllocationTest, PreferredAllocationPartialOrInvalidIsFilledUp) {
  SetUpManager(4, /*preferred=*/true);
  SetActive({"p"});
  c_->on_preferred = [](const v1beta1::PreferredAllocationRequest&) {
    v1beta1::PreferredAllocationResponse resp;
    auto* c = resp.add_container_responses();
    c->add_deviceids("dev1");
    c->add_deviceids("dev1");    // duplicates collapse
    c->add_deviceids("nosuch");  // unknown IDs are dropped
    return resp;
  };
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 3}})});
  ASSERT_TRUE(testing::AdmitPod(*m_, pod).admitted);
  DeviceSet got = Devs("p", "c");
  EXPECT_THAT(got, SizeIs(3));
  EXPECT_TRUE(got.contains("dev1"));
  EXPECT_FALSE(got.contains("nosuch"));
}

TEST_F(AllocationTest, PreferredAllocationSizeIncludesReusedDevicesAsMustInclude) {
  SetUpManager(4, /*preferred=*/true);
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("app", {{kGpu, 3}})}, {Ctr("init", {{kGpu, 1}})});
  ASSERT_TRUE(testing::AdmitPod(*m_, pod).admitted);
  auto calls = c_->calls();
  ASSERT_THAT(calls.preferred, SizeIs(2));
  const auto& req = calls.preferred[1].container_requests(0);
  std::string init_dev = *Devs("p", "init").begin();
  EXPECT_THAT(req.must_include_deviceids(), ElementsAre(init_dev));
  EXPECT_EQ(req.allocation_size(), 3);
  EXPECT_EQ(req.available_deviceids_size(), 4);
}

TEST_F(AllocationTest, PreferredAllocationFailing) {
  SetUpManager(2, /*preferred=*/true);
  SetActive({"p"});
  c_->on_preferred = [](const v1beta1::PreferredAllocationRequest&) {
    return absl::UnknownError("rpc error: code = Unknown desc = no preference");
  };
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 1}})});
  topology::AdmitResult r = testing::AdmitPod(*m_, pod);
  EXPECT_EQ(r.message,
            "Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc "
            "error: code = Unknown desc = no preference, which is unexpected");
  EXPECT_TRUE(c_->calls().allocate.empty());
}

TEST_F(AllocationTest, LockIsReleasedDuringGetPreferredAllocation) {
  SetUpManager(2, /*preferred=*/true);
  SetActive({"p"});
  ManagerImpl* m = m_.get();
  c_->on_preferred = [m](const v1beta1::PreferredAllocationRequest&) {
    m->Snapshot();  // deadlocks if the manager's lock were held
    m->UpdateAllocatedDevices();
    return v1beta1::PreferredAllocationResponse();
  };
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 1}})});
  EXPECT_TRUE(testing::AdmitPod(*m_, pod).admitted);
}

TEST_F(AllocationTest, AllocateRpcFailureReleasesTheChosenDevices) {
  SetUpManager(1);
  SetActive({"p"});
  c_->on_allocate = [](const v1beta1::AllocateRequest&) {
    return absl::UnknownError("rpc error: code = Unknown desc = allocation refused");
  };
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 1}})});
  topology::AdmitResult r = testing::AdmitPod(*m_, pod);
  EXPECT_EQ(r.message,
            "Allocate failed due to rpc error: code = Unknown desc = allocation refused, which is "
            "unexpected");
  EXPECT_THAT(m_->AllocatedDevicesForTest()[kGpu], IsEmpty());
}

TEST_F(AllocationTest, ZeroContainerResponsesMessageFrom134) {
  SetUpManager(1, false, false, ProfileForMinor(34));
  SetActive({"p"});
  c_->on_allocate = [](const v1beta1::AllocateRequest&) { return v1beta1::AllocateResponse(); };
  EXPECT_EQ(testing::AdmitPod(*m_, MakePod("p", {Ctr("c", {{kGpu, 1}})})).message,
            "Allocate failed due to no containers return in allocation response , which is "
            "unexpected");
}

TEST_F(AllocationTest, ZeroContainerResponsesFailAndKeepTheDevicesInUse) {
  SetUpManager(1, false, false, ProfileForMinor(33));
  SetActive({"p", "q"});
  c_->on_allocate = [](const v1beta1::AllocateRequest&) { return v1beta1::AllocateResponse(); };
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 1}})});
  topology::AdmitResult r = testing::AdmitPod(*m_, pod);
  EXPECT_EQ(r.message,
            "Allocate failed due to no containers return in allocation response "
            "&AllocateResponse{ContainerResponses:[]*ContainerAllocateResponse{},}, which is "
            "unexpected");
  // Quirk: no rebuild; the device stays in use though no pod holds it.
  EXPECT_THAT(m_->AllocatedDevicesForTest()[kGpu], SizeIs(1));
  EXPECT_FALSE(m_->PodDevicesForTest().HasPod("p"));
  c_->on_allocate = nullptr;
  auto q = MakePod("q", {Ctr("c", {{kGpu, 1}})});
  EXPECT_THAT(testing::AdmitPod(*m_, q).message, HasSubstr("Available: 0"));
}

TEST_F(AllocationTest, StoppedEndpointFailsAllocate) {
  SetUpManager(1);
  SetActive({"p"});
  m_->PluginDisconnected(kGpu, c_.get());
  // The device is unhealthy now, so make it healthy again through the old
  // stream (the kubelet still accepts it) while the endpoint stays stopped.
  m_->PluginListAndWatchReceiver(kGpu, c_.get(), testing::HealthyDevices(1));
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 1}})});
  topology::AdmitResult r = testing::AdmitPod(*m_, pod);
  EXPECT_THAT(r.message, StartsWith("Allocate failed due to endpoint &{{0 0} vendor.com/gpu 0x"));
  EXPECT_THAT(r.message, HasSubstr("} has been stopped, which is unexpected"));
  EXPECT_TRUE(c_->calls().allocate.empty());
}

TEST_F(AllocationTest, PodDeletionFreesDevicesForTheNextPod) {
  SetUpManager(1);
  SetActive({"p1"});
  auto p1 = MakePod("p1", {Ctr("c", {{kGpu, 1}})});
  ASSERT_TRUE(testing::AdmitPod(*m_, p1).admitted);
  SetActive({"p1", "p2"});
  auto p2 = MakePod("p2", {Ctr("c", {{kGpu, 1}})});
  EXPECT_FALSE(testing::AdmitPod(*m_, p2).admitted);
  // p1 deleted (or terminated): GC before the next allocation frees it.
  SetActive({"p2"});
  EXPECT_TRUE(testing::AdmitPod(*m_, p2).admitted);
  EXPECT_FALSE(m_->PodDevicesForTest().HasPod("p1"));
}

TEST_F(AllocationTest, GcWaitsForSourcesReady) {
  m_ = NewImpl();
  StartOptions so = StartOpts();
  bool ready = false;
  so.sources_ready = [&ready] { return ready; };
  ASSERT_OK(m_->Start(so));
  c_ = Connect(*m_, kGpu);
  m_->PluginListAndWatchReceiver(kGpu, c_.get(), testing::HealthyDevices(2));
  auto p1 = MakePod("p1", {Ctr("c", {{kGpu, 1}})});
  ASSERT_TRUE(testing::AdmitPod(*m_, p1).admitted);
  m_->UpdateAllocatedDevices();
  EXPECT_TRUE(m_->PodDevicesForTest().HasPod("p1"));
  ready = true;
  m_->UpdateAllocatedDevices();
  EXPECT_FALSE(m_->PodDevicesForTest().HasPod("p1"));
  EXPECT_THAT(m_->AllocatedDevicesForTest()[kGpu], IsEmpty());
}

TEST_F(AllocationTest, ContainerRestartKeepsItsDevices) {
  SetUpManager(2);
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 1}})});
  ASSERT_TRUE(testing::AdmitPod(*m_, pod).admitted);
  DeviceSet before = Devs("p", "c");
  ASSERT_OK(m_->Allocate(pod, pod.containers[0]));
  EXPECT_EQ(Devs("p", "c"), before);
  EXPECT_THAT(c_->calls().allocate, SizeIs(1));
}

TEST_F(AllocationTest, ChangedRequestIsRejected) {
  SetUpManager(3);
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 1}})});
  ASSERT_TRUE(testing::AdmitPod(*m_, pod).admitted);
  auto bigger = MakePod("p", {Ctr("c", {{kGpu, 2}})});
  absl::Status s = m_->Allocate(bigger, bigger.containers[0]);
  EXPECT_EQ(
      s.message(),
      "pod \"p\" container \"c\" changed request for resource \"vendor.com/gpu\" from 1 to 2");
}

TEST_F(AllocationTest, PreviouslyAllocatedDeviceNoLongerHealthy) {
  SetUpManager(2);
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 1}})});
  ASSERT_TRUE(testing::AdmitPod(*m_, pod).admitted);
  std::string held = *Devs("p", "c").begin();
  std::string other = held == "dev0" ? "dev1" : "dev0";
  m_->PluginListAndWatchReceiver(kGpu, c_.get(),
                                 Devices({{held, "Unhealthy"}, {other, "Healthy"}}));
  absl::Status s = m_->Allocate(pod, pod.containers[0]);
  EXPECT_EQ(s.message(),
            "previously allocated devices are no longer healthy; cannot allocate unhealthy "
            "devices vendor.com/gpu");
}

TEST_F(AllocationTest, UnregisteredResourceWithAllocationsFails) {
  SetUpManager(1);
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 1}})});
  ASSERT_TRUE(testing::AdmitPod(*m_, pod).admitted);
  m_->PluginDisconnected(kGpu, c_.get());
  clock_.Advance(absl::Minutes(6));
  EXPECT_THAT(m_->GetCapacity().removed, ElementsAre(kGpu));
  // Still a device-plugin resource (allocatedDevices has it).
  absl::Status s = m_->Allocate(pod, pod.containers[0]);
  EXPECT_EQ(s.message(), "cannot allocate unregistered device vendor.com/gpu");
  // And starting the container fails without the endpoint.
  auto opts = m_->GetDeviceRunContainerOptions(pod, pod.containers[0]);
  EXPECT_EQ(opts.status().message(),
            "endpoint not found in cache for a registered resource: vendor.com/gpu");
}

TEST_F(AllocationTest, KubeletRestartShortcutSkipsChecksForRunningContainers) {
  m_ = NewImpl();
  StartOptions so = StartOpts();
  so.sources_ready = [] { return false; };
  so.container_map[{"p", "c"}] = "cid-1";
  so.running_container_ids = {"cid-1"};
  ASSERT_OK(m_->Start(so));
  c_ = Connect(*m_, kGpu);
  m_->PluginListAndWatchReceiver(kGpu, c_.get(), Devices({{"a", "Unhealthy"}}));
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 1}}), Ctr("d", {{kGpu, 1}})});
  EXPECT_OK(m_->Allocate(pod, pod.containers[0]));
  EXPECT_EQ(m_->Allocate(pod, pod.containers[1]).message(),
            "no healthy devices present; cannot allocate unhealthy devices vendor.com/gpu");
}

TEST_F(AllocationTest, PendingAdmissionPodCountsAsActiveOnlyIn130And131) {
  for (const char* v : {"1.31", "1.32"}) {
    SCOPED_TRACE(v);
    std::filesystem::remove(dir_.File("kubelet_internal_checkpoint"));
    SetUpManager(2, false, false, testing::ProfileFor(v));
    SetActive({});  // the pod being admitted is not (yet) active
    auto pod = MakePod("p", {Ctr("a", {{kGpu, 1}}), Ctr("b", {{kGpu, 1}})});
    ASSERT_TRUE(testing::AdmitPod(*m_, pod).admitted);
    PodDevices pd = m_->PodDevicesForTest();
    bool kept = std::string(v) == "1.31";
    EXPECT_EQ(pd.ContainerDevices("p", "a", kGpu).has_value(), kept);
    EXPECT_TRUE(pd.ContainerDevices("p", "b", kGpu).has_value());
  }
}

// Affinity on NUMA node 0 for every container.
class Node0Affinity : public topology::TopologyAffinityStore {
 public:
  std::optional<topology::BitMask> GetAffinity(const std::string&,
                                               const std::string&) const override {
    return topology::BitMask(1);
  }
};

TEST_F(AllocationTest, AlignedDevicesComeFirstAndAreNotRolledBack) {
  Node0Affinity affinity;
  m_ = NewImpl(DefaultProfile(), &affinity);
  ASSERT_OK(m_->Start(StartOpts()));
  c_ = Connect(*m_, kGpu, /*preferred=*/true);
  m_->PluginListAndWatchReceiver(
      kGpu, c_.get(),
      Devices({{"a", "Healthy", {0}}, {"b", "Healthy", {1}}, {"c", "Healthy", {1}}}));
  SetActive({"p", "q"});
  // Needed (2) >= |aligned| (1): "a" is taken first, then the plugin is asked.
  c_->on_preferred = [](const v1beta1::PreferredAllocationRequest& req) {
    EXPECT_THAT(req.container_requests(0).must_include_deviceids(), ElementsAre("a"));
    return absl::UnknownError("rpc error: code = Unknown desc = x");
  };
  auto p = MakePod("p", {Ctr("c", {{kGpu, 2}})});
  EXPECT_FALSE(testing::AdmitPod(*m_, p).admitted);
  // Quirk (section 6.9): "a" stays in allocatedDevices with no owner.
  EXPECT_THAT(m_->AllocatedDevicesForTest()[kGpu], ElementsAre("a"));

  c_->on_preferred = nullptr;
  auto q = MakePod("q", {Ctr("c", {{kGpu, 2}})});
  ASSERT_TRUE(testing::AdmitPod(*m_, q).admitted);
  EXPECT_THAT(Devs("q", "c"), UnorderedElementsAre("b", "c"));
  auto topo = m_->PodDevicesForTest().GetContainerDevices("q", "c");
  EXPECT_EQ(topo[kGpu]["b"], std::vector<int64_t>{1});
}

TEST_F(AllocationTest, MoreAlignedThanNeededAsksThePluginAmongAligned) {
  Node0Affinity affinity;
  m_ = NewImpl(DefaultProfile(), &affinity);
  ASSERT_OK(m_->Start(StartOpts()));
  c_ = Connect(*m_, kGpu, /*preferred=*/true);
  m_->PluginListAndWatchReceiver(
      kGpu, c_.get(),
      Devices({{"a", "Healthy", {0}}, {"b", "Healthy", {0}}, {"c", "Healthy", {1}}, {"d"}}));
  SetActive({"p"});
  c_->on_preferred = [](const v1beta1::PreferredAllocationRequest& req) {
    EXPECT_THAT(req.container_requests(0).available_deviceids(), UnorderedElementsAre("a", "b"));
    v1beta1::PreferredAllocationResponse resp;
    resp.add_container_responses()->add_deviceids("c");  // not aligned: dropped
    resp.mutable_container_responses(0)->add_deviceids("b");
    return resp;
  };
  auto p = MakePod("p", {Ctr("c", {{kGpu, 1}})});
  ASSERT_TRUE(testing::AdmitPod(*m_, p).admitted);
  EXPECT_THAT(Devs("p", "c"), ElementsAre("b"));
}

TEST_F(AllocationTest, ReuseIsForgottenWhenAnotherPodIsAllocatedInBetween) {
  SetUpManager(2);
  SetActive({"p", "q"});
  auto p = MakePod("p", {Ctr("app", {{kGpu, 1}})}, {Ctr("init", {{kGpu, 1}})});
  auto q = MakePod("q", {Ctr("c", {{kGpu, 1}})});
  ASSERT_OK(m_->Allocate(p, p.init_containers[0]));
  ASSERT_OK(m_->Allocate(q, q.containers[0]));
  // p's init device is no longer reusable and q took the other one.
  absl::Status s = m_->Allocate(p, p.containers[0]);
  EXPECT_EQ(s.message(),
            "requested number of devices unavailable for vendor.com/gpu. Requested: 1, "
            "Available: 0");
}

}  // namespace
}  // namespace devmgr::manager
