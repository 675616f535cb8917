// The DRAResourceHealth client over real unix sockets: a fake driver
// (dra/fake_driver_testutil.h) registered with the DRA plugin handler, the
// handler handing its instances to HealthStreams. Facts (kubelet
// pkg/kubelet/cm/dra/plugin dra_plugin_manager.go and manager.go
// HandleWatchResourcesStream at v1.34.4-v1.37.2): up to 1.36 the stream is
// opened for every plugin with the gate on and speaks v1alpha1; 1.37 only
// when advertised, v1 first, and stops after Unimplemented; the stream is
// opened again 5 s (wait.UntilWithContext) after it ended; its end clears
// the driver's health; deregistration cancels it.
#include "dra/health_stream.h"

#include <memory>
#include <string>
#include <vector>

#include "common/status_testutil.h"
#include "common/temp_dir_testutil.h"
#include "dra/dra_plugin_handler.h"
#include "dra/fake_driver_testutil.h"
#include "dra/timers_testutil.h"
#include "gtest/gtest.h"

namespace devmgr::dra {
namespace {

constexpr char kDriver[] = "drv.example.com";
const std::vector<std::string> kPlain = {"v1.DRAPlugin"};
const std::vector<std::string> kAlpha = {"v1.DRAPlugin", "v1alpha1.DRAResourceHealth"};
const std::vector<std::string> kBoth = {"v1.DRAPlugin", "v1alpha1.DRAResourceHealth",
                                        "v1.DRAResourceHealth"};
constexpr absl::Duration kWait = absl::Seconds(20);

::v1alpha1::NodeWatchResourcesResponse List(
    std::vector<std::pair<std::string, ::v1alpha1::HealthStatus>> devices,
    const std::string& message = "") {
  ::v1alpha1::NodeWatchResourcesResponse r;
  for (const auto& [name, health] : devices) {
    ::v1alpha1::DeviceHealth* d = r.add_devices();
    d->mutable_device()->set_pool_name("pool");
    d->mutable_device()->set_device_name(name);
    d->set_health(health);
    d->set_last_updated_time(1);
    d->set_message(message);
  }
  return r;
}

class HealthStreamTest : public testing::Test {
 protected:
  // A node of kubelet 1.<minor>: cache, streams and handler; the driver
  // serves the health versions given.
  void StartNode(int minor, bool serve_v1alpha1, bool serve_v1,
                 absl::Duration retry = absl::Milliseconds(20)) {
    driver_.EnableHealth(serve_v1alpha1, serve_v1);
    ASSERT_TRUE(driver_.Start());
    cache_ = std::make_unique<HealthInfoCache>(nullptr);
    HealthStreamsOptions so;
    so.kubelet_minor = minor;
    so.enabled = true;
    so.retry_period = retry;
    so.cache = cache_.get();
    so.on_change = [this](const std::string& driver, const std::vector<DeviceHealth>& changed) {
      absl::MutexLock l(&mu_);
      for (const DeviceHealth& d : changed) {
        changes_.push_back(driver + ":" + d.device_name + "=" + std::string(HealthName(d.health)));
      }
    };
    streams_ = std::make_unique<HealthStreams>(std::move(so));
    DraPluginHandlerOptions o;
    o.profile = ProfileForMinor(minor);
    o.timers = &timers_;
    o.health = streams_.get();
    o.connection_recheck = absl::Milliseconds(50);
    absl::StatusOr<std::unique_ptr<DraPluginHandler>> h = DraPluginHandler::Create(std::move(o));
    ASSERT_OK(h);
    handler_ = *std::move(h);
  }
  void TearDown() override {
    if (streams_ != nullptr) streams_->Stop();
    handler_.reset();
  }
  bool WaitForChanges(size_t n) {
    absl::MutexLock l(&mu_);
    auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return changes_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), kWait);
  }
  std::vector<std::string> Changes() {
    absl::MutexLock l(&mu_);
    return changes_;
  }

  devmgr::testutil::TempDir dir_;
  testutil::FakeDraDriver driver_{dir_.Join("dra.sock")};
  ManualTimers timers_;
  std::unique_ptr<HealthInfoCache> cache_;
  absl::Mutex mu_;
  std::vector<std::string> changes_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<HealthStreams> streams_;
  std::unique_ptr<DraPluginHandler> handler_;
};

TEST_F(HealthStreamTest, Upto136TheStreamIsOpenedForEveryPluginAndRetried) {
  // The driver serves no health service and does not advertise one.
  StartNode(36, false, false);
  ASSERT_OK(handler_->RegisterPlugin(kDriver, driver_.path(), kPlain));
  // Unimplemented ends each attempt; the kubelet tries again after the period.
  EXPECT_TRUE(streams_->WaitForEnded(1, kWait));
  EXPECT_TRUE(streams_->WaitForOpened(3, kWait));
}

TEST_F(HealthStreamTest, Upto136V1alpha1IsUsedEvenWhenV1IsAdvertised) {
  StartNode(35, true, true);
  ASSERT_OK(handler_->RegisterPlugin(kDriver, driver_.path(), kBoth));
  ASSERT_TRUE(driver_.WaitForHealthCalls(1, kWait));
  EXPECT_EQ(driver_.HealthCalls()[0], testutil::kV1alpha1Watch);
}

TEST_F(HealthStreamTest, In137OnlyAnAdvertisedServiceIsWatchedV1First) {
  StartNode(37, true, true);
  ASSERT_OK(handler_->RegisterPlugin(kDriver, driver_.path(), kPlain));
  // The choice is made at registration: nothing was started.
  EXPECT_EQ(streams_->opened(), 0);
  ASSERT_OK(handler_->RegisterPlugin(kDriver, dir_.Join("other.sock"), kAlpha));
  testutil::FakeDraDriver other(dir_.Join("other.sock"));
  other.EnableHealth(true, true);
  ASSERT_TRUE(other.Start());
  ASSERT_TRUE(other.WaitForHealthCalls(1, kWait));
  EXPECT_EQ(other.HealthCalls()[0], testutil::kV1alpha1Watch);
  handler_->DeRegisterPlugin(kDriver, dir_.Join("other.sock"));
  ASSERT_OK(handler_->RegisterPlugin(kDriver, dir_.Join("other.sock"), kBoth));
  ASSERT_TRUE(other.WaitForHealthCalls(2, kWait));
  EXPECT_EQ(other.HealthCalls()[1], testutil::kV1Watch);
  streams_->Stop();
}

TEST_F(HealthStreamTest, In137UnimplementedStopsTheWatch) {
  StartNode(37, false, false);
  ASSERT_OK(handler_->RegisterPlugin(kDriver, driver_.path(), kAlpha));
  ASSERT_TRUE(streams_->WaitForEnded(1, kWait));
  // 1.36 would open it again within the 20 ms period; 1.37 does not.
  EXPECT_FALSE(streams_->WaitForOpened(2, absl::Milliseconds(300)));
}

TEST_F(HealthStreamTest, ResponsesFillTheCacheAndReportWhatChanged) {
  StartNode(36, true, false);
  driver_.SetHealth(List({{"gpu-0", ::v1alpha1::HEALTHY}, {"gpu-1", ::v1alpha1::HEALTHY}}));
  ASSERT_OK(handler_->RegisterPlugin(kDriver, driver_.path(), kAlpha));
  ASSERT_TRUE(WaitForChanges(2));
  EXPECT_EQ(cache_->Get(kDriver, "pool", "gpu-1").health, DeviceHealthStatus::kHealthy);
  driver_.SetHealth(List({{"gpu-0", ::v1alpha1::HEALTHY}, {"gpu-1", ::v1alpha1::UNHEALTHY}},
                         std::string(2000, 'e')));
  ASSERT_TRUE(WaitForChanges(4));
  EXPECT_EQ(Changes(), (std::vector<std::string>{
                           "drv.example.com:gpu-0=Healthy", "drv.example.com:gpu-1=Healthy",
                           // The message alone changed gpu-0.
                           "drv.example.com:gpu-0=Healthy", "drv.example.com:gpu-1=Unhealthy"}));
  const DeviceHealth h = cache_->Get(kDriver, "pool", "gpu-1");
  EXPECT_EQ(h.health, DeviceHealthStatus::kUnhealthy);
  EXPECT_EQ(h.message, std::string(1021, 'e') + "...");
}

TEST_F(HealthStreamTest, TheStreamsEndClearsTheDriverAndItIsOpenedAgain) {
  StartNode(36, true, false, absl::Hours(1));
  driver_.SetHealth(List({{"gpu-0", ::v1alpha1::UNHEALTHY}}));
  ASSERT_OK(handler_->RegisterPlugin(kDriver, driver_.path(), kAlpha));
  ASSERT_TRUE(WaitForChanges(1));
  driver_.EndHealthStreams(grpc::Status::OK);
  ASSERT_TRUE(streams_->WaitForEnded(1, kWait));
  EXPECT_EQ(cache_->Get(kDriver, "pool", "gpu-0").health, DeviceHealthStatus::kUnknown);
  EXPECT_EQ(cache_->Snapshot().count(kDriver), 0u);
  // Within the hour-long period nothing is opened; Stop ends the wait.
  EXPECT_EQ(streams_->opened(), 1);
  streams_->Stop();
  EXPECT_EQ(streams_->opened(), 1);
}

TEST_F(HealthStreamTest, TheStreamIsOpenedAgainAfterThePeriod) {
  StartNode(34, true, false);
  driver_.SetHealth(List({{"gpu-0", ::v1alpha1::HEALTHY}}));
  ASSERT_OK(handler_->RegisterPlugin(kDriver, driver_.path(), kPlain));
  ASSERT_TRUE(WaitForChanges(1));
  driver_.EndHealthStreams(grpc::Status(grpc::StatusCode::INTERNAL, "boom"));
  ASSERT_TRUE(streams_->WaitForOpened(2, kWait));
  // The new stream's first list is new again to the cleared cache.
  ASSERT_TRUE(WaitForChanges(2));
  EXPECT_EQ(cache_->Get(kDriver, "pool", "gpu-0").health, DeviceHealthStatus::kHealthy);
}

TEST_F(HealthStreamTest, DeregistrationCancelsTheStreamAndClearsTheDriver) {
  StartNode(37, true, true);
  driver_.SetHealth(List({{"gpu-0", ::v1alpha1::HEALTHY}}));
  ASSERT_OK(handler_->RegisterPlugin(kDriver, driver_.path(), kBoth));
  ASSERT_TRUE(WaitForChanges(1));
  handler_->DeRegisterPlugin(kDriver, driver_.path());
  ASSERT_TRUE(streams_->WaitForEnded(1, kWait));
  EXPECT_EQ(cache_->Snapshot().count(kDriver), 0u);
  EXPECT_FALSE(streams_->WaitForOpened(2, absl::Milliseconds(200)));
}

// The kubelet going away (Stop) ends the streams without clearing: the
// next kubelet reads what they last reported from dra_health_state.
TEST_F(HealthStreamTest, StopKeepsTheDriversHealth) {
  StartNode(37, true, true);
  driver_.SetHealth(List({{"gpu-0", ::v1alpha1::UNHEALTHY}}));
  ASSERT_OK(handler_->RegisterPlugin(kDriver, driver_.path(), kBoth));
  ASSERT_TRUE(WaitForChanges(1));
  streams_->Stop();
  EXPECT_EQ(streams_->ended(), 0);
  EXPECT_EQ(cache_->Get(kDriver, "pool", "gpu-0").health, DeviceHealthStatus::kUnhealthy);
}

TEST_F(HealthStreamTest, TheGateOffOpensNothing) {
  driver_.EnableHealth(true, true);
  ASSERT_TRUE(driver_.Start());
  HealthInfoCache cache(nullptr);
  HealthStreamsOptions so;
  so.kubelet_minor = 36;
  so.enabled = false;
  so.cache = &cache;
  HealthStreams streams(std::move(so));
  streams.Watch(1, kDriver, nullptr, kBoth);
  EXPECT_EQ(streams.opened(), 0);
}

}  // namespace
}  // namespace devmgr::dra
