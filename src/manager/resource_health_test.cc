// Device health in pod status (KEP-4680): the device manager's rules
// (docs/resource-health.md).
#include "manager/resource_health.h"

#include "common/logging.h"
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/manager_testutil.h"

namespace devmgr::manager {
namespace {

using testing::Ctr;
using testing::Dev;
using testing::Devices;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::MakePod;

constexpr char kGpu[] = "vendor.com/gpu";
constexpr char kNic[] = "vendor.com/nic";

Profile Minor(int minor) {
  Profile p = ProfileForMinor(minor);
  return p;
}

std::vector<ContainerResourceStatus> Fresh(std::initializer_list<const char*> names) {
  std::vector<ContainerResourceStatus> out;
  for (const char* n : names) out.push_back({n, std::nullopt});
  return out;
}

TEST(ResourceHealthGateTest, DefaultsPerVersion) {
  EXPECT_FALSE(ResourceHealthStatusDefault(Minor(31)));
  EXPECT_FALSE(ResourceHealthStatusDefault(Minor(35)));
  EXPECT_TRUE(ResourceHealthStatusDefault(Minor(36)));
  EXPECT_TRUE(ResourceHealthStatusDefault(Minor(37)));
}

TEST(ResourceHealthGateTest, FeatureGatesOverrideTheDefault) {
  Profile on = Minor(35);
  ASSERT_OK(on.gates.Set("KubeletPodResourcesGet=true, ResourceHealthStatus=true"));
  EXPECT_TRUE(ResourceHealthStatusDefault(on));
  Profile off = Minor(36);
  ASSERT_OK(off.gates.Set("ResourceHealthStatus=false"));
  EXPECT_FALSE(ResourceHealthStatusDefault(off));
  Profile old = Minor(30);
  EXPECT_EQ(old.gates.Set("ResourceHealthStatus=true").message(),
            "unrecognized feature gate: ResourceHealthStatus");
}

TEST(DeviceUpdateChannelTest, BoundedNonBlockingAndLogsWhenFull) {
  DeviceUpdateChannel ch(2);
  EXPECT_TRUE(ch.TrySend({"a"}));
  EXPECT_TRUE(ch.TrySend({"b"}));
  EXPECT_FALSE(ch.TrySend({"c", "d"}));
  const std::vector<std::string> lines = log::RecentLines(1);
  ASSERT_THAT(lines, ::testing::SizeIs(1));
  EXPECT_THAT(lines[0], HasSubstr("\"discard pods info\""));
  EXPECT_THAT(lines[0], HasSubstr("err=\"device update channel is full\""));
  EXPECT_THAT(lines[0], HasSubstr("podsToUpdate=\"[c d]\""));
  EXPECT_EQ(ch.size(), 2u);
  EXPECT_THAT(*ch.Receive(absl::ZeroDuration()), ElementsAre("a"));
  EXPECT_THAT(*ch.Receive(absl::ZeroDuration()), ElementsAre("b"));
  EXPECT_FALSE(ch.Receive(absl::Milliseconds(1)).has_value());
}

class ResourceHealthTest : public testing::ManagerFixture {
 protected:
  std::unique_ptr<ManagerImpl> New(Profile profile, bool gate = true) {
    ManagerOptions o;
    o.plugin_dir = dir_.path();
    o.profile = profile;
    o.clock = &clock_;
    o.fsync = false;
    o.resource_health_status = gate;
    auto m = std::make_unique<ManagerImpl>(o);
    EXPECT_OK(m->Start(StartOpts()));
    return m;
  }
  // Admits a one-container pod holding `n` devices of `resource`.
  void Admit(ManagerImpl& m, const std::string& uid, const std::string& resource, int n = 1) {
    AddActive(uid);
    ASSERT_TRUE(testing::AdmitPod(m, MakePod(uid, {Ctr("app", {{resource, n}})})).admitted);
  }
  void AddActive(const std::string& uid) {
    absl::MutexLock l(&active_mu_);
    active_.push_back(uid);
  }
  static std::vector<std::vector<std::string>> Drain(ManagerImpl& m) {
    std::vector<std::vector<std::string>> out;
    while (auto u = m.Updates().Receive(absl::ZeroDuration())) out.push_back(*u);
    return out;
  }
  static std::vector<ResourceHealthStatus> StatusOf(ManagerImpl& m, const std::string& uid) {
    auto st = Fresh({"app"});
    m.UpdateAllocatedResourcesStatus(uid, &st);
    return st[0].allocated_resources_status.value_or(std::vector<ResourceHealthStatus>{});
  }
};

TEST_F(ResourceHealthTest, StatusCarriesTheLastReportedHealthAndAnythingButHealthyIsUnhealthy) {
  auto m = New(Minor(36));
  auto c = Connect(*m, kGpu);
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0"}, {"d1"}}));
  Admit(*m, "p1", kGpu, 2);
  EXPECT_THAT(StatusOf(*m, "p1"),
              ElementsAre(ResourceHealthStatus{kGpu, {{"d0", "Healthy"}, {"d1", "Healthy"}}}));
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0", "Unhealthy"}, {"d1", "Broken"}}));
  EXPECT_THAT(StatusOf(*m, "p1"),
              ElementsAre(ResourceHealthStatus{kGpu, {{"d0", "Unhealthy"}, {"d1", "Unhealthy"}}}));
}

TEST_F(ResourceHealthTest, ADeviceNoLongerListedCountsAsHealthy) {
  auto m = New(Minor(36));
  auto c = Connect(*m, kGpu);
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0"}}));
  Admit(*m, "p1", kGpu);
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0", "Unhealthy"}}));
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"other"}}));
  EXPECT_THAT(StatusOf(*m, "p1"), ElementsAre(ResourceHealthStatus{kGpu, {{"d0", "Healthy"}}}));
}

TEST_F(ResourceHealthTest, AContainerWithoutDevicesGetsNoField) {
  auto m = New(Minor(36));
  auto st = Fresh({"app"});
  m->UpdateAllocatedResourcesStatus("nobody", &st);
  EXPECT_FALSE(st[0].allocated_resources_status.has_value());
}

TEST_F(ResourceHealthTest, SameNameIsReplacedOthersAppendedNothingRemoved) {
  auto m = New(Minor(36));
  auto c = Connect(*m, kGpu);
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0", "Unhealthy"}}));
  // An unhealthy device cannot be allocated; allocate while healthy.
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0"}}));
  Admit(*m, "p1", kGpu);
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0", "Unhealthy"}}));
  std::vector<ContainerResourceStatus> st = Fresh({"app"});
  st[0].allocated_resources_status = std::vector<ResourceHealthStatus>{
      {"gone.com/fpga", {{"f0", "Healthy"}}}, {kGpu, {{"stale", "Healthy"}}}};
  m->UpdateAllocatedResourcesStatus("p1", &st);
  EXPECT_THAT(*st[0].allocated_resources_status,
              ElementsAre(ResourceHealthStatus{"gone.com/fpga", {{"f0", "Healthy"}}},
                          ResourceHealthStatus{kGpu, {{"d0", "Unhealthy"}}}));
  st[0].allocated_resources_status =
      std::vector<ResourceHealthStatus>{{"gone.com/fpga", {{"f0", "Healthy"}}}};
  m->UpdateAllocatedResourcesStatus("p1", &st);
  EXPECT_THAT(*st[0].allocated_resources_status,
              ElementsAre(ResourceHealthStatus{"gone.com/fpga", {{"f0", "Healthy"}}},
                          ResourceHealthStatus{kGpu, {{"d0", "Unhealthy"}}}));
}

TEST_F(ResourceHealthTest, HealthChangesAndReappearingDevicesQueueTheOwningPod) {
  auto m = New(Minor(36));
  auto c = Connect(*m, kGpu);
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0"}, {"d1"}}));
  Admit(*m, "p1", kGpu, 2);
  EXPECT_THAT(Drain(*m), IsEmpty());
  // The same list again: nothing changed.
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0"}, {"d1"}}));
  EXPECT_THAT(Drain(*m), IsEmpty());
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0", "Unhealthy"}, {"d1"}}));
  EXPECT_THAT(Drain(*m), ElementsAre(ElementsAre("p1")));
  // d1 vanishes (no update), then comes back with the same health (update).
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0", "Unhealthy"}}));
  EXPECT_THAT(Drain(*m), IsEmpty());
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0", "Unhealthy"}, {"d1"}}));
  EXPECT_THAT(Drain(*m), ElementsAre(ElementsAre("p1")));
  // A free device changing health concerns nobody.
  m->PluginListAndWatchReceiver(kGpu, c.get(),
                                Devices({{"d0", "Unhealthy"}, {"d1"}, {"free", "Unhealthy"}}));
  EXPECT_THAT(Drain(*m), IsEmpty());
}

TEST_F(ResourceHealthTest, GateOffQueuesNothing) {
  auto m = New(Minor(35), /*gate=*/false);
  auto c = Connect(*m, kGpu);
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0"}}));
  Admit(*m, "p1", kGpu);
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0", "Unhealthy"}}));
  EXPECT_EQ(m->Updates().size(), 0u);
}

TEST_F(ResourceHealthTest, DisconnectKeepsTheLastReportedHealthAndQueuesNothing) {
  auto m = New(Minor(36));
  auto c = Connect(*m, kGpu);
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0"}, {"d1"}}));
  Admit(*m, "p1", kGpu, 2);
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0", "Unhealthy"}, {"d1"}}));
  (void)Drain(*m);
  m->PluginDisconnected(kGpu, c.get());
  EXPECT_EQ(m->GetCapacity().allocatable[kGpu], 0);  // every device unhealthy for scheduling
  EXPECT_THAT(Drain(*m), IsEmpty());
  EXPECT_THAT(StatusOf(*m, "p1"),
              ElementsAre(ResourceHealthStatus{kGpu, {{"d0", "Unhealthy"}, {"d1", "Healthy"}}}));
  // The plugin comes back with the same list: no health changed.
  auto c2 = Connect(*m, kGpu);
  m->PluginListAndWatchReceiver(kGpu, c2.get(), Devices({{"d0", "Unhealthy"}, {"d1"}}));
  EXPECT_THAT(Drain(*m), IsEmpty());
}

TEST_F(ResourceHealthTest, AFullChannelDropsTheUpdateAndLogs) {
  auto m = New(Minor(36));
  auto c = Connect(*m, kGpu);
  m->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0"}}));
  Admit(*m, "p1", kGpu);
  for (int i = 0; i < 101; ++i) {
    m->PluginListAndWatchReceiver(kGpu, c.get(),
                                  Devices({{"d0", i % 2 ? "Healthy" : "Unhealthy"}}));
  }
  EXPECT_EQ(m->Updates().size(), kDeviceUpdateChannelCapacity);
  bool logged = false;
  for (const std::string& l : log::RecentLines(20)) {
    logged |= l.find("device update channel is full") != std::string::npos &&
              l.find("podsToUpdate=\"[p1]\"") != std::string::npos;
  }
  EXPECT_TRUE(logged);
  // The health itself is stored all the same (the last list was Unhealthy).
  EXPECT_THAT(StatusOf(*m, "p1"), ElementsAre(ResourceHealthStatus{kGpu, {{"d0", "Unhealthy"}}}));
}

// Identical device IDs under two resources: pod "a" holds nic "dev-0", pod
// "b" holds gpu "dev-0". The gpu's dev-0 turns unhealthy.
class LookupTest : public ResourceHealthTest {
 protected:
  std::vector<std::vector<std::string>> FlipGpu(int minor) {
    auto m = New(Minor(minor));
    auto nic = Connect(*m, kNic);
    auto gpu = Connect(*m, kGpu);
    m->PluginListAndWatchReceiver(kNic, nic.get(), Devices({{"dev-0"}}));
    m->PluginListAndWatchReceiver(kGpu, gpu.get(), Devices({{"dev-0"}}));
    Admit(*m, "a", kNic);
    Admit(*m, "b", kGpu);
    m->PluginListAndWatchReceiver(kGpu, gpu.get(), Devices({{"dev-0", "Unhealthy"}}));
    // Whoever is resynced, the status computed for b is right.
    EXPECT_THAT(StatusOf(*m, "b"),
                ElementsAre(ResourceHealthStatus{kGpu, {{"dev-0", "Unhealthy"}}}));
    EXPECT_THAT(StatusOf(*m, "a"), ElementsAre(ResourceHealthStatus{kNic, {{"dev-0", "Healthy"}}}));
    return Drain(*m);
  }
};

TEST_F(LookupTest, Before137TheIdAloneFindsTheFirstHolderUnderAnyResource) {
  // podDevices in order: pod "a" comes first and holds an (other) dev-0.
  EXPECT_THAT(FlipGpu(36), ElementsAre(ElementsAre("a")));
}

TEST_F(LookupTest, From137TheLookupIsScopedByResource) {
  EXPECT_THAT(FlipGpu(37), ElementsAre(ElementsAre("b")));
}

TEST(PodAndContainerForDeviceTest, NobodyHoldsIt) {
  PodDevices pd;
  EXPECT_FALSE(PodAndContainerForDevice(pd, nullptr, "x").has_value());
  pd.Insert("u", "c", kGpu,
            DevicesPerNUMA(
                std::map<int64_t, checkpoint::DeviceList>{{-1, std::vector<std::string>{"x"}}}),
            v1beta1::ContainerAllocateResponse());
  const std::string nic = kNic;
  EXPECT_FALSE(PodAndContainerForDevice(pd, &nic, "x").has_value());
  EXPECT_EQ(*PodAndContainerForDevice(pd, nullptr, "x"),
            std::make_pair(std::string("u"), std::string("c")));
}

}  // namespace
}  // namespace devmgr::manager
