// DRA in the PodResources API over real unix sockets: a node with DRA on (the
// embedded API store, the DRAPlugin handler), a fake DRA driver on its own
// socket, a pod whose claim is made from a template, allocated, reserved and
// prepared through the driver, and the PodResources server's List and Get
// answering with the container's dynamic_resources, per kubelet version and
// feature gate (src/podresources/dynamic_resources_test.cc lists the
// kubelet's behaviour and where it comes from).
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "apiserver/field_selector.h"
#include "apiserver/resource_type.h"
#include "apiserver/store.h"
#include "common/status_testutil.h"
#include "dra/dra_plugin_handler.h"
#include "dra/fake_driver_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node/pod_manager.h"
#include "pod/manifest_parser.h"
#include "podresources/client.h"
#include "podresources/options.h"
#include "podresources/server.h"
#include "tests/integration/test_env.h"

namespace devmgr::testutil {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace podresources_dra_test {

using nlohmann::json;
using ::testing::ElementsAre;
namespace drav1 = dra::testutil::drav1;

constexpr char kDriver[] = "gpu.example.com";

// Two requests, one device each: ctr0 names only request "a", ctr1 the whole
// claim, sidecar "init0" request "b"; ctr2 none.
constexpr char kPod[] = R"(apiVersion: v1
kind: Pod
metadata: {name: pod0, namespace: ml}
spec:
  initContainers:
  - {name: setup, image: busybox}
  - name: init0
    image: busybox
    restartPolicy: Always
    resources: {claims: [{name: gpus, request: b}]}
  containers:
  - name: ctr0
    image: busybox
    resources: {claims: [{name: gpus, request: a}]}
  - name: ctr1
    image: busybox
    resources: {claims: [{name: gpus}]}
  - {name: ctr2, image: busybox}
  resourceClaims:
  - {name: gpus, resourceClaimTemplateName: two-gpus}
)";

std::vector<std::string> CdiNames(const v1::ClaimResource& r) {
  std::vector<std::string> out;
  for (const auto& d : r.cdi_devices()) out.push_back(d.name());
  return out;
}

// "<driver>/<pool>/<device>" of each claim resource.
std::vector<std::string> Devices(const v1::DynamicResource& dr) {
  std::vector<std::string> out;
  for (const auto& r : dr.claim_resources()) {
    out.push_back(r.driver_name() + "/" + r.pool_name() + "/" + r.device_name());
  }
  return out;
}

class PodResourcesDraTest : public ::testing::TestWithParam<std::string> {
 protected:
  // `gates`: --feature-gates for the profile (and the PodResources options).
  void Start(const std::string& version, const std::string& gates = "") {
    Profile profile = *ProfileForVersion(version);
    ASSERT_OK(profile.gates.Set(gates));
    minor_ = profile.minor;
    Create(
        apiserver::DeviceClasses(), "",
        {{"metadata", {{"name", "gpu"}}},
         {"spec",
          {{"selectors", {{{"cel", {{"expression", "device.driver == 'gpu.example.com'"}}}}}}}}});
    json requests = json::array();
    for (const char* r : {"a", "b"}) {
      requests.push_back({{"name", r}, {"exactly", {{"deviceClassName", "gpu"}}}});
    }
    Create(apiserver::ResourceClaimTemplates(), "ml",
           {{"metadata", {{"name", "two-gpus"}, {"namespace", "ml"}}},
            {"spec", {{"spec", {{"devices", {{"requests", requests}}}}}}}});
    // The driver answers with the devices the claim was allocated, each with
    // its request and a CDI ID of its own (a share ID on gpu-1).
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
          const std::string device = r["device"];
          d->set_device_name(device);
          d->add_cdi_device_ids(std::string(kDriver) + "/gpu=" + device);
          if (device == "gpu-1") d->set_share_id("share-1");
        }
      }
      return grpc::Status::OK;
    });
    ASSERT_TRUE(driver_.Start());

    std::filesystem::create_directories(dir_.path() + "/device-plugins");
    node::NodeOptions o;
    o.plugin_dir = dir_.path() + "/device-plugins";
    o.registry_dir = dir_.path() + "/plugins_registry";
    o.profile = profile;
    o.clock = &clock_;
    o.fsync = false;
    o.dra.store = &store_;
    o.dra.node_name = "node-1";
    o.dra.state_dir = dir_.path();
    node_ = std::make_unique<node::Node>(o);
    ASSERT_OK(node_->Start());
    // The driver's slice, published after the node's start wiped the node's.
    Create(apiserver::ResourceSlices(), "",
           {{"metadata", {{"name", "node-1-gpu"}}},
            {"spec",
             {{"driver", kDriver},
              {"nodeName", "node-1"},
              {"pool", {{"name", "node-1"}, {"generation", 0}, {"resourceSliceCount", 1}}},
              {"devices", {{{"name", "gpu-0"}}, {{"name", "gpu-1"}}}}}}});
    pods_ = std::make_unique<node::PodManager>(node_.get(),
                                               node::PodManagerOptions{.keep_deleted = false});
    podresources::ServerOptions so;
    so.socket_path = dir_.path() + "/pod-resources/kubelet.sock";
    so.api = podresources::OptionsForProfile(profile);
    server_ = std::make_unique<podresources::Server>(node_.get(), pods_.get(), so);
    ASSERT_OK(server_->Start());
    client_ = std::make_unique<podresources::Client>(so.socket_path);
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Stop();
    pods_.reset();
    if (node_) node_->Stop();
    node_.reset();  // closes the node's connection to the driver
    driver_.Stop();
  }
  void Create(const apiserver::ResourceType& type, const std::string& ns, const json& obj) {
    apiserver::ApiOr<json> made = store_.Create(type, ns, obj);
    ASSERT_TRUE(made.ok()) << made.error->message;
  }
  void RegisterDriver() {
    ASSERT_OK(node_->dra_handler()->RegisterPlugin(kDriver, driver_.path(), {"v1.DRAPlugin"}));
  }
  pod::Pod Pod() {
    absl::StatusOr<pod::Pod> p = pod::ParsePodManifest(kPod, "pod0.yaml");
    EXPECT_OK(p);
    return p.ok() ? *p : pod::Pod{};
  }
  // The name the claim made from the template got.
  std::string ClaimName() {
    apiserver::ApiOr<apiserver::Store::ListResult> l =
        store_.List(apiserver::ResourceClaims(), "ml", apiserver::FieldSelector{});
    return l.ok() && l.value.items.size() == 1 ? l.value.items[0]["metadata"]["name"] : "";
  }
  // The one pod of List, its containers by name.
  std::map<std::string, v1::ContainerResources> Listed() {
    absl::StatusOr<v1::ListPodResourcesResponse> list = client_->List();
    EXPECT_OK(list);
    std::map<std::string, v1::ContainerResources> out;
    if (!list.ok() || list->pod_resources_size() != 1) return out;
    for (const auto& c : list->pod_resources(0).containers()) out[c.name()] = c;
    return out;
  }

  TempDir dir_;
  FakeClock clock_;
  apiserver::Store store_{clock_};
  dra::testutil::FakeDraDriver driver_{dir_.path() + "/gpu.sock"};
  int minor_ = 0;
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<node::PodManager> pods_;
  std::unique_ptr<podresources::Server> server_;
  std::unique_ptr<podresources::Client> client_;
};

// List and Get give every listed container (the sidecar too) the whole
// claim once per resources.claims entry, whatever the entry's request; the
// runtime's CDI IDs do follow the request. The driver's second device lists
// the first one's CDI ID too, as the kubelet's answer does.
TEST_P(PodResourcesDraTest, ListAndGetShowEachContainersClaims) {
  Start(GetParam());
  RegisterDriver();
  const node::PodRecord rec = AdmitOrFail(*pods_, Pod());
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.reason << ": " << rec.message;
  const std::string claim = ClaimName();
  ASSERT_FALSE(claim.empty());
  EXPECT_THAT(node_->DraCdiDevices(rec.pod.uid, "ctr0"), ElementsAre("gpu.example.com/gpu=gpu-0"));

  std::map<std::string, v1::ContainerResources> listed = Listed();
  ASSERT_EQ(listed.size(), 4u);  // init0 (sidecar), ctr0, ctr1, ctr2; not setup
  for (const char* name : {"init0", "ctr0", "ctr1"}) {
    const v1::ContainerResources& c = listed[name];
    ASSERT_EQ(c.dynamic_resources_size(), 1) << name;
    const v1::DynamicResource& dr = c.dynamic_resources(0);
    EXPECT_EQ(dr.claim_name(), claim);
    EXPECT_EQ(dr.claim_namespace(), "ml");
    EXPECT_THAT(Devices(dr),
                ElementsAre("gpu.example.com/node-1/gpu-0", "gpu.example.com/node-1/gpu-1"))
        << name;
    EXPECT_THAT(CdiNames(dr.claim_resources(0)), ElementsAre("gpu.example.com/gpu=gpu-0"));
    EXPECT_THAT(CdiNames(dr.claim_resources(1)),
                ElementsAre("gpu.example.com/gpu=gpu-0", "gpu.example.com/gpu=gpu-1"));
    EXPECT_FALSE(dr.claim_resources(0).has_share_id());
    // The v1 driver API has share_id from 1.35 on.
    EXPECT_EQ(dr.claim_resources(1).has_share_id(), minor_ >= 35) << name;
  }
  EXPECT_EQ(listed["ctr2"].dynamic_resources_size(), 0);

  absl::StatusOr<v1::GetPodResourcesResponse> got = client_->Get("ml", "pod0");
  ASSERT_OK(got);
  ASSERT_EQ(got->pod_resources().containers_size(), 4);
  EXPECT_EQ(got->pod_resources().containers(1).name(), "ctr0");
  EXPECT_EQ(got->pod_resources().containers(1).SerializeAsString(),
            listed["ctr0"].SerializeAsString());

  // The pod goes: its claims are unprepared and it is listed no more.
  ASSERT_OK(pods_->DeletePod(rec.pod.uid));
  absl::StatusOr<v1::ListPodResourcesResponse> after = client_->List();
  ASSERT_OK(after);
  EXPECT_EQ(after->pod_resources_size(), 0);
}

INSTANTIATE_TEST_SUITE_P(Versions, PodResourcesDraTest,
                         ::testing::Values("1.34", "1.35", "1.36", "1.37"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string s = "v" + info.param;
                           s[s.find('.')] = '_';
                           return s;
                         });

// 1.34-1.35: the beta gate turned off leaves dynamic_resources out.
TEST_F(PodResourcesDraTest, GateOffLeavesTheFieldOut) {
  Start("1.35", "KubeletPodResourcesDynamicResources=false");
  RegisterDriver();
  const node::PodRecord rec = AdmitOrFail(*pods_, Pod());
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.reason << ": " << rec.message;
  std::map<std::string, v1::ContainerResources> listed = Listed();
  ASSERT_EQ(listed.size(), 4u);
  for (const auto& [name, c] : listed) EXPECT_EQ(c.dynamic_resources_size(), 0) << name;
}

// A pod whose claims could not be prepared (no driver yet) is listed, its
// containers without claims: the claim is not in the DRA manager's cache.
TEST_F(PodResourcesDraTest, UnpreparedPodIsListedWithoutClaims) {
  Start("1.37");
  const node::PodRecord rec = AdmitOrFail(*pods_, Pod());
  ASSERT_EQ(rec.phase, pod::Phase::kPending);
  EXPECT_EQ(rec.reason, "FailedPrepareDynamicResources");
  std::map<std::string, v1::ContainerResources> listed = Listed();
  ASSERT_EQ(listed.size(), 4u);
  for (const auto& [name, c] : listed) EXPECT_EQ(c.dynamic_resources_size(), 0) << name;
  absl::StatusOr<v1::GetPodResourcesResponse> got = client_->Get("ml", "pod0");
  ASSERT_OK(got);
  EXPECT_EQ(got->pod_resources().containers(1).dynamic_resources_size(), 0);
}

}  // namespace podresources_dra_test
}  // namespace devmgr::testutil
