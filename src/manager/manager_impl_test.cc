// Device state: connect, ListAndWatch, disconnect, GetCapacity, Stop
// (devicemanager manager.go).
#include "manager/manager_impl.h"

#include <thread>

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/manager_testutil.h"

namespace devmgr::manager {
namespace {

using testing::Dev;
using testing::Devices;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

class DeviceStateTest : public testing::ManagerFixture {};

TEST_F(DeviceStateTest, DevicesAppearOnlyWithTheFirstListAndWatchResponse) {
  auto m = NewImpl();
  auto c = Connect(*m, "vendor.com/gpu");
  EXPECT_EQ(c->calls().options, 1);
  CapacityResult cap = m->GetCapacity();
  EXPECT_THAT(cap.capacity, IsEmpty());
  EXPECT_THAT(cap.allocatable, IsEmpty());
  EXPECT_THAT(m->Snapshot()[0].has_endpoint, true);

  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(), Devices({{"a"}, {"b"}}));
  cap = m->GetCapacity();
  EXPECT_EQ(cap.capacity["vendor.com/gpu"], 2);
  EXPECT_EQ(cap.allocatable["vendor.com/gpu"], 2);
  EXPECT_THAT(cap.removed, IsEmpty());
}

TEST_F(DeviceStateTest, OptionsComeFromGetDevicePluginOptions) {
  auto m = NewImpl();
  auto c = Connect(*m, "vendor.com/gpu", /*preferred=*/true, /*prestart=*/true);
  auto o = m->EndpointOptionsForTest("vendor.com/gpu");
  ASSERT_TRUE(o.has_value());
  EXPECT_TRUE(o->get_preferred_allocation_available());
  EXPECT_TRUE(o->pre_start_required());
}

TEST_F(DeviceStateTest, OptionsFailureFailsTheConnectionAndTheResourceNeverAppears) {
  auto m = NewImpl();
  auto c = std::make_shared<FakePluginClient>();
  c->options = absl::UnknownError("rpc error: code = Unknown desc = boom");
  absl::Status s = m->PluginConnected("vendor.com/gpu", c);
  EXPECT_EQ(s.message(),
            "failed to get device plugin options: rpc error: code = Unknown desc = boom");
  EXPECT_THAT(m->Snapshot(), IsEmpty());
  EXPECT_THAT(m->GetCapacity().capacity, IsEmpty());
}

TEST_F(DeviceStateTest, HealthFlipsChangeAllocatableButNotCapacity) {
  auto m = NewImpl();
  auto c = Connect(*m, "vendor.com/gpu");
  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(), Devices({{"a"}, {"b"}, {"c"}}));
  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(),
                                Devices({{"a"}, {"b", "Unhealthy"}, {"c"}}));
  CapacityResult cap = m->GetCapacity();
  EXPECT_EQ(cap.capacity["vendor.com/gpu"], 3);
  EXPECT_EQ(cap.allocatable["vendor.com/gpu"], 2);
  // Anything but exactly "Healthy" is unhealthy.
  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(),
                                Devices({{"a", "healthy"}, {"b"}, {"c"}}));
  cap = m->GetCapacity();
  EXPECT_EQ(cap.capacity["vendor.com/gpu"], 3);
  EXPECT_EQ(cap.allocatable["vendor.com/gpu"], 2);
  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(), Devices({{"a"}, {"b"}, {"c"}}));
  cap = m->GetCapacity();
  EXPECT_EQ(cap.allocatable["vendor.com/gpu"], 3);
}

TEST_F(DeviceStateTest, DuplicatesAreHandledAsTheKubeletDoes) {
  auto m = NewImpl();
  auto c = Connect(*m, "vendor.com/gpu");
  m->PluginListAndWatchReceiver(
      "vendor.com/gpu", c.get(),
      Devices({{"a", "Healthy", {0}}, {"a", "Unhealthy", {1}}, {"b"}, {"b"}}));
  auto snap = m->Snapshot();
  ASSERT_EQ(snap.size(), 1u);
  // "a" is in both sets; the last occurrence wins in allDevices.
  EXPECT_THAT(snap[0].healthy, ElementsAre("a", "b"));
  EXPECT_THAT(snap[0].unhealthy, ElementsAre("a"));
  ASSERT_EQ(snap[0].devices.size(), 2u);
  EXPECT_EQ(snap[0].devices[0].health, "Unhealthy");
  EXPECT_EQ(*snap[0].devices[0].numa_nodes, std::vector<int64_t>{1});
  CapacityResult cap = m->GetCapacity();
  EXPECT_EQ(cap.capacity["vendor.com/gpu"], 3);
  EXPECT_EQ(cap.allocatable["vendor.com/gpu"], 2);
}

TEST_F(DeviceStateTest, DeviceIdsAreArbitraryBytes) {
  auto m = NewImpl();
  auto c = Connect(*m, "vendor.com/gpu");
  const std::string weird("a\0b\x01\n=\xff", 7);
  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(), Devices({{weird}, {"a"}}));
  auto snap = m->Snapshot();
  EXPECT_THAT(snap[0].healthy, UnorderedElementsAre(weird, "a"));
  EXPECT_EQ(m->GetCapacity().allocatable["vendor.com/gpu"], 2);
}

TEST_F(DeviceStateTest, DisconnectAfterNDevicesThenRemovalAfterTheGracePeriod) {
  auto m = NewImpl();
  auto c = Connect(*m, "vendor.com/gpu");
  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(), testing::HealthyDevices(4));
  m->PluginDisconnected("vendor.com/gpu", c.get());
  CapacityResult cap = m->GetCapacity();
  EXPECT_EQ(cap.capacity["vendor.com/gpu"], 4);
  EXPECT_EQ(cap.allocatable["vendor.com/gpu"], 0);
  auto snap = m->Snapshot();
  EXPECT_TRUE(snap[0].stopped);
  EXPECT_EQ(snap[0].stopped_since, clock_.Now());

  // Exactly 5 minutes is not yet expired (strictly greater).
  clock_.Advance(absl::Minutes(5));
  EXPECT_EQ(m->GetCapacity().capacity["vendor.com/gpu"], 4);
  const std::string before = dir_.Read("kubelet_internal_checkpoint");
  EXPECT_NE(before.find("vendor.com/gpu"), std::string::npos);

  clock_.Advance(absl::Seconds(1));
  cap = m->GetCapacity();
  EXPECT_THAT(cap.removed, ElementsAre("vendor.com/gpu"));
  EXPECT_THAT(cap.capacity, IsEmpty());
  EXPECT_THAT(cap.allocatable, IsEmpty());
  // The checkpoint was rewritten without the resource.
  EXPECT_EQ(dir_.Read("kubelet_internal_checkpoint").find("vendor.com/gpu"), std::string::npos);
  // A second call removes nothing more.
  EXPECT_THAT(m->GetCapacity().removed, IsEmpty());
}

TEST_F(DeviceStateTest, ListAndWatchFailingAtOnceLeavesTheResourceListedAtZero) {
  auto m = NewImpl();
  auto c = Connect(*m, "vendor.com/gpu");
  m->PluginDisconnected("vendor.com/gpu", c.get());
  CapacityResult cap = m->GetCapacity();
  // Only an (empty) unhealthy entry: capacity 0 and no allocatable entry.
  ASSERT_EQ(cap.capacity.count("vendor.com/gpu"), 1u);
  EXPECT_EQ(cap.capacity["vendor.com/gpu"], 0);
  EXPECT_EQ(cap.allocatable.count("vendor.com/gpu"), 0u);
  auto snap = m->Snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_FALSE(snap[0].allocatable.has_value());
  clock_.Advance(absl::Minutes(5) + absl::Seconds(1));
  EXPECT_THAT(m->GetCapacity().removed, ElementsAre("vendor.com/gpu"));
  EXPECT_THAT(m->Snapshot(), IsEmpty());
}

TEST_F(DeviceStateTest, ReRegistrationLastWriterWinsAndTheNewListReplaces) {
  auto m = NewImpl();
  auto c1 = Connect(*m, "vendor.com/gpu");
  m->PluginListAndWatchReceiver("vendor.com/gpu", c1.get(), testing::HealthyDevices(2));
  auto c2 = std::make_shared<FakePluginClient>("/tmp/p2.sock");
  ASSERT_OK(m->PluginConnected("vendor.com/gpu", c2));
  EXPECT_EQ(m->GetCapacity().allocatable["vendor.com/gpu"], 2);
  EXPECT_EQ(m->Snapshot()[0].endpoint_socket, "/tmp/p2.sock");
  m->PluginListAndWatchReceiver("vendor.com/gpu", c2.get(), testing::HealthyDevices(1));
  EXPECT_EQ(m->GetCapacity().allocatable["vendor.com/gpu"], 1);
  // The old client's stream still overwrites the set.
  m->PluginListAndWatchReceiver("vendor.com/gpu", c1.get(), testing::HealthyDevices(3));
  EXPECT_EQ(m->GetCapacity().allocatable["vendor.com/gpu"], 3);
}

TEST_F(DeviceStateTest, OldClientDisconnectStopsTheNewEndpointUntil137) {
  for (const char* v : {"1.33", "1.36", "1.37"}) {
    SCOPED_TRACE(v);
    auto m = NewImpl(testing::ProfileFor(v));
    auto c1 = Connect(*m, "vendor.com/gpu", false, false, "/tmp/old.sock");
    auto c2 = Connect(*m, "vendor.com/gpu", false, false, "/tmp/new.sock");
    m->PluginListAndWatchReceiver("vendor.com/gpu", c2.get(), testing::HealthyDevices(2));
    m->PluginDisconnected("vendor.com/gpu", c1.get());
    bool fixed = std::string(v) == "1.37";
    EXPECT_EQ(m->GetCapacity().allocatable["vendor.com/gpu"], fixed ? 2 : 0);
    EXPECT_EQ(m->Snapshot()[0].stopped, !fixed);
  }
}

TEST_F(DeviceStateTest, Profile137EndpointsPerSocket) {
  auto m = NewImpl(testing::ProfileFor("1.37"));
  auto a = Connect(*m, "vendor.com/gpu", false, false, "/tmp/a.sock");
  auto b = Connect(*m, "vendor.com/gpu", /*preferred=*/true, false, "/tmp/b.sock");
  // The newest is the primary: its options count.
  EXPECT_TRUE(m->EndpointOptionsForTest("vendor.com/gpu")->get_preferred_allocation_available());
  // A connected (resource, socket) pair: options asked, then refused.
  auto again = std::make_shared<FakePluginClient>("/tmp/a.sock");
  const absl::Status st = m->PluginConnected("vendor.com/gpu", again);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(st.message(), "device plugin already connected: /tmp/a.sock");
  EXPECT_EQ(again->calls().options, 1);
  // Any endpoint's list replaces the set.
  m->PluginListAndWatchReceiver("vendor.com/gpu", a.get(), testing::HealthyDevices(3));
  EXPECT_EQ(m->GetCapacity().allocatable["vendor.com/gpu"], 3);
  // The primary goes: a is promoted, devices stay healthy.
  m->PluginDisconnected("vendor.com/gpu", b.get());
  EXPECT_EQ(m->GetCapacity().allocatable["vendor.com/gpu"], 3);
  EXPECT_EQ(m->Snapshot()[0].endpoint_socket, "/tmp/a.sock");
  EXPECT_FALSE(m->Snapshot()[0].stopped);
  // An unknown socket is a no-op; the last endpoint makes them unhealthy.
  m->PluginDisconnected("vendor.com/gpu", b.get());
  EXPECT_EQ(m->GetCapacity().allocatable["vendor.com/gpu"], 3);
  m->PluginDisconnected("vendor.com/gpu", a.get());
  EXPECT_EQ(m->GetCapacity().allocatable["vendor.com/gpu"], 0);
  EXPECT_TRUE(m->Snapshot()[0].stopped);
  // The socket is free again.
  EXPECT_OK(m->PluginConnected("vendor.com/gpu", again));
}

TEST_F(DeviceStateTest, VanishedDevicesKeepTheirAllocation) {
  auto m = NewImpl();
  ASSERT_OK(m->Start(StartOpts()));
  SetActive({"p1"});
  auto c = Connect(*m, "vendor.com/gpu");
  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(), testing::HealthyDevices(2));
  auto pod = testing::MakePod("p1", {testing::Ctr("c", {{"vendor.com/gpu", 2}})});
  ASSERT_OK(m->Allocate(pod, pod.containers[0]));
  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(), Devices({}));
  EXPECT_EQ(m->AllocatedDevicesForTest()["vendor.com/gpu"].size(), 2u);
  EXPECT_TRUE(m->PodDevicesForTest().HasPod("p1"));
}

TEST_F(DeviceStateTest, StopDisconnectsEveryConnectedEndpointAndIsIdempotent) {
  auto m = NewImpl();
  m->Stop();  // safe without Start
  m = NewImpl();
  ASSERT_OK(m->Start(StartOpts()));
  auto c = Connect(*m, "vendor.com/gpu");
  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(), testing::HealthyDevices(2));
  const std::string before = dir_.Read("kubelet_internal_checkpoint");
  m->Stop();
  m->Stop();
  CapacityResult cap = m->GetCapacity();
  EXPECT_EQ(cap.capacity["vendor.com/gpu"], 2);
  EXPECT_EQ(cap.allocatable["vendor.com/gpu"], 0);
  // Stop does not write the checkpoint.
  EXPECT_EQ(dir_.Read("kubelet_internal_checkpoint"), before);
}

TEST_F(DeviceStateTest, ChangeCallbackRunsWithoutTheLock) {
  auto m = NewImpl();
  int calls = 0;
  ManagerImpl* raw = m.get();
  m->SetChangeCallback([&] {
    ++calls;
    raw->Snapshot();  // would deadlock if the manager's lock were held
  });
  auto c = Connect(*m, "vendor.com/gpu");
  m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(), testing::HealthyDevices(1));
  m->PluginDisconnected("vendor.com/gpu", c.get());
  EXPECT_EQ(calls, 3);
}

TEST_F(DeviceStateTest, ConcurrentUpdatesAndReadsAreSafe) {
  auto m = NewImpl();
  auto c = Connect(*m, "vendor.com/gpu");
  std::thread writer([&] {
    for (int i = 0; i < 50; ++i) {
      m->PluginListAndWatchReceiver("vendor.com/gpu", c.get(), testing::HealthyDevices(i % 7));
    }
  });
  for (int i = 0; i < 50; ++i) {
    m->GetCapacity();
    m->Snapshot();
  }
  writer.join();
  EXPECT_EQ(m->GetCapacity().allocatable["vendor.com/gpu"], 49 % 7);
}

}  // namespace
}  // namespace devmgr::manager
