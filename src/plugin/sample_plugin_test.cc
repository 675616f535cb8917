// In-process tests of SamplePlugin against a tiny fake kubelet
// (fake_kubelet_testutil.h). Real unix sockets in per-test temp dirs.
#include "plugin/sample_plugin.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/status_testutil.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "plugin/fake_kubelet_testutil.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace devmgr::plugin {
namespace {

using ::testing::ElementsAre;

using testing_util::Deadline;
using testing_util::Dial;
using testing_util::FakeKubelet;
using testing_util::kReceived;
using testing_util::kTimeout;

class SamplePluginTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dmplXXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    plugin_.reset();
    for (auto& k : kubelets_) k->Stop();
    kubelets_.clear();
    std::filesystem::remove_all(dir_);
  }

  FakeKubelet* StartKubelet() {
    kubelets_.push_back(std::make_unique<FakeKubelet>(dir_));
    kubelets_.back()->Start();
    return kubelets_.back().get();
  }

  SamplePlugin* StartPlugin(const std::string& yaml, PluginOptions o = {}) {
    absl::StatusOr<Config> c = ParseConfig(yaml, "test.yaml");
    EXPECT_OK(c);
    if (!c.ok()) return nullptr;
    o.dir = dir_;
    if (o.registry_dir == kDefaultPluginsRegistryDir) o.registry_dir = dir_;
    plugin_ = std::make_unique<SamplePlugin>(*c, o);
    absl::Status s = plugin_->Start();
    EXPECT_OK(s) << s;
    return plugin_.get();
  }

  std::unique_ptr<v1beta1::DevicePlugin::Stub> PluginStub() {
    return v1beta1::DevicePlugin::NewStub(Dial(plugin_->socket_path()));
  }

  // The methods of the call-log records of `kind` ("" = all), in order.
  std::vector<std::string> Methods(const std::string& kind = "") {
    std::vector<std::string> m;
    for (const CallRecord& r : Records(kind)) m.push_back(r.method);
    return m;
  }
  std::vector<CallRecord> Records(const std::string& kind) {
    std::vector<CallRecord> out;
    for (const CallRecord& r : plugin_->CallLog()) {
      if (kind.empty() || r.kind == kind) out.push_back(r);
    }
    return out;
  }

  std::string dir_;
  std::vector<std::unique_ptr<FakeKubelet>> kubelets_;
  std::unique_ptr<SamplePlugin> plugin_;
};

constexpr char kBasic[] = R"(
resource: example.com/gpu
devices:
  - {id: gpu-0, numa: [0]}
  - {id: gpu-1, numa: [0]}
  - {id: gpu-2, numa: [1]}
  - {id: gpu-3}
options: {pre_start_required: true, get_preferred_allocation_available: true}
allocate:
  envs: {VISIBLE: "{{.DeviceIDs}}"}
  per_device:
    cdi_devices: ["example.com/gpu={{.DeviceID}}"]
)";

TEST_F(SamplePluginTest, RegistersAndServesLikeARealPlugin) {
  FakeKubelet* k = StartKubelet();
  SamplePlugin* p = StartPlugin(kBasic);
  ASSERT_TRUE(p->WaitForRegistered(kTimeout));
  ASSERT_EQ(k->requests().size(), 1u);
  const v1beta1::RegisterRequest req = k->requests()[0];
  EXPECT_EQ(req.version(), "v1beta1");
  EXPECT_EQ(req.endpoint(), "example.com-gpu.sock");
  EXPECT_EQ(req.resource_name(), "example.com/gpu");
  EXPECT_TRUE(req.options().pre_start_required());
  EXPECT_TRUE(req.options().get_preferred_allocation_available());
  EXPECT_TRUE(k->options().pre_start_required());

  auto first = k->WaitForUpdate(0, 1);
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->devices_size(), 4);
  EXPECT_EQ(first->devices(0).id(), "gpu-0");
  EXPECT_EQ(first->devices(0).health(), "Healthy");
  ASSERT_EQ(first->devices(2).topology().nodes_size(), 1);
  EXPECT_EQ(first->devices(2).topology().nodes(0).id(), 1);
  EXPECT_FALSE(first->devices(3).has_topology());

  // Allocate over the plugin's socket.
  auto stub = PluginStub();
  v1beta1::AllocateRequest areq;
  areq.add_container_requests()->add_devices_ids("gpu-1");
  areq.mutable_container_requests(0)->add_devices_ids("gpu-0");
  v1beta1::AllocateResponse aresp;
  grpc::ClientContext actx;
  ASSERT_OK(stub->Allocate(&actx, areq, &aresp));
  ASSERT_EQ(aresp.container_responses_size(), 1);
  EXPECT_EQ(aresp.container_responses(0).envs().at("VISIBLE"), "gpu-1,gpu-0");
  ASSERT_EQ(aresp.container_responses(0).cdi_devices_size(), 2);
  EXPECT_EQ(aresp.container_responses(0).cdi_devices(1).name(), "example.com/gpu=gpu-0");

  // Unknown devices are rejected, as a careful plugin does.
  v1beta1::AllocateRequest bad;
  bad.add_container_requests()->add_devices_ids("gpu-9");
  grpc::ClientContext bctx;
  grpc::Status bs = stub->Allocate(&bctx, bad, &aresp);
  EXPECT_EQ(bs.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(bs.error_message(),
            "invalid allocation request for \"example.com/gpu\": unknown device: gpu-9");

  // GetPreferredAllocation (policy first) and PreStartContainer.
  v1beta1::PreferredAllocationRequest preq;
  auto* cr = preq.add_container_requests();
  for (const char* id : {"gpu-3", "gpu-2", "gpu-1"}) cr->add_available_deviceids(id);
  cr->add_must_include_deviceids("gpu-3");
  cr->set_allocation_size(2);
  v1beta1::PreferredAllocationResponse presp;
  grpc::ClientContext pctx;
  ASSERT_OK(stub->GetPreferredAllocation(&pctx, preq, &presp));
  ASSERT_EQ(presp.container_responses_size(), 1);
  EXPECT_THAT(presp.container_responses(0).deviceids(), ElementsAre("gpu-3", "gpu-1"));
  v1beta1::PreStartContainerRequest sreq;
  sreq.add_devices_ids("gpu-1");
  v1beta1::PreStartContainerResponse sresp;
  grpc::ClientContext sctx;
  EXPECT_OK(stub->PreStartContainer(&sctx, sreq, &sresp));

  // The call log has everything, in order, with arguments. The sent Register
  // record is written when the call returns, so it races with ListAndWatch.
  EXPECT_THAT(Methods(kReceived),
              ElementsAre("GetDevicePluginOptions", "ListAndWatch", "Allocate", "Allocate",
                          "GetPreferredAllocation", "PreStartContainer"));
  const std::vector<CallRecord> sent = Records("sent");
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].method, "Register");
  EXPECT_EQ(sent[0].args["resource_name"], "example.com/gpu");
  EXPECT_EQ(sent[0].error, "");
  const std::vector<CallRecord> log = Records(kReceived);
  EXPECT_EQ(log[2].args["container_requests"][0]["devices_ids"][0], "gpu-1");
  EXPECT_EQ(log[4].args["container_requests"][0]["must_include_deviceIDs"][0], "gpu-3");
  EXPECT_EQ(log[4].args["container_requests"][0]["allocation_size"], 2);
  const std::string json = CallRecordToJson(log[5]);
  EXPECT_EQ(json.substr(json.find("\"kind\"")),
            "\"kind\":\"received\",\"method\":\"PreStartContainer\",\"args\":{\"devices_ids\":"
            "[\"gpu-1\"]}}");
}

TEST_F(SamplePluginTest, HealthFlipIsSentOnTheStream) {
  FakeKubelet* k = StartKubelet();
  SamplePlugin* p = StartPlugin(kBasic);
  ASSERT_TRUE(k->WaitForUpdate(0, 1).has_value());
  ASSERT_TRUE(p->SetHealth("gpu-2", "Unhealthy"));
  auto second = k->WaitForUpdate(0, 2);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->devices(2).health(), "Unhealthy");
  EXPECT_EQ(second->devices(1).health(), "Healthy");
  EXPECT_FALSE(p->SetHealth("nope", "Unhealthy"));
}

TEST_F(SamplePluginTest, ScheduledHealthChanges) {
  FakeKubelet* k = StartKubelet();
  StartPlugin(std::string(kBasic) + R"(
health_changes:
  - {after: 500ms, device: gpu-1, health: Unhealthy}
  - {after: 1s, device: gpu-1, health: Healthy}
)");
  // The first change normally comes after the first send (registration takes
  // milliseconds), but accept it in any update; then the second one follows.
  size_t n = 1;
  for (; n <= 3; ++n) {
    auto u = k->WaitForUpdate(0, n);
    ASSERT_TRUE(u.has_value());
    if (u->devices(1).health() == "Unhealthy") break;
  }
  ASSERT_LE(n, 2u);
  auto b = k->WaitForUpdate(0, n + 1);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->devices(1).health(), "Healthy");
}

TEST_F(SamplePluginTest, ResendsAndShufflesTheFullList) {
  FakeKubelet* k = StartKubelet();
  StartPlugin(R"(
resource: example.com/nic
devices: [{count: 64, id_prefix: vf-}]
list_and_watch: {resend_interval: 20ms, shuffle: true, seed: 42}
)");
  auto first = k->WaitForUpdate(0, 1);
  auto third = k->WaitForUpdate(0, 3);  // re-sent without any change
  ASSERT_TRUE(first.has_value() && third.has_value());
  ASSERT_EQ(third->devices_size(), 64);
  std::vector<std::string> a, b;
  for (const auto& d : first->devices()) a.push_back(d.id());
  for (const auto& d : third->devices()) b.push_back(d.id());
  EXPECT_NE(a, b);  // another order (64! orders: equal only by a 1e-89 chance)
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
}

TEST_F(SamplePluginTest, EmptyListAndWatch) {
  FakeKubelet* k = StartKubelet();
  StartPlugin(std::string(kBasic) + "faults: {list_and_watch: {empty: true}}\n");
  auto first = k->WaitForUpdate(0, 1);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->devices_size(), 0);
}

TEST_F(SamplePluginTest, ControlFileChangesHealth) {
  FakeKubelet* k = StartKubelet();
  PluginOptions o;
  o.control_path = dir_ + "/control";
  o.call_log_path = dir_ + "/calls.jsonl";
  StartPlugin(kBasic, o);
  ASSERT_TRUE(k->WaitForUpdate(0, 1).has_value());
  {
    std::ofstream f(o.control_path, std::ios::app);
    f << "health gpu-0 Unhealthy\nadd gpu-9 Healthy 1\n";
  }
  // Both commands are applied in one batch or two: wait for the one with 5 devices.
  std::optional<v1beta1::ListAndWatchResponse> u;
  for (size_t n = 2; n <= 3; ++n) {
    u = k->WaitForUpdate(0, n);
    ASSERT_TRUE(u.has_value());
    if (u->devices_size() == 5) break;
  }
  ASSERT_EQ(u->devices_size(), 5);
  EXPECT_EQ(u->devices(0).health(), "Unhealthy");
  EXPECT_EQ(u->devices(4).id(), "gpu-9");
  // The call log file has one JSON line per call.
  plugin_->Stop();
  std::ifstream in(o.call_log_path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_EQ(line.front(), '{');
  }
  EXPECT_EQ(lines, 3);  // GetDevicePluginOptions, ListAndWatch, Register
}

TEST_F(SamplePluginTest, ReRegistersAfterKubeletRestart) {
  FakeKubelet* k1 = StartKubelet();
  SamplePlugin* p = StartPlugin(kBasic);
  ASSERT_TRUE(p->WaitForRegistered(kTimeout));
  ASSERT_TRUE(k1->WaitForUpdate(0, 1).has_value());
  // A kubelet restart: the old kubelet goes away, the new one wipes every
  // socket in the directory and listens on a fresh kubelet.sock.
  k1->Stop();
  unlink((dir_ + "/kubelet.sock").c_str());
  unlink(p->socket_path().c_str());
  FakeKubelet* k2 = StartKubelet();
  ASSERT_TRUE(p->WaitForRegistrations(2, kTimeout));
  auto u = k2->WaitForUpdate(0, 1);
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->devices_size(), 4);
  EXPECT_EQ(k2->requests().size(), 1u);
  struct stat st {};
  EXPECT_EQ(stat(p->socket_path().c_str(), &st), 0);
}

TEST_F(SamplePluginTest, ServesAgainAndReRegistersWhenItsSocketIsRemoved) {
  FakeKubelet* k = StartKubelet();
  SamplePlugin* p = StartPlugin(kBasic);
  ASSERT_TRUE(p->WaitForRegistered(kTimeout));
  ASSERT_TRUE(k->WaitForUpdate(0, 1).has_value());
  unlink(p->socket_path().c_str());
  // The old stream ends when the server restarts; the plugin registers again
  // with the same kubelet once no new kubelet.sock has appeared.
  ASSERT_TRUE(k->WaitForEnd(0).has_value());
  ASSERT_TRUE(p->WaitForRegistrations(2, kTimeout));
  ASSERT_TRUE(k->WaitForUpdate(1, 1).has_value());
  EXPECT_EQ(k->requests().size(), 2u);
}

TEST_F(SamplePluginTest, WaitsForKubeletSockThenRegisters) {
  SamplePlugin* p = StartPlugin(kBasic);
  EXPECT_EQ(p->registrations(), 0);
  FakeKubelet* k = StartKubelet();
  ASSERT_TRUE(p->WaitForRegistered(kTimeout));
  EXPECT_EQ(k->requests().size(), 1u);
}

TEST_F(SamplePluginTest, GetDevicePluginOptionsErrorFailsRegistration) {
  StartKubelet();
  SamplePlugin* p = StartPlugin(std::string(kBasic) + R"(
faults:
  get_device_plugin_options: {error: {code: Unavailable, message: boom}}
)");
  ASSERT_TRUE(p->WaitForCalls("Register", 1, kTimeout));
  EXPECT_EQ(p->registrations(), 0);
  EXPECT_EQ(p->last_registration_error(), "failed to get device plugin options: boom");
  const std::vector<CallRecord> log = p->CallLog();
  EXPECT_EQ(log.back().error_code, "UNKNOWN");
}

TEST_F(SamplePluginTest, EndStreamAfterAndStreamError) {
  FakeKubelet* k = StartKubelet();
  StartPlugin(std::string(kBasic) + R"(
faults:
  list_and_watch: {end_stream_after: 2, error: {code: Internal, message: gone}}
)");
  ASSERT_TRUE(k->WaitForUpdate(0, 1).has_value());
  plugin_->SetHealth("gpu-0", "Unhealthy");
  auto end = k->WaitForEnd(0);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(end->error_message(), "gone");
  EXPECT_EQ(k->UpdateCount(0), 2u);
}

TEST_F(SamplePluginTest, EndStreamsControlEndsWithOk) {
  FakeKubelet* k = StartKubelet();
  StartPlugin(kBasic);
  ASSERT_TRUE(k->WaitForUpdate(0, 1).has_value());
  ASSERT_OK(plugin_->ApplyControl("end-streams"));
  auto end = k->WaitForEnd(0);
  ASSERT_TRUE(end.has_value());
  EXPECT_TRUE(end->ok());
}

TEST_F(SamplePluginTest, AllocateFaults) {
  FakeKubelet* k = StartKubelet();
  SamplePlugin* p = StartPlugin(std::string(kBasic) + R"(
faults:
  allocate: {delay: 200ms, wrong_count: 2, grow_on_allocate: true, times: 1}
)");
  ASSERT_TRUE(k->WaitForUpdate(0, 1).has_value());
  auto stub = PluginStub();
  v1beta1::AllocateRequest areq;
  areq.add_container_requests()->add_devices_ids("gpu-1");
  v1beta1::AllocateResponse aresp;
  grpc::ClientContext ctx;
  const absl::Time t0 = absl::Now();
  ASSERT_OK(stub->Allocate(&ctx, areq, &aresp));
  EXPECT_GE(absl::Now() - t0, absl::Milliseconds(200));
  EXPECT_EQ(aresp.container_responses_size(), 2);
  auto grown = k->WaitForUpdate(0, 2);
  ASSERT_TRUE(grown.has_value());
  EXPECT_EQ(grown->devices_size(), 5);
  EXPECT_EQ(grown->devices(4).id(), "grown-1");
  // times: 1, so the second call is served normally.
  aresp.Clear();
  grpc::ClientContext ctx2;
  ASSERT_OK(stub->Allocate(&ctx2, areq, &aresp));
  EXPECT_EQ(aresp.container_responses_size(), 1);
  EXPECT_EQ(p->Devices().size(), 5u);
}

TEST_F(SamplePluginTest, ErrorAndEmptyFaults) {
  StartKubelet();
  SamplePlugin* p = StartPlugin(std::string(kBasic) + R"(
faults:
  allocate: {error: {code: 9, message: "no capacity"}}
  get_preferred_allocation: {empty: true}
)");
  ASSERT_TRUE(p->WaitForRegistered(kTimeout));
  auto stub = PluginStub();
  v1beta1::AllocateRequest areq;
  areq.add_container_requests()->add_devices_ids("gpu-1");
  v1beta1::AllocateResponse aresp;
  grpc::ClientContext ctx;
  grpc::Status s = stub->Allocate(&ctx, areq, &aresp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(s.error_message(), "no capacity");
  v1beta1::PreferredAllocationRequest preq;
  preq.add_container_requests()->set_allocation_size(1);
  v1beta1::PreferredAllocationResponse presp;
  grpc::ClientContext pctx;
  ASSERT_OK(stub->GetPreferredAllocation(&pctx, preq, &presp));
  EXPECT_EQ(presp.container_responses_size(), 0);
}

TEST_F(SamplePluginTest, HangingCallDoesNotBlockStop) {
  FakeKubelet* k = StartKubelet();
  SamplePlugin* p = StartPlugin(std::string(kBasic) + R"(
faults:
  allocate: {hang: true}
)");
  ASSERT_TRUE(k->WaitForUpdate(0, 1).has_value());
  auto stub = PluginStub();
  grpc::Status result;
  std::thread caller([&] {
    v1beta1::AllocateRequest areq;
    areq.add_container_requests()->add_devices_ids("gpu-1");
    v1beta1::AllocateResponse aresp;
    grpc::ClientContext ctx;
    result = stub->Allocate(&ctx, areq, &aresp);
  });
  ASSERT_TRUE(p->WaitForCalls("Allocate", 1, kTimeout));
  const absl::Time t0 = absl::Now();
  p->Stop();
  caller.join();
  EXPECT_LT(absl::Now() - t0, absl::Seconds(3));
  EXPECT_FALSE(result.ok());
  struct stat st {};
  EXPECT_NE(stat(p->socket_path().c_str(), &st), 0);  // socket removed
  p->Stop();                                          // idempotent
}

TEST_F(SamplePluginTest, ExitFaultInProcessRecordsTheCode) {
  FakeKubelet* k = StartKubelet();
  int exit_code = -1;
  absl::Notification exited;
  PluginOptions o;
  o.on_exit = [&](int code) {
    exit_code = code;
    exited.Notify();
  };
  SamplePlugin* p =
      StartPlugin(std::string(kBasic) + "faults: {pre_start_container: {exit: 7}}\n", o);
  ASSERT_TRUE(k->WaitForUpdate(0, 1).has_value());
  auto stub = PluginStub();
  std::thread caller([&] {
    v1beta1::PreStartContainerResponse resp;
    grpc::ClientContext ctx;
    stub->PreStartContainer(&ctx, v1beta1::PreStartContainerRequest(), &resp);
  });
  ASSERT_TRUE(exited.WaitForNotificationWithTimeout(kTimeout));
  EXPECT_EQ(exit_code, 7);
  EXPECT_EQ(p->exit_requested(), 7);
  p->Stop();
  caller.join();
}

TEST_F(SamplePluginTest, InvalidRegistrationOverrides) {
  FakeKubelet* k = StartKubelet();
  k->set_dial_timeout(absl::Milliseconds(200));  // other.sock does not exist
  SamplePlugin* p = StartPlugin(std::string(kBasic) + R"(
faults:
  register: {version: v1alpha, resource: "bad name", endpoint: other.sock}
)");
  ASSERT_TRUE(p->WaitForCalls("Register", 1, kTimeout));
  ASSERT_EQ(k->requests().size(), 1u);
  EXPECT_EQ(k->requests()[0].version(), "v1alpha");
  EXPECT_EQ(k->requests()[0].resource_name(), "bad name");
  EXPECT_EQ(k->requests()[0].endpoint(), "other.sock");
}

TEST_F(SamplePluginTest, OverridesFollowTheFaultWindow) {
  FakeKubelet* k = StartKubelet();
  SamplePlugin* p = StartPlugin(std::string(kBasic) + R"(
faults:
  register: {version: v1alpha, times: 1}
)");
  ASSERT_TRUE(p->WaitForCalls("Register", 1, kTimeout));
  ASSERT_OK(p->ApplyControl("register"));
  ASSERT_TRUE(p->WaitForRegistrations(2, kTimeout));  // the fake accepts any version
  ASSERT_EQ(k->requests().size(), 2u);
  EXPECT_EQ(k->requests()[0].version(), "v1alpha");
  EXPECT_EQ(k->requests()[1].version(), "v1beta1");
}

TEST_F(SamplePluginTest, RegisterBeforeServeFailsTheDialBack) {
  FakeKubelet* k = StartKubelet();
  k->set_dial_timeout(absl::Milliseconds(300));
  SamplePlugin* p =
      StartPlugin(std::string(kBasic) + "registration: {serve_before_register: false}\n");
  ASSERT_TRUE(p->WaitForCalls("Register", 1, kTimeout));
  EXPECT_EQ(p->last_registration_error(),
            "failed to dial device plugin: context deadline exceeded");
  EXPECT_EQ(p->registrations(), 0);
}

TEST_F(SamplePluginTest, PluginsRegistryMode) {
  const std::string reg_dir = dir_ + "/plugins_registry";
  ASSERT_EQ(mkdir(reg_dir.c_str(), 0755), 0);
  PluginOptions o;
  o.registry_dir = reg_dir;
  SamplePlugin* p =
      StartPlugin(std::string(kBasic) + "registration: {mode: plugins-registry}\n", o);
  EXPECT_EQ(p->registry_socket_path(), reg_dir + "/example.com-gpu-reg.sock");
  auto stub = pluginregistration::Registration::NewStub(Dial(p->registry_socket_path()));
  pluginregistration::PluginInfo info;
  grpc::ClientContext ctx;
  ctx.set_wait_for_ready(true);
  ctx.set_deadline(Deadline(kTimeout));
  ASSERT_OK(stub->GetInfo(&ctx, pluginregistration::InfoRequest(), &info));
  EXPECT_EQ(info.type(), "DevicePlugin");
  EXPECT_EQ(info.name(), "example.com/gpu");
  EXPECT_EQ(info.endpoint(), dir_ + "/example.com-gpu.sock");
  EXPECT_THAT(info.supported_versions(), ElementsAre("v1beta1"));
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  pluginregistration::RegistrationStatusResponse sresp;
  grpc::ClientContext nctx;
  ASSERT_OK(stub->NotifyRegistrationStatus(&nctx, status, &sresp));
  EXPECT_TRUE(p->WaitForRegistered(kTimeout));
  EXPECT_THAT(Methods(), ElementsAre("GetInfo", "NotifyRegistrationStatus"));
}

TEST_F(SamplePluginTest, StopWithoutStartIsSafe) {
  absl::StatusOr<Config> c = ParseConfig("resource: a.b/c\n", "x");
  ASSERT_OK(c);
  SamplePlugin p(*c, PluginOptions{});
  p.Stop();
  p.Stop();
}

TEST_F(SamplePluginTest, StartFailsOnMissingDirectory) {
  absl::StatusOr<Config> c = ParseConfig("resource: a.b/c\n", "x");
  ASSERT_OK(c);
  PluginOptions o;
  o.dir = dir_ + "/missing";
  SamplePlugin p(*c, o);
  absl::Status s = p.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "device-plugin directory " + dir_ + "/missing does not exist");
}

}  // namespace
}  // namespace devmgr::plugin
