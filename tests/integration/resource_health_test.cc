// Device health in pod status (KEP-4680) end to end: the reference plugin
// flips a device's health over a real ListAndWatch stream, and the pod's
// allocatedResourcesStatus follows within one update when the
// ResourceHealthStatus gate is on (1.36 default, or 1.35 with the gate set),
// and never appears when it is off (1.35 default).
#include "manager/resource_health.h"

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/test_env.h"

namespace devmgr::testutil {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace resource_health_test {

using manager::ResourceHealthStatus;

constexpr char kGpu[] = "example.com/gpu";
constexpr char kPlugin[] = R"(
resource: example.com/gpu
devices:
  - {id: gpu-0}
  - {id: gpu-1}
  - {id: gpu-2}
)";

// The profile of `version`, with its minor kept even where the profile
// table still folds versions together.
Profile ProfileOf(const std::string& version) {
  Profile p = *ProfileForVersion(version);
  p.minor = std::stoi(version.substr(2));
  return p;
}

class ResourceHealthTest : public ::testing::Test {
 protected:
  void Start(const std::string& version, const std::string& feature_gates = "") {
    node::NodeOptions o;
    o.plugin_dir = dir_.path();
    o.profile = ProfileOf(version);
    o.clock = &clock_;
    o.fsync = false;
    o.dial_timeout = absl::Seconds(2);
    EXPECT_OK(o.profile.gates.Set(feature_gates));
    o.resource_health_status = manager::ResourceHealthStatusDefault(o.profile);
    o.resync_jitter = [] { return 0.0; };
    node_ = std::make_unique<node::Node>(o);
    node_->manager().SetChangeCallback([this] { changes_.Notify(); });
    node_->pod_status().SetChangeCallback([this] { changes_.Notify(); });
    pods_ = std::make_unique<node::PodManager>(node_.get());
    ASSERT_OK(node_->Start(pods_->MakeStartOptions(false)));
    plugin_ = MakePlugin(kPlugin, dir_.path());
    ASSERT_OK(plugin_->Start());
    ASSERT_TRUE(changes_.WaitFor([&] { return Find(*node_, kGpu).allocatable == 3; }));
    rec_ = AdmitOrFail(*pods_, MakePod("train", {"init:setup:1", "main:2", "log:0"}));
    ASSERT_EQ(rec_.phase, pod::Phase::kRunning) << rec_.message;
    held_ = ContainerDevices(*node_, rec_.pod.uid, "main", kGpu);
    ASSERT_EQ(held_.size(), 2u);
  }
  void TearDown() override {
    if (plugin_) plugin_->Stop();
    if (node_) node_->Stop();
  }
  // The container's allocatedResourcesStatus (nullopt: none).
  std::optional<std::vector<ResourceHealthStatus>> Status(const std::string& container) {
    auto all = node_->PodResourceStatuses();
    auto it = all.find(rec_.pod.uid);
    if (it == all.end()) return std::nullopt;
    for (const auto& c : it->second) {
      if (c.name == container) return c.allocated_resources_status;
    }
    return std::nullopt;
  }
  std::vector<ResourceHealthStatus> Want(const std::string& unhealthy) {
    ResourceHealthStatus rs{kGpu, {}};
    for (const std::string& id : held_) {
      rs.resources.push_back({id, id == unhealthy ? "Unhealthy" : "Healthy"});
    }
    return {rs};
  }
  // Flips one held device and waits until the kubelet has the new list.
  void FlipHeldDevice() {
    ASSERT_TRUE(plugin_->SetHealth(held_[0], "Unhealthy"));
    ASSERT_TRUE(changes_.WaitFor([&] { return Find(*node_, kGpu).allocatable == 2; }));
  }

  TempDir dir_;
  FakeClock clock_;
  ChangeSignal changes_;
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<node::PodManager> pods_;
  std::unique_ptr<plugin::SamplePlugin> plugin_;
  node::PodRecord rec_;
  std::vector<std::string> held_;
};

TEST_F(ResourceHealthTest, On136AnUnhealthyDeviceShowsWithinOneUpdate) {
  Start("1.36");
  EXPECT_EQ(Status("main"), Want(""));
  // Init containers and containers without devices carry no entry.
  EXPECT_EQ(Status("log"), std::nullopt);
  const auto all = node_->PodResourceStatuses().at(rec_.pod.uid);
  ASSERT_EQ(all.size(), 2u);  // main, log: regular containers only
  const int64_t syncs = node_->pod_status().sync_count();
  FlipHeldDevice();
  // No clock movement: the device manager's queue triggers the resync.
  EXPECT_TRUE(changes_.WaitFor([&] { return Status("main") == Want(held_[0]); }))
      << manager::kHealthUnhealthy;
  EXPECT_EQ(node_->pod_status().sync_count(), syncs + 1);
}

TEST_F(ResourceHealthTest, On135TheGateIsOffByDefaultAndNothingShows) {
  Start("1.35");
  EXPECT_FALSE(node_->resource_health_status());
  EXPECT_EQ(Status("main"), std::nullopt);
  FlipHeldDevice();
  clock_.Advance(absl::Minutes(2));
  node_->pod_status().SyncDuePods();
  EXPECT_TRUE(node_->PodResourceStatuses().empty());
}

TEST_F(ResourceHealthTest, On135WithTheGateItShows) {
  Start("1.35", "ResourceHealthStatus=true");
  EXPECT_EQ(Status("main"), Want(""));
  FlipHeldDevice();
  EXPECT_TRUE(changes_.WaitFor([&] { return Status("main") == Want(held_[0]); }));
}

TEST_F(ResourceHealthTest, APluginThatGoesAwayLeavesTheLastReportedHealth) {
  Start("1.36");
  FlipHeldDevice();
  ASSERT_TRUE(changes_.WaitFor([&] { return Status("main") == Want(held_[0]); }));
  plugin_->Stop();
  ASSERT_TRUE(changes_.WaitFor([&] { return Find(*node_, kGpu).allocatable == 0; }));
  clock_.Advance(absl::Minutes(1));
  EXPECT_EQ(node_->pod_status().SyncDuePods(), 1);
  EXPECT_EQ(Status("main"), Want(held_[0]));
}

}  // namespace resource_health_test
}  // namespace devmgr::testutil
