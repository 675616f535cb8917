// The reference DRA driver (src/draplugin) over real unix sockets in a
// per-test temp dir, against devmgr's embedded API endpoint in process:
// registration, prepare/unprepare with the CDI spec's bytes, idempotence,
// restart, the published slice, and each misbehaviour switch doing what
// docs/sample-dra-driver.md says.
#include "draplugin/sample_dra_driver.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "apiserver/server.h"
#include "apiserver/validation.h"
#include "common/fs.h"
#include "common/source_dir_testutil.h"
#include "common/status_testutil.h"
#include "common/temp_dir_testutil.h"
#include "dra/health/v1/api.grpc.pb.h"
#include "dra/health/v1alpha1/api.grpc.pb.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "draplugin/cdi.h"
#include "draplugin/config.h"
#include "draplugin/health_service.h"
#include "draplugin/resource_slice.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace devmgr::draplugin {
namespace {

namespace v1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;
using nlohmann::json;
using testing::ElementsAre;
using testing::IsEmpty;

constexpr char kDriver[] = "sample.dra.devmgr.io";
constexpr char kNode[] = "node-a";
constexpr char kNs[] = "default";
constexpr absl::Duration kWait = absl::Seconds(30);

constexpr char kDevicesYaml[] = R"(
devices:
  - name: dev-0
    attributes:
      model: {string: sample-a}
      memory: {int: 40}
    env: {SAMPLE_VISIBLE: "0"}
  - name: dev-1
    attributes:
      ok: {bool: true}
      fw: {version: 1.2.3}
)";

std::chrono::system_clock::time_point Deadline(absl::Duration d = kWait) {
  return absl::ToChronoTime(absl::Now() + d);
}

class SampleDraDriverTest : public testing::Test {
 protected:
  void SetUp() override {
    for (const char* d : {"registry", "plugins", "cdi"}) {
      std::filesystem::create_directories(dir_.Join(d));
    }
    absl::StatusOr<std::string> url = server_.Start(apiserver::kDefaultApiListen);
    ASSERT_OK(url.status());
    ASSERT_OK(apiserver::CreateNode(server_.store(), kNode));
    ASSERT_OK(apiserver::WriteKubeconfig(dir_.Join("kubeconfig"), *url));
  }

  void TearDown() override {
    if (driver_) driver_->Stop();
    server_.Stop();
  }

  // The test's directories, node and kubeconfig.
  DriverOptions Options() {
    DriverOptions o;
    o.registry_dir = dir_.Join("registry");
    o.plugin_dir = dir_.Join("plugins");
    o.cdi_dir = dir_.Join("cdi");
    o.node_name = kNode;
    o.kubeconfig = dir_.Join("kubeconfig");
    return o;
  }

  // Starts a driver with kDevicesYaml plus `misbehave` (a YAML mapping body).
  void StartDriver(const std::string& misbehave = "", const std::string& call_log = "") {
    std::string text = kDevicesYaml;
    if (!misbehave.empty()) text += "misbehave:\n" + misbehave;
    absl::StatusOr<Config> config = ParseConfig(text, "test.yaml");
    ASSERT_OK(config.status());
    DriverOptions o = Options();
    o.call_log = call_log;
    if (driver_) driver_->Stop();
    stub_.reset();
    driver_ = std::make_unique<SampleDraDriver>(*std::move(config), o);
    ASSERT_OK(driver_->Start());
  }

  v1::DRAPlugin::Stub& Stub() {
    if (!stub_) {
      stub_ = v1::DRAPlugin::NewStub(
          grpc::CreateChannel("unix:" + driver_->dra_socket(), grpc::InsecureChannelCredentials()));
    }
    return *stub_;
  }

  // Creates claim `name` allocated `device` (request "req") of this driver; returns its UID.
  std::string CreateClaim(const std::string& name, const std::string& device,
                          const std::string& driver = kDriver) {
    json claim = {{"apiVersion", "resource.k8s.io/v1"},
                  {"kind", "ResourceClaim"},
                  {"metadata", {{"name", name}, {"namespace", kNs}}},
                  {"spec", json::object()}};
    apiserver::ApiOr<json> created =
        server_.store().Create(apiserver::ResourceClaims(), kNs, claim);
    EXPECT_TRUE(created.ok());
    if (!created.ok()) return "";
    json results = json::array();
    results.push_back(
        {{"request", "req"}, {"driver", driver}, {"pool", kNode}, {"device", device}});
    created.value["status"] = {{"allocation", {{"devices", {{"results", results}}}}}};
    apiserver::ApiOr<json> updated = server_.store().Update(apiserver::ResourceClaims(), kNs, name,
                                                            created.value, /*status_only=*/true);
    EXPECT_TRUE(updated.ok());
    return created.value["metadata"]["uid"].get<std::string>();
  }

  static v1::Claim Claim(const std::string& name, const std::string& uid) {
    v1::Claim c;
    c.set_namespace_(kNs);
    c.set_name(name);
    c.set_uid(uid);
    return c;
  }

  grpc::Status Prepare(const std::vector<v1::Claim>& claims, v1::NodePrepareResourcesResponse* r,
                       absl::Duration timeout = kWait) {
    v1::NodePrepareResourcesRequest req;
    for (const v1::Claim& c : claims) *req.add_claims() = c;
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline(timeout));
    return Stub().NodePrepareResources(&ctx, req, r);
  }

  grpc::Status Unprepare(const std::vector<v1::Claim>& claims,
                         v1::NodeUnprepareResourcesResponse* r) {
    v1::NodeUnprepareResourcesRequest req;
    for (const v1::Claim& c : claims) *req.add_claims() = c;
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline());
    return Stub().NodeUnprepareResources(&ctx, req, r);
  }

  std::string SpecPath(const std::string& uid) const {
    return CdiSpecPath(dir_.Join("cdi"), kDriver, uid);
  }
  std::string StatePath() const {
    return dir_.Join("plugins/sample.dra.devmgr.io/") + kStateFileName;
  }

  std::vector<json> Slices() {
    apiserver::ApiOr<apiserver::Store::ListResult> list =
        server_.store().List(apiserver::ResourceSlices(), "", apiserver::FieldSelector());
    return list.ok() ? list.value.items : std::vector<json>{};
  }

  testutil::TempDir dir_;
  apiserver::ApiServer server_{RealClock::Get()};
  std::unique_ptr<SampleDraDriver> driver_;
  std::unique_ptr<v1::DRAPlugin::Stub> stub_;
};

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

std::string Read(const std::string& path) {
  absl::StatusOr<std::string> s = fs::Default()->ReadFile(path);
  return s.ok() ? *s : "";
}

TEST_F(SampleDraDriverTest, RegistrationInfoNamesTheDraSocketAndServices) {
  StartDriver();
  auto stub = pluginregistration::Registration::NewStub(
      grpc::CreateChannel("unix:" + dir_.Join("registry/sample.dra.devmgr.io-reg.sock"),
                          grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline());
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(stub->GetInfo(&ctx, pluginregistration::InfoRequest(), &info).ok());
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), kDriver);
  EXPECT_EQ(info.endpoint(), dir_.Join("plugins/sample.dra.devmgr.io/dra.sock"));
  EXPECT_THAT(info.supported_versions(), ElementsAre("v1.DRAPlugin", "v1beta1.DRAPlugin"));
  EXPECT_TRUE(Exists(info.endpoint()));

  grpc::ClientContext ctx2;
  ctx2.set_deadline(Deadline());
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(false);
  status.set_error("none of the services is supported");
  pluginregistration::RegistrationStatusResponse resp;
  ASSERT_TRUE(stub->NotifyRegistrationStatus(&ctx2, status, &resp).ok());
  std::optional<RegistrationOutcome> outcome = driver_->registration().WaitForOutcome(kWait);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_FALSE(outcome->registered);
  EXPECT_EQ(outcome->error, "none of the services is supported");
}

TEST_F(SampleDraDriverTest, PrepareWritesTheCdiSpecAndUnprepareRemovesIt) {
  StartDriver();
  const std::string uid = CreateClaim("claim-a", "dev-0");
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &resp).ok());
  ASSERT_EQ(resp.claims().count(uid), 1u);
  const v1::NodePrepareResourceResponse& r = resp.claims().at(uid);
  EXPECT_EQ(r.error(), "");
  ASSERT_EQ(r.devices_size(), 1);
  EXPECT_THAT(r.devices(0).request_names(), ElementsAre("req"));
  EXPECT_EQ(r.devices(0).pool_name(), kNode);
  EXPECT_EQ(r.devices(0).device_name(), "dev-0");
  const std::string cdi_id = "sample.dra.devmgr.io/device=" + uid + "-dev-0";
  EXPECT_THAT(r.devices(0).cdi_device_ids(), ElementsAre(cdi_id));
  EXPECT_EQ(Read(SpecPath(uid)),
            "{\n  \"cdiVersion\": \"0.6.0\",\n  \"kind\": \"sample.dra.devmgr.io/device\",\n"
            "  \"devices\": [\n    {\n      \"name\": \"" +
                uid +
                "-dev-0\",\n"
                "      \"containerEdits\": {\n        \"env\": [\n"
                "          \"DRA_DEV_0=default/claim-a/req\",\n          \"SAMPLE_VISIBLE=0\"\n"
                "        ]\n      }\n    }\n  ]\n}\n");
  EXPECT_EQ(driver_->core().PreparedForTest().count(uid), 1u);
  EXPECT_THAT(Read(StatePath()), testing::HasSubstr(uid));

  v1::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(Unprepare({Claim("claim-a", uid)}, &un).ok());
  ASSERT_EQ(un.claims().count(uid), 1u);
  EXPECT_EQ(un.claims().at(uid).error(), "");
  EXPECT_FALSE(Exists(SpecPath(uid)));
  EXPECT_THAT(driver_->core().PreparedForTest(), IsEmpty());
}

TEST_F(SampleDraDriverTest, ServesV1beta1Too) {
  StartDriver();
  const std::string uid = CreateClaim("claim-a", "dev-1");
  auto stub = v1beta1::DRAPlugin::NewStub(
      grpc::CreateChannel("unix:" + driver_->dra_socket(), grpc::InsecureChannelCredentials()));
  v1beta1::NodePrepareResourcesRequest req;
  v1beta1::Claim* c = req.add_claims();
  c->set_namespace_(kNs);
  c->set_name("claim-a");
  c->set_uid(uid);
  v1beta1::NodePrepareResourcesResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline());
  ASSERT_TRUE(stub->NodePrepareResources(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.claims().at(uid).devices_size(), 1);
  EXPECT_EQ(resp.claims().at(uid).devices(0).device_name(), "dev-1");
}

TEST_F(SampleDraDriverTest, PrepareIsIdempotentAndRewritesALostSpec) {
  StartDriver();
  const std::string uid = CreateClaim("claim-a", "dev-0");
  v1::NodePrepareResourcesResponse first, second;
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &first).ok());
  const std::string spec = Read(SpecPath(uid));
  std::filesystem::remove(SpecPath(uid));
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &second).ok());
  EXPECT_EQ(first.SerializeAsString(), second.SerializeAsString());
  EXPECT_EQ(Read(SpecPath(uid)), spec);
}

TEST_F(SampleDraDriverTest, ARestartedDriverKnowsItsPreparedClaims) {
  StartDriver();
  const std::string uid = CreateClaim("claim-a", "dev-0");
  v1::NodePrepareResourcesResponse first, second;
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &first).ok());
  StartDriver();
  // The claim is gone from the API: only the state file can answer.
  ASSERT_TRUE(server_.store().Delete(apiserver::ResourceClaims(), kNs, "claim-a", {}).ok());
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &second).ok());
  EXPECT_EQ(first.SerializeAsString(), second.SerializeAsString());
  v1::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(Unprepare({Claim("claim-a", uid)}, &un).ok());
  EXPECT_EQ(un.claims().at(uid).error(), "");
  EXPECT_FALSE(Exists(SpecPath(uid)));
}

TEST_F(SampleDraDriverTest, CallLogRecordsEachPrepareAndUnprepareInOrder) {
  const std::string log = dir_.Join("calls.jsonl");
  StartDriver("", log);
  const std::string uid = CreateClaim("claim-a", "gpu-0");
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-a", uid), Claim("missing", "uid-m")}, &resp).ok());
  v1::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(Unprepare({Claim("claim-a", uid)}, &un).ok());
  std::vector<json> lines;
  for (absl::string_view l : absl::StrSplit(Read(log), '\n', absl::SkipEmpty())) {
    lines.push_back(json::parse(l));
  }
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["method"], "NodePrepareResources");
  EXPECT_EQ(lines[0]["service"], "v1");
  ASSERT_EQ(lines[0]["claims"].size(), 2u);
  EXPECT_EQ(lines[0]["claims"][0], json({{"namespace", kNs}, {"name", "claim-a"}, {"uid", uid}}));
  EXPECT_EQ(lines[0]["claims"][1]["uid"], "uid-m");
  // Only the failed claim has an error.
  ASSERT_EQ(lines[0]["errors"].size(), 1u);
  EXPECT_THAT(lines[0]["errors"]["uid-m"].get<std::string>(), testing::HasSubstr("missing"));
  EXPECT_EQ(lines[1]["method"], "NodeUnprepareResources");
  EXPECT_EQ(lines[1]["errors"], json::object());
}

TEST_F(SampleDraDriverTest, NoCallLogByDefault) {
  StartDriver();
  v1::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(Unprepare({Claim("gone", "uid-never-seen")}, &un).ok());
  EXPECT_FALSE(Exists(dir_.Join("calls.jsonl")));
}

TEST_F(SampleDraDriverTest, UnprepareOfAnUnknownClaimSucceeds) {
  StartDriver();
  v1::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(Unprepare({Claim("gone", "uid-never-seen")}, &un).ok());
  ASSERT_EQ(un.claims().count("uid-never-seen"), 1u);
  EXPECT_EQ(un.claims().at("uid-never-seen").error(), "");
}

TEST_F(SampleDraDriverTest, PrepareFailsForAClaimNotAllocatedOrReplaced) {
  StartDriver();
  const std::string uid = CreateClaim("claim-a", "dev-0");
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-a", "other-uid"), Claim("missing", "uid-m")}, &resp).ok());
  EXPECT_THAT(resp.claims().at("other-uid").error(),
              testing::HasSubstr("claim default/claim-a: got replaced"));
  EXPECT_THAT(resp.claims().at("uid-m").error(),
              testing::HasSubstr("retrieve claim default/missing"));
  EXPECT_FALSE(Exists(SpecPath("other-uid")));
  EXPECT_THAT(driver_->core().PreparedForTest(), IsEmpty());
}

TEST_F(SampleDraDriverTest, PublishesOneValidSliceAndReplacesItOnRestart) {
  StartDriver();
  EXPECT_OK(driver_->publish_status());
  std::vector<json> slices = Slices();
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_THAT(apiserver::ValidateResourceSlice(slices[0], nullptr), IsEmpty());
  const json& spec = slices[0]["spec"];
  EXPECT_EQ(spec["driver"], kDriver);
  EXPECT_EQ(spec["nodeName"], kNode);
  EXPECT_EQ(spec["pool"], json({{"name", kNode}, {"generation", 1}, {"resourceSliceCount", 1}}));
  ASSERT_EQ(spec["devices"].size(), 2u);
  EXPECT_EQ(
      spec["devices"][0],
      json({{"name", "dev-0"},
            {"attributes", {{"memory", {{"int", 40}}}, {"model", {{"string", "sample-a"}}}}}}));
  EXPECT_EQ(spec["devices"][1]["attributes"],
            json({{"fw", {{"version", "1.2.3"}}}, {"ok", {{"bool", true}}}}));
  StartDriver();
  slices = Slices();
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0]["spec"]["pool"]["generation"], 2);
}

TEST_F(SampleDraDriverTest, PrepareTakesOnlyItsOwnDriversResults) {
  StartDriver();
  const std::string uid = CreateClaim("claim-a", "other-dev", "other.example.com");
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &resp).ok());
  EXPECT_EQ(resp.claims().at(uid).error(), "");
  EXPECT_EQ(resp.claims().at(uid).devices_size(), 0);
}

TEST_F(SampleDraDriverTest, PrepareFailsForAClaimWithoutAllocation) {
  StartDriver();
  json claim = {{"metadata", {{"name", "pending"}, {"namespace", kNs}}}, {"spec", json::object()}};
  apiserver::ApiOr<json> created = server_.store().Create(apiserver::ResourceClaims(), kNs, claim);
  ASSERT_TRUE(created.ok());
  const std::string uid = created.value["metadata"]["uid"];
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("pending", uid)}, &resp).ok());
  EXPECT_EQ(resp.claims().at(uid).error(), "claim default/pending: not allocated");
}

TEST_F(SampleDraDriverTest, ACorruptStateFileStopsTheStart) {
  StartDriver();
  driver_->Stop();
  ASSERT_OK(fs::WriteOutputFile(StatePath(), "{not json"));
  absl::StatusOr<Config> config = ParseConfig(kDevicesYaml, "test.yaml");
  ASSERT_OK(config.status());
  DriverOptions o = Options();
  SampleDraDriver d(*std::move(config), o);
  absl::Status s = d.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_EQ(s.message(), StatePath() + ": not a version 1 state file");
}

TEST_F(SampleDraDriverTest, AdvertisesTheConfiguredServices) {
  absl::StatusOr<Config> config = ParseConfig(
      std::string(kDevicesYaml) + "registration:\n  supported_versions: [v1beta1.DRAPlugin]\n",
      "test.yaml");
  ASSERT_OK(config.status());
  EXPECT_THAT(config->supported_versions, ElementsAre("v1beta1.DRAPlugin"));
  config = ParseConfig(std::string(kDevicesYaml) + "registration:\n  supported_versions: []\n",
                       "test.yaml");
  ASSERT_OK(config.status());
  EXPECT_THAT(config->supported_versions, IsEmpty());
}

// ---- misbehaviours (misbehave.*), each doing what the docs say ----

TEST_F(SampleDraDriverTest, MisbehaviourPrepareNotIdempotentAnswersAnotherDevice) {
  StartDriver("  prepare_not_idempotent: true\n");
  const std::string uid = CreateClaim("claim-a", "dev-0");
  v1::NodePrepareResourcesResponse first, second;
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &first).ok());
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &second).ok());
  EXPECT_EQ(first.claims().at(uid).devices(0).device_name(), "dev-0");
  EXPECT_EQ(second.claims().at(uid).devices(0).device_name(), "dev-1");
  EXPECT_THAT(second.claims().at(uid).devices(0).cdi_device_ids(),
              ElementsAre("sample.dra.devmgr.io/device=" + uid + "-dev-1"));
}

TEST_F(SampleDraDriverTest, MisbehaviourUnprepareUnknownFails) {
  StartDriver("  unprepare_unknown_fails: true\n");
  v1::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(Unprepare({Claim("gone", "uid-x")}, &un).ok());
  EXPECT_EQ(un.claims().at("uid-x").error(), "claim uid-x is not prepared by sample.dra.devmgr.io");
}

TEST_F(SampleDraDriverTest, MisbehaviourFailClaimsFailsOneClaimOfABatchAndCleansUp) {
  StartDriver("  fail_claims: [claim-b]\n");
  const std::string a = CreateClaim("claim-a", "dev-0");
  const std::string b = CreateClaim("claim-b", "dev-1");
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-a", a), Claim("claim-b", b)}, &resp).ok());
  EXPECT_EQ(resp.claims().at(a).error(), "");
  EXPECT_EQ(resp.claims().at(a).devices_size(), 1);
  EXPECT_EQ(resp.claims().at(b).error(), "injected failure preparing claim default/claim-b");
  // Without leak_state_on_failure the failed claim leaves nothing behind.
  EXPECT_TRUE(Exists(SpecPath(a)));
  EXPECT_FALSE(Exists(SpecPath(b)));
  EXPECT_EQ(driver_->core().PreparedForTest().count(b), 0u);
}

TEST_F(SampleDraDriverTest, MisbehaviourLeakStateOnFailureKeepsSpecAndState) {
  StartDriver("  fail_claims: [claim-b]\n  leak_state_on_failure: true\n");
  const std::string b = CreateClaim("claim-b", "dev-1");
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-b", b)}, &resp).ok());
  EXPECT_NE(resp.claims().at(b).error(), "");
  EXPECT_TRUE(Exists(SpecPath(b)));
  EXPECT_EQ(driver_->core().PreparedForTest().count(b), 1u);
  EXPECT_THAT(Read(StatePath()), testing::HasSubstr(b));
}

TEST_F(SampleDraDriverTest, MisbehaviourCdiSpecSkipWritesNoSpec) {
  StartDriver("  cdi_spec: skip\n");
  const std::string uid = CreateClaim("claim-a", "dev-0");
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &resp).ok());
  EXPECT_EQ(resp.claims().at(uid).devices(0).cdi_device_ids_size(), 1);
  EXPECT_FALSE(Exists(SpecPath(uid)));
  EXPECT_THAT(std::filesystem::is_empty(dir_.Join("cdi")), true);
}

TEST_F(SampleDraDriverTest, MisbehaviourCdiSpecWrongDirWritesIntoThePluginDir) {
  StartDriver("  cdi_spec: wrong_dir\n");
  const std::string uid = CreateClaim("claim-a", "dev-0");
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &resp).ok());
  EXPECT_FALSE(Exists(SpecPath(uid)));
  EXPECT_TRUE(Exists(CdiSpecPath(dir_.Join("plugins/sample.dra.devmgr.io/cdi"), kDriver, uid)));
}

TEST_F(SampleDraDriverTest, MisbehaviourOmitClaimsLeavesAClaimOutOfTheAnswer) {
  StartDriver("  omit_claims: [claim-b]\n");
  const std::string a = CreateClaim("claim-a", "dev-0");
  const std::string b = CreateClaim("claim-b", "dev-1");
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-a", a), Claim("claim-b", b)}, &resp).ok());
  EXPECT_EQ(resp.claims().size(), 1u);
  EXPECT_EQ(resp.claims().count(a), 1u);
}

TEST_F(SampleDraDriverTest, MisbehaviourPrepareDelayOutlastsTheCallersDeadline) {
  StartDriver("  prepare_delay: 1h\n");
  const std::string uid = CreateClaim("claim-a", "dev-0");
  v1::NodePrepareResourcesResponse resp;
  grpc::Status s = Prepare({Claim("claim-a", uid)}, &resp, absl::Milliseconds(300));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // TearDown's Stop wakes the waiting handler.
}

TEST_F(SampleDraDriverTest, MisbehaviourRegisterBeforeServingAdvertisesAMissingSocket) {
  StartDriver("  register_before_serving: 1h\n");
  EXPECT_TRUE(Exists(driver_->registration_socket()));
  EXPECT_FALSE(Exists(driver_->dra_socket()));
  EXPECT_FALSE(driver_->WaitUntilServing(absl::ZeroDuration()));
  // With a short delay the DRA socket follows.
  StartDriver("  register_before_serving: 100ms\n");
  EXPECT_TRUE(driver_->WaitUntilServing(kWait));
  EXPECT_TRUE(Exists(driver_->dra_socket()));
}

TEST_F(SampleDraDriverTest, MisbehaviourInvalidSliceIsRejectedByTheApiServer) {
  StartDriver("  invalid_slice: true\n");
  EXPECT_EQ(driver_->publish_status().code(), absl::StatusCode::kInvalidArgument)
      << driver_->publish_status();
  EXPECT_THAT(std::string(driver_->publish_status().message()),
              testing::HasSubstr("spec.devices[0].name"));
  EXPECT_THAT(Slices(), IsEmpty());
  bool rejected = false;
  for (const apiserver::RequestRecord& r : server_.Requests()) {
    rejected |= r.method == "POST" && r.status == 422;
  }
  EXPECT_TRUE(rejected);
}

TEST_F(SampleDraDriverTest, MisbehaviourRegistrationTypeAnswersAnotherType) {
  StartDriver("  registration_type: DevicePlugin\n");
  auto stub = pluginregistration::Registration::NewStub(grpc::CreateChannel(
      "unix:" + driver_->registration_socket(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline());
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(stub->GetInfo(&ctx, pluginregistration::InfoRequest(), &info).ok());
  EXPECT_EQ(info.type(), "DevicePlugin");
  EXPECT_EQ(info.name(), kDriver);
}

TEST_F(SampleDraDriverTest, MisbehaviourPrepareWrongDeviceAnswersAnUnallocatedDevice) {
  StartDriver("  prepare_wrong_device: true\n");
  const std::string uid = CreateClaim("claim-a", "dev-0");
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &resp).ok());
  ASSERT_EQ(resp.claims().at(uid).devices_size(), 1);
  EXPECT_EQ(resp.claims().at(uid).devices(0).device_name(), "dev-0-unallocated");
  EXPECT_EQ(resp.claims().at(uid).devices(0).pool_name(), kNode);
}

TEST_F(SampleDraDriverTest, MisbehaviourPrepareAfterUnprepareFails) {
  StartDriver("  prepare_after_unprepare_fails: true\n");
  const std::string uid = CreateClaim("claim-a", "dev-0");
  v1::NodePrepareResourcesResponse first, again;
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &first).ok());
  EXPECT_EQ(first.claims().at(uid).error(), "");
  v1::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(Unprepare({Claim("claim-a", uid)}, &un).ok());
  EXPECT_EQ(un.claims().at(uid).error(), "");
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &again).ok());
  EXPECT_EQ(again.claims().at(uid).error(),
            "claim " + uid + " was unprepared; not preparing it again");
}

TEST_F(SampleDraDriverTest, MisbehaviourBatchMixesClaimsAnswersTheFirstClaimsDevices) {
  StartDriver("  batch_mixes_claims: true\n");
  const std::string a = CreateClaim("claim-a", "dev-0");
  const std::string b = CreateClaim("claim-b", "dev-1");
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-a", a), Claim("claim-b", b)}, &resp).ok());
  ASSERT_EQ(resp.claims().at(b).devices_size(), 1);
  EXPECT_EQ(resp.claims().at(a).devices(0).device_name(), "dev-0");
  EXPECT_EQ(resp.claims().at(b).devices(0).device_name(), "dev-0");
  // One claim at a time is answered well.
  const std::string c = CreateClaim("claim-c", "dev-1");
  v1::NodePrepareResourcesResponse one;
  ASSERT_TRUE(Prepare({Claim("claim-c", c)}, &one).ok());
  EXPECT_EQ(one.claims().at(c).devices(0).device_name(), "dev-1");
}

TEST_F(SampleDraDriverTest, MisbehaviourUnprepareReadsClaimFailsForADeletedClaim) {
  StartDriver("  unprepare_reads_claim: true\n");
  const std::string a = CreateClaim("claim-a", "dev-0");
  const std::string b = CreateClaim("claim-b", "dev-1");
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-a", a), Claim("claim-b", b)}, &resp).ok());
  ASSERT_TRUE(
      server_.store()
          .Delete(apiserver::ResourceClaims(), kNs, "claim-b", apiserver::Store::Preconditions{})
          .ok());
  v1::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(Unprepare({Claim("claim-a", a), Claim("claim-b", b)}, &un).ok());
  EXPECT_EQ(un.claims().at(a).error(), "");
  EXPECT_THAT(un.claims().at(b).error(), testing::HasSubstr("retrieve claim default/claim-b: "));
  EXPECT_EQ(driver_->core().PreparedForTest().count(b), 1u);
}

TEST_F(SampleDraDriverTest, MisbehaviourPrepareIgnoresUidPreparesAReplacedClaim) {
  StartDriver("  prepare_ignores_uid: true\n");
  CreateClaim("claim-a", "dev-1");
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-a", "uid-of-a-deleted-claim-a")}, &resp).ok());
  EXPECT_EQ(resp.claims().at("uid-of-a-deleted-claim-a").error(), "");
  ASSERT_EQ(resp.claims().at("uid-of-a-deleted-claim-a").devices_size(), 1);
  EXPECT_EQ(resp.claims().at("uid-of-a-deleted-claim-a").devices(0).device_name(), "dev-1");
}

TEST_F(SampleDraDriverTest, MisbehaviourReprepareAddsSpecLeavesAnotherSpec) {
  StartDriver("  reprepare_adds_spec: true\n");
  const std::string uid = CreateClaim("claim-a", "dev-0");
  v1::NodePrepareResourcesResponse first, again;
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &first).ok());
  EXPECT_FALSE(Exists(SpecPath(uid + "-again")));
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &again).ok());
  EXPECT_EQ(again.claims().at(uid).devices(0).device_name(), "dev-0");
  EXPECT_TRUE(Exists(SpecPath(uid + "-again")));
  v1::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(Unprepare({Claim("claim-a", uid)}, &un).ok());
  EXPECT_TRUE(Exists(SpecPath(uid + "-again")));
}

// Sets claim `name`'s allocation config: an opaque config for this driver
// with `parameters`, for request "req".
void SetOpaqueConfig(apiserver::ApiServer& server, const std::string& name,
                     const json& parameters) {
  apiserver::ApiOr<json> got = server.store().Get(apiserver::ResourceClaims(), kNs, name);
  ASSERT_TRUE(got.ok());
  got.value["status"]["allocation"]["devices"]["config"] =
      json::array({{{"source", "FromClaim"},
                    {"requests", json::array({"req"})},
                    {"opaque", {{"driver", kDriver}, {"parameters", parameters}}}}});
  ASSERT_TRUE(server.store()
                  .Update(apiserver::ResourceClaims(), kNs, name, got.value, /*status_only=*/true)
                  .ok());
}

TEST_F(SampleDraDriverTest, AnUnsupportedOpaqueConfigIsRefusedBeforeAnythingIsWritten) {
  StartDriver();
  const std::string a = CreateClaim("claim-a", "dev-0");
  const std::string b = CreateClaim("claim-b", "dev-1");
  SetOpaqueConfig(server_, "claim-b", {{"apiVersion", "other.example.com/v1"}, {"kind", "X"}});
  SetOpaqueConfig(server_, "claim-a", {{"apiVersion", std::string(kDriver) + "/v1"}});
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-a", a), Claim("claim-b", b)}, &resp).ok());
  EXPECT_EQ(resp.claims().at(a).error(), "");
  EXPECT_EQ(resp.claims().at(b).error(),
            "claim default/claim-b: unsupported opaque config other.example.com/v1/X for "
            "request(s) [\"req\"]; sample.dra.devmgr.io reads sample.dra.devmgr.io/v1 only");
  EXPECT_FALSE(Exists(SpecPath(b)));
  EXPECT_EQ(driver_->core().PreparedForTest().count(b), 0u);
}

TEST_F(SampleDraDriverTest, MisbehaviourLeakSpecOnFailureKeepsTheSpecOfARefusedClaim) {
  StartDriver("  leak_spec_on_failure: true\n");
  const std::string b = CreateClaim("claim-b", "dev-1");
  SetOpaqueConfig(server_, "claim-b", {{"apiVersion", "other.example.com/v1"}, {"kind", "X"}});
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-b", b)}, &resp).ok());
  EXPECT_THAT(resp.claims().at(b).error(), testing::HasSubstr("unsupported opaque config"));
  EXPECT_TRUE(Exists(SpecPath(b)));
  EXPECT_EQ(driver_->core().PreparedForTest().count(b), 0u);
  // Unprepare knows no such claim: the spec stays.
  v1::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(Unprepare({Claim("claim-b", b)}, &un).ok());
  EXPECT_EQ(un.claims().at(b).error(), "");
  EXPECT_TRUE(Exists(SpecPath(b)));
}

TEST_F(SampleDraDriverTest, MisbehaviourRestoredUnprepareFailsAfterARestartOnly) {
  StartDriver("  restored_unprepare_fails: true\n");
  const std::string a = CreateClaim("claim-a", "dev-0");
  const std::string b = CreateClaim("claim-b", "dev-1");
  v1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(Prepare({Claim("claim-a", a), Claim("claim-b", b)}, &resp).ok());
  v1::NodeUnprepareResourcesResponse un;
  ASSERT_TRUE(Unprepare({Claim("claim-b", b)}, &un).ok());
  EXPECT_EQ(un.claims().at(b).error(), "");
  StartDriver("  restored_unprepare_fails: true\n");
  v1::NodePrepareResourcesResponse again;
  ASSERT_TRUE(Prepare({Claim("claim-a", a)}, &again).ok());
  EXPECT_EQ(again.claims().at(a).error(), "");
  EXPECT_EQ(again.claims().at(a).devices(0).device_name(), "dev-0");
  ASSERT_TRUE(Unprepare({Claim("claim-a", a)}, &un).ok());
  EXPECT_EQ(un.claims().at(a).error(),
            "claim default/claim-a: no handle for its devices (restored from "
            "prepared-claims.json)");
  EXPECT_EQ(driver_->core().PreparedForTest().count(a), 1u);
}

TEST_F(SampleDraDriverTest, MisbehaviourReprepareSkipsSpecDoesNotRewriteALostSpec) {
  StartDriver("  reprepare_skips_spec: true\n");
  const std::string uid = CreateClaim("claim-a", "dev-0");
  v1::NodePrepareResourcesResponse first, second;
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &first).ok());
  std::filesystem::remove(SpecPath(uid));
  ASSERT_TRUE(Prepare({Claim("claim-a", uid)}, &second).ok());
  EXPECT_EQ(first.SerializeAsString(), second.SerializeAsString());
  EXPECT_FALSE(Exists(SpecPath(uid)));
}

TEST_F(SampleDraDriverTest, MisbehaviourPublishOnlyFirstStartPublishesNothingAfterARestart) {
  StartDriver("  publish_only_first_start: true\n");
  ASSERT_EQ(Slices().size(), 1u);
  // As the kubelet's wipe does while the driver is away.
  ASSERT_TRUE(server_.store()
                  .Delete(apiserver::ResourceSlices(), "",
                          Slices()[0]["metadata"]["name"].get<std::string>(),
                          apiserver::Store::Preconditions{})
                  .ok());
  StartDriver("  publish_only_first_start: true\n");
  EXPECT_TRUE(Slices().empty());
  EXPECT_TRUE(Exists(dir_.Join("plugins/sample.dra.devmgr.io/published")));
}

// ---- the config ----

TEST(SampleDraDriverConfigTest, UnknownKeysAreNamedWithTheirPosition) {
  EXPECT_EQ(ParseConfig("devcies: []\n", "c.yaml").status().message(),
            "c.yaml:1:1: unknown key 'devcies' in the config (did you mean 'devices'?)");
  EXPECT_EQ(
      ParseConfig("devices: []\nmisbehave:\n  cdi_spec: wrongdir\n", "c.yaml").status().message(),
      "c.yaml:3:13: misbehave.cdi_spec must be write, skip or wrong_dir (did you mean "
      "'wrong_dir'?)");
  EXPECT_EQ(
      ParseConfig("devices: []\nregistration:\n  supported_versions: [v2.DRAPlugin]\n", "c.yaml")
          .status()
          .message(),
      "c.yaml:3:24: unknown service 'v2.DRAPlugin' (did you mean 'v1.DRAPlugin'?)");
}

TEST(SampleDraDriverConfigTest, TheExampleParses) {
  absl::StatusOr<Config> c =
      LoadConfig(devmgr::testutil::SourcePath("examples/sample-dra-driver.yaml"));
  ASSERT_OK(c.status());
  EXPECT_EQ(c->devices.size(), 4u);
  EXPECT_EQ(c->CdiKind(), "sample.dra.devmgr.io/gpu");
  // Its slice is one a validating API server accepts (which names it from generateName).
  json slice = BuildResourceSlice(*c, kNode, 1);
  slice["metadata"]["name"] = "node-a-sample.dra.devmgr.io-abcde";
  EXPECT_THAT(apiserver::ValidateResourceSlice(slice, nullptr), IsEmpty());
}

// ---- device health (DRAResourceHealth, config `health`, --health-control) ----

TEST(SampleDraDriverHealthConfigTest, ServesTheAdvertisedHealthServicesUnlessToldOtherwise) {
  absl::StatusOr<Config> config = ParseConfig(std::string(kDevicesYaml) +
                                                  "registration:\n  supported_versions: "
                                                  "[v1.DRAPlugin, v1.DRAResourceHealth]\n",
                                              "test.yaml");
  ASSERT_OK(config.status());
  EXPECT_THAT(config->ServedHealth(), ElementsAre("v1.DRAResourceHealth"));
  EXPECT_EQ(config->devices[0].health, "Healthy");
  // Served without being advertised (what 1.34-1.36 watch anyway).
  config = ParseConfig(std::string(kDevicesYaml) +
                           "health:\n  serve: [v1alpha1.DRAResourceHealth]\n  timeout_seconds: 5\n",
                       "test.yaml");
  ASSERT_OK(config.status());
  EXPECT_THAT(config->ServedHealth(), ElementsAre("v1alpha1.DRAResourceHealth"));
  EXPECT_EQ(config->health.timeout_seconds, 5);
  config = ParseConfig("devices:\n  - {name: d, health: Sick}\n", "test.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()), testing::HasSubstr("unknown health 'Sick'"));
  config = ParseConfig("devices: [{name: d}]\nhealth: {serve: [v2.DRAResourceHealth]}\n", "t.yaml");
  EXPECT_FALSE(config.ok());
}

TEST(SampleDraDriverHealthTest, ControlLinesChangeTheListAndEndTheStreams) {
  absl::StatusOr<Config> config = ParseConfig(
      "devices:\n  - {name: gpu-0}\n  - {name: gpu-1, health: Unhealthy, health_message: hot}\n"
      "health: {serve: [v1.DRAResourceHealth], timeout_seconds: 7}\n",
      "test.yaml");
  ASSERT_OK(config.status());
  HealthService h(*config, "node-a");
  ASSERT_EQ(h.Services().size(), 1u);
  devmgr::testutil::TempDir dir;
  grpc::ServerBuilder b;
  b.AddListeningPort("unix:" + dir.Join("h.sock"), grpc::InsecureServerCredentials());
  for (grpc::Service* s : h.Services()) b.RegisterService(s);
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = ::v1::DRAResourceHealth::NewStub(
      grpc::CreateChannel("unix:" + dir.Join("h.sock"), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline());
  auto reader = stub->NodeWatchResources(&ctx, ::v1::NodeWatchResourcesRequest());
  ::v1::NodeWatchResourcesResponse resp;
  ASSERT_TRUE(reader->Read(&resp));
  ASSERT_EQ(resp.devices_size(), 2);
  EXPECT_EQ(resp.devices(0).device().pool_name(), "node-a");
  EXPECT_EQ(resp.devices(0).health(), ::v1::HEALTHY);
  EXPECT_EQ(resp.devices(0).health_check_timeout_seconds(), 7);
  EXPECT_EQ(resp.devices(1).health(), ::v1::UNHEALTHY);
  EXPECT_EQ(resp.devices(1).message(), "hot");

  ASSERT_OK(h.ApplyControlLine("health gpu-0 Unhealthy ECC errors: 3"));
  ASSERT_TRUE(reader->Read(&resp));
  EXPECT_EQ(resp.devices(0).health(), ::v1::UNHEALTHY);
  EXPECT_EQ(resp.devices(0).message(), "ECC errors: 3");
  ASSERT_OK(h.ApplyControlLine("silence gpu-1"));
  ASSERT_TRUE(reader->Read(&resp));
  ASSERT_EQ(resp.devices_size(), 1);
  EXPECT_EQ(resp.devices(0).device().device_name(), "gpu-0");
  EXPECT_FALSE(h.ApplyControlLine("health gpu-9 Healthy").ok());
  EXPECT_FALSE(h.ApplyControlLine("health gpu-0 Sick").ok());
  EXPECT_FALSE(h.ApplyControlLine("reboot").ok());
  EXPECT_OK(h.ApplyControlLine("# a comment"));
  ASSERT_OK(h.ApplyControlLine("end-health-streams"));
  EXPECT_FALSE(reader->Read(&resp));
  EXPECT_OK(reader->Finish());
  h.Stop();
  server->Shutdown(Deadline(absl::Seconds(1)));
}

// The driver reads --health-control as lines are appended; a driver that
// serves no health service answers Unimplemented (what 1.37 stops on).
TEST_F(SampleDraDriverTest, TheHealthControlFileSteersTheStreams) {
  absl::StatusOr<Config> config =
      ParseConfig(std::string(kDevicesYaml) +
                      "registration:\n  supported_versions: [v1.DRAPlugin, "
                      "v1alpha1.DRAResourceHealth]\n",
                  "test.yaml");
  ASSERT_OK(config.status());
  DriverOptions o = Options();
  o.health_control = dir_.Join("health-control");
  o.health_control_poll = absl::Milliseconds(20);
  driver_ = std::make_unique<SampleDraDriver>(*std::move(config), o);
  ASSERT_OK(driver_->Start());
  auto stub = ::v1alpha1::DRAResourceHealth::NewStub(
      grpc::CreateChannel("unix:" + driver_->dra_socket(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline());
  auto reader = stub->NodeWatchResources(&ctx, ::v1alpha1::NodeWatchResourcesRequest());
  ::v1alpha1::NodeWatchResourcesResponse resp;
  ASSERT_TRUE(reader->Read(&resp));
  ASSERT_EQ(resp.devices_size(), 2);
  EXPECT_EQ(resp.devices(1).health(), ::v1alpha1::HEALTHY);
  ASSERT_OK(fs::WriteOutputFile(o.health_control, "health dev-1 Unhealthy\n"));
  ASSERT_TRUE(reader->Read(&resp));
  EXPECT_EQ(resp.devices(1).health(), ::v1alpha1::UNHEALTHY);
  ctx.TryCancel();
  (void)reader->Finish();

  // The v1 service is neither advertised nor served.
  auto v1stub = ::v1::DRAResourceHealth::NewStub(
      grpc::CreateChannel("unix:" + driver_->dra_socket(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx1;
  ctx1.set_deadline(Deadline());
  auto r1 = v1stub->NodeWatchResources(&ctx1, ::v1::NodeWatchResourcesRequest());
  ::v1::NodeWatchResourcesResponse resp1;
  EXPECT_FALSE(r1->Read(&resp1));
  EXPECT_EQ(r1->Finish().error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

}  // namespace
}  // namespace devmgr::draplugin
