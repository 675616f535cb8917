// DRA device health in pod status (KEP-4680) over real unix sockets: a node
// with DRA on, a fake DRA driver serving DRAResourceHealth on its socket, a
// pod whose claim is prepared through it, and the pod's
// allocatedResourcesStatus following what the driver reports, what ends
// its stream and what the node's (virtual) clock says about silence. Rules
// and sources: docs/resource-health.md ("DRA devices").
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apiserver/resource_type.h"
#include "apiserver/store.h"
#include "common/clock.h"
#include "common/fs.h"
#include "common/status_testutil.h"
#include "dra/dra_plugin_handler.h"
#include "dra/fake_driver_testutil.h"
#include "dra/health_info.h"
#include "dra/health_stream.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node/pod_manager.h"
#include "pod/manifest_parser.h"
#include "tests/integration/test_env.h"

namespace devmgr::testutil {
namespace {

using manager::ResourceHealth;
using manager::ResourceHealthStatus;
using nlohmann::json;
namespace drav1 = dra::testutil::drav1;

constexpr char kDriver[] = "gpu.example.com";
constexpr absl::Duration kWait = absl::Seconds(20);

// ctr0 holds request "a" of a claim made from a template.
constexpr char kTemplatePod[] = R"(apiVersion: v1
kind: Pod
metadata: {name: pod0, namespace: ml}
spec:
  containers:
  - name: ctr0
    image: busybox
    resources: {claims: [{name: gpus, request: a}]}
  resourceClaims:
  - {name: gpus, resourceClaimTemplateName: one-gpu}
)";

// The same with a ResourceClaim of the pod's claim name (what 1.34 finds).
constexpr char kNamedClaimPod[] = R"(apiVersion: v1
kind: Pod
metadata: {name: pod0, namespace: ml}
spec:
  containers:
  - name: ctr0
    image: busybox
    resources: {claims: [{name: gpus, request: a}]}
  resourceClaims:
  - {name: gpus, resourceClaimName: gpus}
)";

::v1alpha1::NodeWatchResourcesResponse List(::v1alpha1::HealthStatus h,
                                            const std::string& message = "") {
  ::v1alpha1::NodeWatchResourcesResponse r;
  ::v1alpha1::DeviceHealth* d = r.add_devices();
  d->mutable_device()->set_pool_name("node-1");
  d->mutable_device()->set_device_name("gpu-0");
  d->set_health(h);
  d->set_message(message);
  return r;
}

ResourceHealth Health(const std::string& health, std::optional<std::string> message = {}) {
  return ResourceHealth{"gpu.example.com/gpu=gpu-0", health, std::move(message)};
}

class DraHealthTest : public ::testing::Test {
 protected:
  // `serve_v1alpha1`/`serve_v1`: the health services the driver serves.
  void Start(const std::string& version, bool serve_v1alpha1, bool serve_v1) {
    Profile profile = *ProfileForVersion(version);
    ASSERT_OK(profile.gates.Set("ResourceHealthStatus=true"));
    Create(apiserver::DeviceClasses(), "",
           {{"metadata", {{"name", "gpu"}}}, {"spec", json::object()}});
    const json spec = {
        {"devices", {{"requests", {{{"name", "a"}, {"exactly", {{"deviceClassName", "gpu"}}}}}}}}};
    Create(apiserver::ResourceClaimTemplates(), "ml",
           {{"metadata", {{"name", "one-gpu"}, {"namespace", "ml"}}}, {"spec", {{"spec", spec}}}});
    Create(apiserver::ResourceClaims(), "ml",
           {{"metadata", {{"name", "gpus"}, {"namespace", "ml"}}}, {"spec", spec}});
    driver_.SetPrepare([this](const drav1::NodePrepareResourcesRequest& req,
                              drav1::NodePrepareResourcesResponse* resp) {
      for (const drav1::Claim& c : req.claims()) {
        apiserver::ApiOr<json> claim =
            store_.Get(apiserver::ResourceClaims(), c.namespace_(), c.name());
        if (!claim.ok()) return grpc::Status(grpc::StatusCode::NOT_FOUND, c.name());
        auto& out = (*resp->mutable_claims())[c.uid()];
        for (const json& r : claim.value["status"]["allocation"]["devices"]["results"]) {
          drav1::Device* d = out.add_devices();
          d->add_request_names(r["request"].get<std::string>());
          d->set_pool_name(r["pool"].get<std::string>());
          d->set_device_name(r["device"].get<std::string>());
          d->add_cdi_device_ids("gpu.example.com/gpu=" + r["device"].get<std::string>());
        }
      }
      return grpc::Status::OK;
    });
    driver_.EnableHealth(serve_v1alpha1, serve_v1);
    driver_.SetHealth(List(::v1alpha1::HEALTHY));
    ASSERT_TRUE(driver_.Start());

    std::filesystem::create_directories(dir_.path() + "/device-plugins");
    node::NodeOptions o;
    o.plugin_dir = dir_.path() + "/device-plugins";
    o.registry_dir = dir_.path() + "/plugins_registry";
    o.profile = profile;
    o.clock = &clock_;
    o.fsync = false;
    o.resync_jitter = [] { return 0.0; };
    o.dra.store = &store_;
    o.dra.node_name = "node-1";
    o.dra.state_dir = dir_.path();
    node_ = std::make_unique<node::Node>(o);
    ASSERT_OK(node_->Start());
    node_->pod_status().SetChangeCallback([this] {
      absl::MutexLock l(&mu_);
      ++changes_;
    });
    Create(apiserver::ResourceSlices(), "",
           {{"metadata", {{"name", "node-1-gpu"}}},
            {"spec",
             {{"driver", kDriver},
              {"nodeName", "node-1"},
              {"pool", {{"name", "node-1"}, {"generation", 0}, {"resourceSliceCount", 1}}},
              {"devices", {{{"name", "gpu-0"}}}}}}});
    pods_ = std::make_unique<node::PodManager>(node_.get(),
                                               node::PodManagerOptions{.keep_deleted = false});
  }
  void TearDown() override {
    pods_.reset();
    if (node_) node_->Stop();
    node_.reset();
    driver_.Stop();
  }
  void Create(const apiserver::ResourceType& type, const std::string& ns, const json& obj) {
    apiserver::ApiOr<json> made = store_.Create(type, ns, obj);
    ASSERT_TRUE(made.ok()) << made.error->message;
  }
  void Register(const std::vector<std::string>& versions) {
    ASSERT_OK(node_->dra_handler()->RegisterPlugin(kDriver, driver_.path(), versions));
  }
  std::string Admit(const char* manifest) {
    absl::StatusOr<pod::Pod> p = pod::ParsePodManifest(manifest, "pod0.yaml");
    EXPECT_OK(p);
    if (!p.ok()) return "";
    const node::PodRecord rec = AdmitOrFail(*pods_, *p);
    EXPECT_EQ(rec.phase, pod::Phase::kRunning) << rec.reason << ": " << rec.message;
    return rec.pod.uid;
  }
  // ctr0's allocatedResourcesStatus (nullopt: absent).
  std::optional<std::vector<ResourceHealthStatus>> Status(const std::string& uid) {
    auto all = node_->PodResourceStatuses();
    auto it = all.find(uid);
    if (it == all.end() || it->second.empty()) return std::nullopt;
    return it->second[0].allocated_resources_status;
  }
  // Waits, on the syncer's change notifications, until ctr0's status is
  // `want`.
  bool WaitStatus(const std::string& uid,
                  const std::optional<std::vector<ResourceHealthStatus>>& want) {
    const absl::Time deadline = absl::Now() + kWait;
    for (;;) {
      int64_t seen;
      {
        absl::MutexLock l(&mu_);
        seen = changes_;
      }
      if (Status(uid) == want) return true;
      absl::MutexLock l(&mu_);
      auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return changes_ != seen; };
      if (!mu_.AwaitWithDeadline(absl::Condition(&changed), deadline)) return false;
    }
  }
  static std::vector<ResourceHealthStatus> Entry(const ResourceHealth& h) {
    return {ResourceHealthStatus{"claim:gpus/a", {h}}};
  }

  TempDir dir_;
  FakeClock clock_;
  apiserver::Store store_{clock_};
  dra::testutil::FakeDraDriver driver_{dir_.path() + "/gpu.sock"};
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<node::PodManager> pods_;
  absl::Mutex mu_;
  int64_t changes_ ABSL_GUARDED_BY(mu_) = 0;
};

// The driver's reports reach the pod: Healthy once the containers started
// (the admission's status has no DRA entry), then Unhealthy with its message
// when the driver says so; dra_health_state follows.
TEST_F(DraHealthTest, AnUnhealthyDeviceShowsInThePodsStatus) {
  Start("1.37", false, true);
  Register({"v1.DRAPlugin", dra::kV1DRAResourceHealth});
  ASSERT_TRUE(driver_.WaitForHealthCalls(1, kWait));
  const std::string uid = Admit(kTemplatePod);
  ASSERT_TRUE(WaitStatus(uid, Entry(Health("Healthy")))) << ::testing::PrintToString(Status(uid));
  driver_.SetHealth(List(::v1alpha1::UNHEALTHY, "ECC errors"));
  ASSERT_TRUE(WaitStatus(uid, Entry(Health("Unhealthy", "ECC errors"))))
      << ::testing::PrintToString(Status(uid));
  EXPECT_EQ(driver_.HealthCalls(), std::vector<std::string>{dra::testutil::kV1Watch});
  absl::StatusOr<std::string> state = fs::Default()->ReadFile(dir_.path() + "/dra_health_state");
  ASSERT_OK(state);
  EXPECT_THAT(*state, ::testing::HasSubstr(R"("Health":"Unhealthy")"));
  EXPECT_THAT(*state, ::testing::HasSubstr(R"("Message":"ECC errors")"));
}

// The stream ends (1.37, Unimplemented: not opened again): the driver's
// health is cleared and the pod shows Unknown at its next sync, the
// periodic resync on the node's clock.
TEST_F(DraHealthTest, TheStreamsEndClearsTheHealth) {
  Start("1.37", false, true);
  Register({"v1.DRAPlugin", dra::kV1DRAResourceHealth});
  const std::string uid = Admit(kTemplatePod);
  driver_.SetHealth(List(::v1alpha1::UNHEALTHY));
  ASSERT_TRUE(WaitStatus(uid, Entry(Health("Unhealthy")))) << ::testing::PrintToString(Status(uid));
  driver_.EndHealthStreams(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no health"));
  ASSERT_TRUE(node_->dra_health_streams()->WaitForEnded(1, kWait));
  EXPECT_EQ(node_->dra_health()->Snapshot().count(kDriver), 0u);
  // No pod is queued for a clear: the status changes at the resync.
  EXPECT_EQ(Status(uid), Entry(Health("Unhealthy")));
  clock_.Advance(absl::Seconds(61));
  ASSERT_TRUE(WaitStatus(uid, Entry(Health("Unknown")))) << ::testing::PrintToString(Status(uid));
  EXPECT_EQ(node_->dra_health_streams()->opened(), 1);
}

// A driver that goes silent: its last report times out (30 s) on the
// node's clock and the pod's next sync shows Unknown.
TEST_F(DraHealthTest, SilencePastTheTimeoutIsUnknown) {
  Start("1.36", true, false);
  Register({"v1.DRAPlugin"});
  const std::string uid = Admit(kTemplatePod);
  ASSERT_TRUE(WaitStatus(uid, Entry(Health("Healthy")))) << ::testing::PrintToString(Status(uid));
  clock_.Advance(absl::Seconds(29));
  EXPECT_EQ(node_->dra_health()->Get(kDriver, "node-1", "gpu-0").health,
            dra::DeviceHealthStatus::kHealthy);
  clock_.Advance(absl::Seconds(32));  // past the report's 30 s and the 60 s resync
  ASSERT_TRUE(WaitStatus(uid, Entry(Health("Unknown")))) << ::testing::PrintToString(Status(uid));
}

// 1.34 watches every driver with v1alpha1, advertised or not (and shows no
// message); 1.37 only an advertised service, so the same driver's devices
// stay Unknown there.
TEST_F(DraHealthTest, In134EveryDriverIsWatchedWithV1alpha1) {
  Start("1.34", true, true);
  Register({"v1.DRAPlugin"});
  ASSERT_TRUE(driver_.WaitForHealthCalls(1, kWait));
  EXPECT_EQ(driver_.HealthCalls()[0], dra::testutil::kV1alpha1Watch);
  driver_.SetHealth(List(::v1alpha1::UNHEALTHY, "ECC errors"));
  const std::string uid = Admit(kNamedClaimPod);
  ASSERT_TRUE(WaitStatus(uid, Entry(Health("Unhealthy")))) << ::testing::PrintToString(Status(uid));
}

TEST_F(DraHealthTest, In137AnUnadvertisedServiceIsNotWatched) {
  Start("1.37", true, true);
  Register({"v1.DRAPlugin"});
  const std::string uid = Admit(kNamedClaimPod);
  ASSERT_TRUE(WaitStatus(uid, Entry(Health("Unknown")))) << ::testing::PrintToString(Status(uid));
  EXPECT_TRUE(driver_.HealthCalls().empty());
  EXPECT_EQ(node_->dra_health_streams()->opened(), 0);
}

}  // namespace
}  // namespace devmgr::testutil
