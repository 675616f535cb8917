// The health-info cache and the per-release reading of a response. Facts
// (kubelet pkg/kubelet/cm/dra healthinfo.go and manager.go at v1.34.4,
// v1.35.4, v1.36.3, v1.37.2): DefaultHealthTimeout 30 s (healthTimeout in
// 1.34, fixed there); last_updated is the kubelet's clock at each report; a
// device missing from a report turns Unknown once its timeout passed
// (notified once); getHealthInfo reads Unknown past the timeout; messages
// truncated to 1021 bytes + "..." over 1024 (1.36+); 16384 devices per
// driver (1.37).
#include "dra/health_info.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/temp_dir_testutil.h"
#include "dra/health_stream.h"
#include "gtest/gtest.h"

namespace devmgr::dra {
namespace {

DeviceHealth Dev(const std::string& device, DeviceHealthStatus h,
                 absl::Duration timeout = kDefaultHealthTimeout, std::string message = "") {
  DeviceHealth d;
  d.pool_name = "pool";
  d.device_name = device;
  d.health = h;
  d.timeout = timeout;
  d.message = std::move(message);
  return d;
}

std::vector<std::string> Names(const std::vector<DeviceHealth>& list) {
  std::vector<std::string> out;
  for (const DeviceHealth& d : list)
    out.push_back(d.device_name + "=" + std::string(HealthName(d.health)));
  return out;
}

class HealthInfoCacheTest : public testing::Test {
 protected:
  FakeClock clock_{absl::FromUnixSeconds(1000)};
  HealthInfoCache cache_{&clock_};
};

TEST_F(HealthInfoCacheTest, AReportStoresAndReportsNewAndChangedDevices) {
  EXPECT_EQ(Names(cache_.Update("d", {Dev("a", DeviceHealthStatus::kHealthy),
                                      Dev("b", DeviceHealthStatus::kUnhealthy)})),
            (std::vector<std::string>{"a=Healthy", "b=Unhealthy"}));
  EXPECT_EQ(cache_.Get("d", "pool", "a").health, DeviceHealthStatus::kHealthy);
  EXPECT_EQ(cache_.Get("d", "pool", "a").last_updated, clock_.Now());
  // Same again: nothing changed.
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE(cache_
                  .Update("d", {Dev("a", DeviceHealthStatus::kHealthy),
                                Dev("b", DeviceHealthStatus::kUnhealthy)})
                  .empty());
  // A message or a timeout alone is a change.
  EXPECT_EQ(
      Names(cache_.Update("d", {Dev("a", DeviceHealthStatus::kHealthy, kDefaultHealthTimeout, "x"),
                                Dev("b", DeviceHealthStatus::kUnhealthy, absl::Seconds(5))})),
      (std::vector<std::string>{"a=Healthy", "b=Unhealthy"}));
  EXPECT_EQ(cache_.Get("d", "pool", "a").message, "x");
  EXPECT_EQ(cache_.Get("other", "pool", "a").health, DeviceHealthStatus::kUnknown);
}

TEST_F(HealthInfoCacheTest, AnOmittedDeviceTurnsUnknownOnceItsTimeoutPassed) {
  cache_.Update("d",
                {Dev("a", DeviceHealthStatus::kHealthy), Dev("b", DeviceHealthStatus::kHealthy)});
  clock_.Advance(absl::Seconds(30));
  // Exactly the timeout: still valid ("> timeout" in the kubelet).
  EXPECT_TRUE(cache_.Update("d", {Dev("a", DeviceHealthStatus::kHealthy)}).empty());
  EXPECT_EQ(cache_.Get("d", "pool", "b").health, DeviceHealthStatus::kHealthy);
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(Names(cache_.Update("d", {Dev("a", DeviceHealthStatus::kHealthy)})),
            (std::vector<std::string>{"b=Unknown"}));
  EXPECT_EQ(cache_.Get("d", "pool", "b").health, DeviceHealthStatus::kUnknown);
  // Notified once.
  EXPECT_TRUE(cache_.Update("d", {Dev("a", DeviceHealthStatus::kHealthy)}).empty());
  // Back: a change.
  EXPECT_EQ(Names(cache_.Update("d", {Dev("a", DeviceHealthStatus::kHealthy),
                                      Dev("b", DeviceHealthStatus::kHealthy)})),
            (std::vector<std::string>{"b=Healthy"}));
}

TEST_F(HealthInfoCacheTest, AReadPastTheTimeoutIsUnknownWithoutMessage) {
  cache_.Update("d", {Dev("a", DeviceHealthStatus::kUnhealthy, absl::Seconds(5), "hot")});
  clock_.Advance(absl::Seconds(5));
  EXPECT_EQ(cache_.Get("d", "pool", "a").message, "hot");
  clock_.Advance(absl::Seconds(1));
  const DeviceHealth h = cache_.Get("d", "pool", "a");
  EXPECT_EQ(h.health, DeviceHealthStatus::kUnknown);
  EXPECT_EQ(h.message, "");
}

TEST_F(HealthInfoCacheTest, ClearDriverForgetsOnlyThatDriver) {
  cache_.Update("d", {Dev("a", DeviceHealthStatus::kHealthy)});
  cache_.Update("e", {Dev("a", DeviceHealthStatus::kHealthy)});
  cache_.ClearDriver("d");
  EXPECT_EQ(cache_.Get("d", "pool", "a").health, DeviceHealthStatus::kUnknown);
  EXPECT_EQ(cache_.Get("e", "pool", "a").health, DeviceHealthStatus::kHealthy);
  EXPECT_EQ(cache_.Snapshot().count("d"), 0u);
}

TEST(HealthInfoCacheLimitTest, NewDevicesPastTheLimitAreIgnored) {
  FakeClock clock;
  HealthInfoCache cache(&clock, 2);
  cache.Update("d", {Dev("a", DeviceHealthStatus::kHealthy), Dev("b", DeviceHealthStatus::kHealthy),
                     Dev("c", DeviceHealthStatus::kHealthy)});
  EXPECT_EQ(cache.Snapshot()["d"].size(), 2u);
  EXPECT_EQ(cache.Get("d", "pool", "c").health, DeviceHealthStatus::kUnknown);
  // Known devices are still updated.
  cache.Update("d",
               {Dev("a", DeviceHealthStatus::kUnhealthy), Dev("b", DeviceHealthStatus::kHealthy)});
  EXPECT_EQ(cache.Get("d", "pool", "a").health, DeviceHealthStatus::kUnhealthy);
}

TEST(ReadDeviceHealthTest, TimeoutAndMessagePerRelease) {
  const std::string long_msg(1500, 'm');
  DeviceHealth d34 = ReadDeviceHealth(34, "p", "d", DeviceHealthStatus::kHealthy, 10, long_msg);
  EXPECT_EQ(d34.timeout, kDefaultHealthTimeout);
  EXPECT_EQ(d34.message, "");
  DeviceHealth d35 = ReadDeviceHealth(35, "p", "d", DeviceHealthStatus::kHealthy, 10, long_msg);
  EXPECT_EQ(d35.timeout, absl::Seconds(10));
  EXPECT_EQ(d35.message, "");
  EXPECT_EQ(ReadDeviceHealth(35, "p", "d", DeviceHealthStatus::kHealthy, -4, "").timeout,
            kDefaultHealthTimeout);
  DeviceHealth d36 = ReadDeviceHealth(36, "p", "d", DeviceHealthStatus::kHealthy, 0, long_msg);
  EXPECT_EQ(d36.timeout, kDefaultHealthTimeout);
  EXPECT_EQ(d36.message.size(), 1024u);
  EXPECT_EQ(d36.message, std::string(1021, 'm') + "...");
  EXPECT_EQ(TruncateHealthMessage(std::string(1024, 'x')), std::string(1024, 'x'));
}

TEST(ChooseHealthServiceTest, PerReleaseAndGate) {
  const std::vector<std::string> none = {"v1.DRAPlugin"};
  const std::vector<std::string> alpha = {"v1.DRAPlugin", "v1alpha1.DRAResourceHealth"};
  const std::vector<std::string> both = {"v1alpha1.DRAResourceHealth", "v1.DRAResourceHealth",
                                         "v1.DRAPlugin"};
  EXPECT_EQ(ChooseHealthService(36, false, alpha), HealthService::kNone);
  for (int minor : {34, 35, 36}) {
    EXPECT_EQ(ChooseHealthService(minor, true, none), HealthService::kV1alpha1) << minor;
    EXPECT_EQ(ChooseHealthService(minor, true, both), HealthService::kV1alpha1) << minor;
  }
  EXPECT_EQ(ChooseHealthService(37, true, none), HealthService::kNone);
  EXPECT_EQ(ChooseHealthService(37, true, alpha), HealthService::kV1alpha1);
  EXPECT_EQ(ChooseHealthService(37, true, both), HealthService::kV1);
}

// dra_health_state: Go's encoding/json of state.DevicesHealthMap, fields per
// release (HealthCheckTimeout from 1.35, Message from 1.36), map keys sorted,
// LastUpdated in RFC 3339 with nanoseconds, the timeout in nanoseconds,
// HTML characters escaped.
TEST(HealthStateFileTest, EncodesAsTheKubeletOfTheRelease) {
  DeviceHealth d = Dev("gpu-0", DeviceHealthStatus::kUnhealthy, absl::Seconds(5), "a<b & c>d");
  d.last_updated = absl::FromUnixNanos(int64_t{1800000000} * 1000000000 + 120000000);
  const std::map<std::string, std::map<std::string, DeviceHealth>> m = {
      {"z.example.com", {}}, {"a.example.com", {{"pool/gpu-0", d}}}};
  EXPECT_EQ(EncodeHealthState(m, 34),
            R"({"a.example.com":{"Devices":{"pool/gpu-0":{"PoolName":"pool","DeviceName":)"
            R"("gpu-0","Health":"Unhealthy","LastUpdated":"2027-01-15T08:00:00.12Z"}}},)"
            R"("z.example.com":{"Devices":{}}})");
  EXPECT_EQ(EncodeHealthState(m, 36),
            R"({"a.example.com":{"Devices":{"pool/gpu-0":{"PoolName":"pool","DeviceName":)"
            R"("gpu-0","Health":"Unhealthy","LastUpdated":"2027-01-15T08:00:00.12Z",)"
            R"("HealthCheckTimeout":5000000000,"Message":"a\u003cb \u0026 c\u003ed"}}},)"
            R"("z.example.com":{"Devices":{}}})");
  absl::StatusOr<std::map<std::string, std::map<std::string, DeviceHealth>>> back =
      DecodeHealthState(EncodeHealthState(m, 37));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, m);
  // 1.34's file has no timeout: the default.
  back = DecodeHealthState(EncodeHealthState(m, 34));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->at("a.example.com").at("pool/gpu-0").timeout, kDefaultHealthTimeout);
  EXPECT_FALSE(DecodeHealthState("[1]").ok());
  EXPECT_FALSE(DecodeHealthState("{\"d\":{\"Devices\":{\"p/x\":{\"LastUpdated\":\"x\"}}}}").ok());
}

class HealthStateCacheTest : public testing::Test {
 protected:
  std::unique_ptr<HealthInfoCache> Make(int minor) {
    HealthInfoCacheOptions o;
    o.kubelet_minor = minor;
    o.state_file = dir_.Join("dra_health_state");
    return std::make_unique<HealthInfoCache>(&clock_, std::move(o));
  }
  std::string File() {
    absl::StatusOr<std::string> s = fs::Default()->ReadFile(dir_.Join("dra_health_state"));
    return s.ok() ? *s : "<none>";
  }

  devmgr::testutil::TempDir dir_;
  FakeClock clock_{absl::FromUnixSeconds(1800000000)};
};

TEST_F(HealthStateCacheTest, ChangesAreWrittenAndReadByTheNextKubelet) {
  std::unique_ptr<HealthInfoCache> c = Make(37);
  EXPECT_EQ(File(), "<none>");
  c->Update("d", {Dev("a", DeviceHealthStatus::kUnhealthy)});
  EXPECT_NE(File().find(R"("pool/a":{"PoolName":"pool","DeviceName":"a","Health":"Unhealthy")"),
            std::string::npos)
      << File();
  // A kubelet started later reads it: the report is still within its timeout.
  clock_.Advance(absl::Seconds(10));
  std::unique_ptr<HealthInfoCache> next = Make(37);
  EXPECT_EQ(next->Get("d", "pool", "a").health, DeviceHealthStatus::kUnhealthy);
  clock_.Advance(absl::Seconds(21));
  EXPECT_EQ(next->Get("d", "pool", "a").health, DeviceHealthStatus::kUnknown);
  // The stream's end clears the driver, in the file too.
  next->ClearDriver("d");
  EXPECT_EQ(File(), "{}");
}

TEST_F(HealthStateCacheTest, TimedOutDevicesStayAsUnknownUpTo136AndGoIn137) {
  for (int minor : {36, 37}) {
    SCOPED_TRACE(minor);
    std::unique_ptr<HealthInfoCache> c = Make(minor);
    c->Update("d",
              {Dev("a", DeviceHealthStatus::kHealthy), Dev("b", DeviceHealthStatus::kHealthy)});
    clock_.Advance(absl::Seconds(31));
    EXPECT_EQ(Names(c->Update("d", {Dev("b", DeviceHealthStatus::kHealthy)})),
              (std::vector<std::string>{"a=Unknown"}));
    EXPECT_EQ(File().find(R"("pool/a":{"PoolName":"pool","DeviceName":"a","Health":"Unknown")") !=
                  std::string::npos,
              minor < 37)
        << File();
    // Reported once: silence goes on, nothing more changes.
    clock_.Advance(absl::Seconds(31));
    EXPECT_EQ(Names(c->Update("d", {Dev("b", DeviceHealthStatus::kHealthy)})),
              std::vector<std::string>{});
    EXPECT_EQ(c->Get("d", "pool", "a").health, DeviceHealthStatus::kUnknown);
    c->ClearDriver("d");
  }
}

TEST_F(HealthStateCacheTest, ACorruptFileIsAnEmptyCache) {
  ASSERT_TRUE(fs::WriteOutputFile(dir_.Join("dra_health_state"), "{not json").ok());
  std::unique_ptr<HealthInfoCache> c = Make(35);
  EXPECT_TRUE(c->Snapshot().empty());
  EXPECT_EQ(c->Get("d", "pool", "a").health, DeviceHealthStatus::kUnknown);
}

}  // namespace
}  // namespace devmgr::dra
