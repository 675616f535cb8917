// PodStatusSyncer: when the kubelet regenerates a pod's device health
// (admission, the device manager's queue, the periodic resync) and which
// containers carry it.
#include "node/pod_status_sync.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/manager_testutil.h"

namespace devmgr::node {
namespace {

using manager::ContainerResourceStatus;
using manager::ResourceHealthStatus;
using manager::testing::Ctr;
using manager::testing::Devices;
using manager::testing::MakePod;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kGpu[] = "vendor.com/gpu";
constexpr char kNic[] = "vendor.com/nic";

class PodStatusSyncTest : public manager::testing::ManagerFixture {
 protected:
  void Init(int minor, double jitter = 0) {
    Profile p = ProfileForMinor(minor);
    manager::ManagerOptions o;
    o.plugin_dir = dir_.path();
    o.profile = p;
    o.clock = &clock_;
    o.fsync = false;
    o.resource_health_status = true;
    m_ = std::make_unique<manager::ManagerImpl>(o);
    ASSERT_OK(m_->Start(StartOpts()));
    PodStatusSyncOptions so;
    so.enabled = true;
    so.clock = &clock_;
    so.jitter = [jitter] { return jitter; };
    so.tick = absl::Milliseconds(20);
    so.dra_status = dra_status_;
    syncer_ = std::make_unique<PodStatusSyncer>(m_.get(), so);
    syncer_->SetChangeCallback([this] {
      absl::MutexLock l(&mu_);
      ++changes_;
    });
  }
  void TearDown() override {
    if (syncer_) syncer_->Stop();
  }
  void Admit(const pod::Pod& p) {
    {
      absl::MutexLock l(&active_mu_);
      active_.push_back(p.uid);
    }
    ASSERT_TRUE(manager::testing::AdmitPod(*m_, p).admitted);
    syncer_->PodAdmitted(p);
  }
  std::optional<std::vector<ResourceHealthStatus>> Status(const std::string& uid,
                                                          const std::string& c = "app") {
    auto all = syncer_->Statuses();
    auto it = all.find(uid);
    if (it == all.end()) return std::nullopt;
    for (const ContainerResourceStatus& cs : it->second) {
      if (cs.name == c) return cs.allocated_resources_status;
    }
    return std::nullopt;
  }
  // Waits (on change notifications) until the pod's status is `want`.
  bool WaitStatus(const std::string& uid, const std::vector<ResourceHealthStatus>& want) {
    absl::MutexLock l(&mu_);
    auto ok = [&] { return Status(uid) == want; };
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!ok()) {
      const int64_t seen = changes_;
      auto changed = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return changes_ != seen; };
      if (!mu_.AwaitWithDeadline(absl::Condition(&changed), deadline)) return ok();
    }
    return true;
  }

  // PodStatusSyncOptions::dra_status for Init.
  std::function<void(const std::string&, std::vector<ContainerResourceStatus>*)> dra_status_;
  std::unique_ptr<manager::ManagerImpl> m_;
  std::unique_ptr<PodStatusSyncer> syncer_;
  absl::Mutex mu_;
  int64_t changes_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST_F(PodStatusSyncTest, OnlyRegularContainersCarryTheStatus) {
  Init(36);
  auto c = Connect(*m_, kGpu);
  m_->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0"}, {"d1"}, {"d2"}}));
  Admit(MakePod("p1", {Ctr("app", {{kGpu, 1}}), Ctr("plain", {})},
                {Ctr("init", {{kGpu, 1}}), Ctr("sidecar", {{kGpu, 1}}, /*restartable=*/true)}));
  auto all = syncer_->Statuses();
  ASSERT_EQ(all.count("p1"), 1u);
  ASSERT_THAT(all["p1"], ::testing::SizeIs(2));
  EXPECT_EQ(all["p1"][0].name, "app");
  ASSERT_TRUE(all["p1"][0].allocated_resources_status.has_value());
  EXPECT_EQ(all["p1"][0].allocated_resources_status->at(0).name, kGpu);
  EXPECT_EQ(all["p1"][1].name, "plain");
  EXPECT_FALSE(all["p1"][1].allocated_resources_status.has_value());
}

TEST_F(PodStatusSyncTest, AQueuedUpdateResyncsThePodAtOnce) {
  Init(36);
  auto c = Connect(*m_, kGpu);
  m_->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0"}}));
  Admit(MakePod("p1", {Ctr("app", {{kGpu, 1}})}));
  EXPECT_EQ(Status("p1"), (std::vector<ResourceHealthStatus>{{kGpu, {{"d0", "Healthy"}}}}));
  syncer_->Start([this] {
    absl::MutexLock l(&active_mu_);
    return active_;
  });
  m_->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0", "Unhealthy"}}));
  EXPECT_TRUE(WaitStatus("p1", {{kGpu, {{"d0", "Unhealthy"}}}}));
  EXPECT_EQ(m_->Updates().size(), 0u);
}

// The DRA manager's entries come after the device manager's, on the same
// statuses; its own channel resyncs the pods it names, as the device
// manager's does; a PLEG event (SyncNow) syncs a known pod at once.
TEST_F(PodStatusSyncTest, DraEntriesFollowTheDeviceManagersAndItsChannel) {
  absl::Mutex hmu;
  std::string dra_health = "Healthy";
  dra_status_ = [&](const std::string& uid, std::vector<ContainerResourceStatus>* statuses) {
    absl::MutexLock l(&hmu);
    if (uid != "p1") return;
    ContainerResourceStatus& cs = (*statuses)[0];
    if (!cs.allocated_resources_status) cs.allocated_resources_status.emplace();
    auto& list = *cs.allocated_resources_status;
    list.erase(std::remove_if(list.begin(), list.end(),
                              [](const ResourceHealthStatus& e) { return e.name == "claim:c"; }),
               list.end());
    list.push_back({"claim:c", {{"drv/pool/dev", dra_health, "msg"}}});
  };
  Init(36);
  auto c = Connect(*m_, kGpu);
  m_->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0"}}));
  Admit(MakePod("p1", {Ctr("app", {{kGpu, 1}})}));
  EXPECT_EQ(Status("p1"),
            (std::vector<ResourceHealthStatus>{{kGpu, {{"d0", "Healthy"}}},
                                               {"claim:c", {{"drv/pool/dev", "Healthy", "msg"}}}}));
  syncer_->Start([this] {
    absl::MutexLock l(&active_mu_);
    return active_;
  });
  {
    absl::MutexLock l(&hmu);
    dra_health = "Unhealthy";
  }
  EXPECT_TRUE(syncer_->SendDraUpdate({"p1", "unknown-pod"}));
  EXPECT_TRUE(WaitStatus(
      "p1", {{kGpu, {{"d0", "Healthy"}}}, {"claim:c", {{"drv/pool/dev", "Unhealthy", "msg"}}}}));
  {
    absl::MutexLock l(&hmu);
    dra_health = "Unknown";
  }
  const int64_t before = syncer_->sync_count();
  syncer_->SyncNow("p1");
  syncer_->SyncNow("never-admitted");
  EXPECT_EQ(syncer_->sync_count(), before + 1);
  EXPECT_EQ(Status("p1"),
            (std::vector<ResourceHealthStatus>{{kGpu, {{"d0", "Healthy"}}},
                                               {"claim:c", {{"drv/pool/dev", "Unknown", "msg"}}}}));
}

// make(chan, 100) with a non-blocking send: the 101st element is dropped.
TEST_F(PodStatusSyncTest, AFullDraChannelDropsTheUpdate) {
  Init(36);  // the worker is not started: nothing takes the elements
  for (size_t i = 0; i < kDraUpdateChannelCapacity; ++i) {
    ASSERT_TRUE(syncer_->SendDraUpdate({"p" + std::to_string(i)}));
  }
  EXPECT_FALSE(syncer_->SendDraUpdate({"p-late"}));
  EXPECT_EQ(syncer_->dra_queued(), kDraUpdateChannelCapacity);
}

TEST_F(PodStatusSyncTest, PeriodicResyncFollowsTheClockWithTheKubeletsJitter) {
  Init(36, /*jitter=*/1.0);  // the latest: 1.5 x 1m
  auto c = Connect(*m_, kGpu);
  m_->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0"}}));
  Admit(MakePod("p1", {Ctr("app", {{kGpu, 1}})}));
  const int64_t after_admission = syncer_->sync_count();
  clock_.Advance(absl::Seconds(89));
  EXPECT_EQ(syncer_->SyncDuePods(), 0);
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(syncer_->SyncDuePods(), 1);
  EXPECT_EQ(syncer_->sync_count(), after_admission + 1);
  // Re-queued 90 s after that sync.
  clock_.Advance(absl::Seconds(60));
  EXPECT_EQ(syncer_->SyncDuePods(), 0);
}

TEST_F(PodStatusSyncTest, InactivePodsAreNeitherResyncedNorUpdated) {
  Init(36);
  auto c = Connect(*m_, kGpu);
  m_->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0"}}));
  Admit(MakePod("p1", {Ctr("app", {{kGpu, 1}})}));
  syncer_->Start([] { return std::vector<std::string>{}; });  // p1 ended
  syncer_->Stop();
  m_->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0", "Unhealthy"}}));
  syncer_->HandleUpdate(*m_->Updates().Receive(absl::ZeroDuration()));
  clock_.Advance(absl::Minutes(5));
  EXPECT_EQ(syncer_->SyncDuePods(), 0);
  // It keeps its last status.
  EXPECT_EQ(Status("p1"), (std::vector<ResourceHealthStatus>{{kGpu, {{"d0", "Healthy"}}}}));
}

TEST_F(PodStatusSyncTest, ADeletedPodIsForgottenAndNotSyncedAgain) {
  Init(36);
  auto c = Connect(*m_, kGpu);
  m_->PluginListAndWatchReceiver(kGpu, c.get(), Devices({{"d0"}, {"d1"}}));
  Admit(MakePod("p1", {Ctr("app", {{kGpu, 1}})}));
  Admit(MakePod("p2", {Ctr("app", {{kGpu, 1}})}));
  ASSERT_EQ(syncer_->pod_count(), 2u);
  int64_t changes_before;
  {
    absl::MutexLock l(&mu_);
    changes_before = changes_;
  }
  syncer_->PodDeleted("p1");
  syncer_->PodDeleted("never-admitted");  // ignored
  EXPECT_EQ(syncer_->pod_count(), 1u);
  EXPECT_EQ(Status("p1"), std::nullopt);
  EXPECT_TRUE(Status("p2").has_value());  // the other pod keeps its status
  {
    absl::MutexLock l(&mu_);
    EXPECT_EQ(changes_, changes_before + 1);  // status readers are told once
  }
  // Neither a queued update nor its periodic resync brings it back.
  const int64_t syncs = syncer_->sync_count();
  syncer_->HandleUpdate({"p1"});
  clock_.Advance(absl::Minutes(2));
  EXPECT_EQ(syncer_->SyncDuePods(), 1);  // p2 only
  EXPECT_EQ(syncer_->sync_count(), syncs + 1);
  EXPECT_EQ(syncer_->pod_count(), 1u);
  EXPECT_EQ(Status("p1"), std::nullopt);
}

// Pod "a" holds nic dev-0, pod "b" gpu dev-0; the gpu's dev-0 turns unhealthy.
std::vector<ResourceHealthStatus> Gpu(const char* h) { return {{kGpu, {{"dev-0", h}}}}; }

TEST_F(PodStatusSyncTest, Before137TheWrongPodIsResyncedAndTheRightOneWaitsForItsPeriodicSync) {
  Init(36);
  auto nic = Connect(*m_, kNic);
  auto gpu = Connect(*m_, kGpu);
  m_->PluginListAndWatchReceiver(kNic, nic.get(), Devices({{"dev-0"}}));
  m_->PluginListAndWatchReceiver(kGpu, gpu.get(), Devices({{"dev-0"}}));
  Admit(MakePod("a", {Ctr("app", {{kNic, 1}})}));
  Admit(MakePod("b", {Ctr("app", {{kGpu, 1}})}));
  const int64_t before = syncer_->sync_count();
  m_->PluginListAndWatchReceiver(kGpu, gpu.get(), Devices({{"dev-0", "Unhealthy"}}));
  auto update = m_->Updates().Receive(absl::ZeroDuration());
  ASSERT_TRUE(update.has_value());
  EXPECT_THAT(*update, ElementsAre("a"));
  syncer_->HandleUpdate(*update);
  EXPECT_EQ(syncer_->sync_count(), before + 1);
  EXPECT_EQ(Status("b"), Gpu("Healthy"));  // stale
  clock_.Advance(absl::Minutes(1));
  EXPECT_EQ(syncer_->SyncDuePods(), 2);
  EXPECT_EQ(Status("b"), Gpu("Unhealthy"));
}

TEST_F(PodStatusSyncTest, From137TheOwningPodIsResynced) {
  Init(37);
  auto nic = Connect(*m_, kNic);
  auto gpu = Connect(*m_, kGpu);
  m_->PluginListAndWatchReceiver(kNic, nic.get(), Devices({{"dev-0"}}));
  m_->PluginListAndWatchReceiver(kGpu, gpu.get(), Devices({{"dev-0"}}));
  Admit(MakePod("a", {Ctr("app", {{kNic, 1}})}));
  Admit(MakePod("b", {Ctr("app", {{kGpu, 1}})}));
  m_->PluginListAndWatchReceiver(kGpu, gpu.get(), Devices({{"dev-0", "Unhealthy"}}));
  auto update = m_->Updates().Receive(absl::ZeroDuration());
  ASSERT_TRUE(update.has_value());
  EXPECT_THAT(*update, ElementsAre("b"));
  syncer_->HandleUpdate(*update);
  EXPECT_EQ(Status("b"), Gpu("Unhealthy"));
}

TEST(PodStatusSyncDisabledTest, GateOffNoStatusAtAll) {
  manager::testing::TempDir dir;
  manager::ManagerOptions o;
  o.plugin_dir = dir.path();
  o.fsync = false;
  manager::ManagerImpl m(o);
  PodStatusSyncer s(&m, PodStatusSyncOptions{});
  s.Start(nullptr);
  s.PodAdmitted(MakePod("p1", {Ctr("app", {{kGpu, 1}})}));
  EXPECT_THAT(s.Statuses(), IsEmpty());
  s.Stop();
}

}  // namespace
}  // namespace devmgr::node
