// Issue 8 over real sockets: the PodResources v1 server (List,
// GetAllocatableResources, Get, rate limit) answering for pods admitted
// through node::PodManager against the in-process reference plugin, and the
// kubelet metrics scraped over HTTP and parsed.
#include <map>
#include <sstream>

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "metrics/http_server.h"
#include "metrics/kubelet_metrics.h"
#include "node/pod_manager.h"
#include "pod/manifest_parser.h"
#include "podresources/client.h"
#include "podresources/server.h"
#include "tests/integration/test_env.h"

namespace devmgr::testutil {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kGpu[] = "example.com/gpu";

constexpr char kPlugin[] = R"(
resource: example.com/gpu
devices:
  - {id: gpu-0, numa: [0]}
  - {id: gpu-1, numa: [0]}
  - {id: gpu-2, numa: [1]}
  - {id: gpu-3, numa: [0, 1]}
  - {id: gpu-4}
  - {id: gpu-5, health: Unhealthy, numa: [1]}
)";

// device id -> NUMA nodes of its entries ({-1} for an entry without topology).
using Flat = std::map<std::string, std::vector<int64_t>>;

Flat Flatten(const google::protobuf::RepeatedPtrField<v1::ContainerDevices>& devs) {
  Flat out;
  for (const auto& d : devs) {
    EXPECT_EQ(d.resource_name(), kGpu);
    EXPECT_EQ(d.device_ids_size(), 1);
    if (!d.has_topology()) {
      out[d.device_ids(0)].push_back(-1);
      continue;
    }
    EXPECT_EQ(d.topology().nodes_size(), 1);
    out[d.device_ids(0)].push_back(d.topology().nodes(0).id());
  }
  return out;
}

// Prometheus text -> "name{labels}" -> value.
std::map<std::string, double> ParseMetrics(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.rfind(' ');
    out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return out;
}

class PodResourcesTest : public ::testing::Test {
 protected:
  void Start(const std::string& version = "1.32", podresources::Options api = {},
             const std::string& plugin = kPlugin, double qps = 100, int burst = 10) {
    metrics::KubeletMetricsOptions mo;
    mo.pod_resources_get = api.get_enabled;
    metrics_ = std::make_unique<metrics::KubeletMetrics>(mo);
    node::NodeOptions o;
    o.plugin_dir = dir_.path();
    o.profile = *ProfileForVersion(version);
    o.clock = &clock_;
    o.fsync = false;
    o.dial_timeout = absl::Seconds(2);
    o.on_allocate_rpc = [this](const std::string& r, absl::Duration d) {
      metrics_->ObserveAllocDuration(r, d);
    };
    o.on_pod_admission = [this](const topology::AdmitResult& r, absl::Duration d) {
      metrics_->ObservePodAdmission(r.admitted, d);
    };
    node_ = std::make_unique<node::Node>(o);
    node_->manager().SetChangeCallback([this] { changes_.Notify(); });
    pods_ = std::make_unique<node::PodManager>(node_.get());
    ASSERT_OK(node_->Start(pods_->MakeStartOptions(false)));
    metrics_->SetRegistrationCountsSource([this] { return node_->server()->RegistrationCounts(); });
    podresources::ServerOptions so;
    so.socket_path = dir_.path() + "-pr/kubelet.sock";
    so.api = api;
    so.metrics = metrics_.get();
    so.qps = qps;
    so.burst = burst;
    server_ = std::make_unique<podresources::Server>(node_.get(), pods_.get(), so);
    ASSERT_OK(server_->Start());
    client_ = std::make_unique<podresources::Client>(so.socket_path);
    plugin_ = MakePlugin(plugin, dir_.path());
    ASSERT_OK(plugin_->Start());
    ASSERT_TRUE(changes_.WaitFor([&] { return Find(*node_, kGpu).allocatable == 5; }));
  }
  void TearDown() override {
    if (plugin_) plugin_->Stop();
    if (server_) server_->Stop();
    if (node_) node_->Stop();
    std::system(("rm -rf '" + dir_.path() + "-pr'").c_str());
  }
  node::PodRecord Admit(const pod::Pod& p) { return AdmitOrFail(*pods_, p); }
  // Devices the manager recorded for one container.
  std::vector<std::string> Devices(const std::string& uid, const std::string& container) {
    return ContainerDevices(*node_, uid, container, kGpu);
  }
  int PluginCalls(const std::string& method) {
    return static_cast<int>(ReceivedCalls(*plugin_, method).size());
  }

  TempDir dir_;
  FakeClock clock_;
  ChangeSignal changes_;
  std::unique_ptr<metrics::KubeletMetrics> metrics_;
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<node::PodManager> pods_;
  std::unique_ptr<podresources::Server> server_;
  std::unique_ptr<podresources::Client> client_;
  std::unique_ptr<plugin::SamplePlugin> plugin_;
};

TEST_F(PodResourcesTest, ListShowsEachContainersDevicesOnePerNumaNode) {
  Start();
  auto empty = client_->List();
  ASSERT_OK(empty);
  EXPECT_EQ(empty->pod_resources_size(), 0);

  auto rec = Admit(MakePod("cuda", {"main:5"}, "ml"));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  auto list = client_->List();
  ASSERT_OK(list);
  ASSERT_EQ(list->pod_resources_size(), 1);
  const auto& p = list->pod_resources(0);
  EXPECT_EQ(p.name(), "cuda");
  EXPECT_EQ(p.namespace_(), "ml");
  ASSERT_EQ(p.containers_size(), 1);
  EXPECT_EQ(p.containers(0).name(), "main");
  // Every healthy device: gpu-3 is on two nodes (two entries), gpu-4 has no
  // topology (one entry, topology unset).
  EXPECT_EQ(
      Flatten(p.containers(0).devices()),
      (Flat{{"gpu-0", {0}}, {"gpu-1", {0}}, {"gpu-2", {1}}, {"gpu-3", {0, 1}}, {"gpu-4", {-1}}}));
  EXPECT_EQ(p.containers(0).devices_size(), 6);
  EXPECT_EQ(p.containers(0).cpu_ids_size(), 0);
  EXPECT_EQ(p.containers(0).memory_size(), 0);
}

TEST_F(PodResourcesTest, SidecarsComeFirstAndPlainInitContainersAreNotListed) {
  Start();
  auto rec = Admit(MakePod("side", {"init:setup:1", "sidecar:proxy:1", "main:1", "other:0"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  auto list = client_->List();
  ASSERT_OK(list);
  ASSERT_EQ(list->pod_resources_size(), 1);
  const auto& p = list->pod_resources(0);
  ASSERT_EQ(p.containers_size(), 3);
  EXPECT_EQ(p.containers(0).name(), "proxy");
  EXPECT_EQ(p.containers(1).name(), "main");
  EXPECT_EQ(p.containers(2).name(), "other");
  EXPECT_EQ(p.containers(0).devices(0).device_ids(0), Devices(rec.pod.uid, "proxy")[0]);
  EXPECT_EQ(p.containers(1).devices(0).device_ids(0), Devices(rec.pod.uid, "main")[0]);
  EXPECT_EQ(p.containers(2).devices_size(), 0);
}

TEST_F(PodResourcesTest, AllocatableIsTheHealthyDevicesWithThePluginsTopology) {
  Start();
  Admit(MakePod("a", {"main:2"}));  // allocated devices stay allocatable
  auto r = client_->GetAllocatableResources();
  ASSERT_OK(r);
  EXPECT_EQ(
      Flatten(r->devices()),
      (Flat{{"gpu-0", {0}}, {"gpu-1", {0}}, {"gpu-2", {1}}, {"gpu-3", {0, 1}}, {"gpu-4", {-1}}}));
  EXPECT_EQ(r->cpu_ids_size(), 0);
  // A health flip shows at once.
  plugin_->SetHealth("gpu-0", "Unhealthy");
  ASSERT_TRUE(changes_.WaitFor([&] { return Find(*node_, kGpu).allocatable == 4; }));
  r = client_->GetAllocatableResources();
  ASSERT_OK(r);
  EXPECT_EQ(Flatten(r->devices()).count("gpu-0"), 0u);
}

TEST_F(PodResourcesTest, GetIsGatedAndNamesTheMissingPod) {
  Start();
  Admit(MakePod("cuda", {"main:1"}));
  auto off = client_->Get("default", "cuda");
  EXPECT_EQ(off.status().code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(off.status().message(),
            "rpc error: code = Unknown desc = PodResources API Get method disabled");
  // The in-process query gives the server-side text.
  EXPECT_EQ(server_->lister().Get("default", "cuda").status().message(),
            "PodResources API Get method disabled");
}

TEST_F(PodResourcesTest, GetWithTheGateOn) {
  podresources::Options api;
  api.get_enabled = true;
  Start("1.32", api);
  auto rec = Admit(MakePod("cuda", {"main:2"}, "ml"));
  auto got = client_->Get("ml", "cuda");
  ASSERT_OK(got);
  EXPECT_EQ(got->pod_resources().name(), "cuda");
  ASSERT_EQ(got->pod_resources().containers_size(), 1);
  Flat flat = Flatten(got->pod_resources().containers(0).devices());
  std::vector<std::string> ids;
  for (const auto& [id, numa] : flat) ids.push_back(id);
  EXPECT_EQ(ids, Devices(rec.pod.uid, "main"));
  auto missing = client_->Get("default", "cuda");
  EXPECT_EQ(missing.status().message(),
            "rpc error: code = Unknown desc = pod cuda in namespace default not found");
  const auto m = ParseMetrics(metrics_->Render());
  EXPECT_EQ(m.at("kubelet_pod_resources_endpoint_requests_get{server_api_version=\"v1\"}"), 2);
  EXPECT_EQ(m.at("kubelet_pod_resources_endpoint_errors_get{server_api_version=\"v1\"}"), 1);
}

TEST_F(PodResourcesTest, TerminatedPodsStayListedWithoutDevicesBefore134) {
  Start("1.32");
  auto a = Admit(MakePod("done", {"main:2"}));
  auto b = Admit(MakePod("gone", {"main:1"}));
  auto c = Admit(MakePod("live", {"main:1"}));
  ASSERT_OK(pods_->SetPhase(a.pod.uid, pod::Phase::kSucceeded));
  ASSERT_OK(pods_->DeletePod(b.pod.uid));
  auto list = client_->List();  // garbage-collects first
  ASSERT_OK(list);
  ASSERT_EQ(list->pod_resources_size(), 2);
  EXPECT_EQ(list->pod_resources(0).name(), "done");
  EXPECT_EQ(list->pod_resources(0).containers(0).devices_size(), 0);
  EXPECT_EQ(list->pod_resources(1).name(), "live");
  // One device (two entries when it is gpu-3, which is on both nodes).
  EXPECT_EQ(Flatten(list->pod_resources(1).containers(0).devices()).size(), 1u);
  EXPECT_THAT(Find(*node_, kGpu).allocated, ElementsAre(Devices(c.pod.uid, "main")[0]));
}

TEST_F(PodResourcesTest, OnlyActivePodsFrom134) {
  Start("1.34", podresources::OptionsForProfile(*ProfileForVersion("1.34")));
  auto a = Admit(MakePod("done", {"main:1"}));
  Admit(MakePod("rejected", {"main:9"}));  // Failed at admission
  Admit(MakePod("live", {"main:1"}));
  ASSERT_OK(pods_->SetPhase(a.pod.uid, pod::Phase::kFailed));
  auto list = client_->List();
  ASSERT_OK(list);
  ASSERT_EQ(list->pod_resources_size(), 1);
  EXPECT_EQ(list->pod_resources(0).name(), "live");
  auto got = client_->Get("default", "live");  // Get is on by default from 1.34
  EXPECT_OK(got);
}

TEST_F(PodResourcesTest, RejectedPodIsListedWithoutDevicesBefore134) {
  Start("1.31");
  auto r = Admit(MakePod("greedy", {"main:9"}));
  ASSERT_EQ(r.phase, pod::Phase::kFailed);
  auto list = client_->List();
  ASSERT_OK(list);
  ASSERT_EQ(list->pod_resources_size(), 1);
  EXPECT_EQ(list->pod_resources(0).containers(0).devices_size(), 0);
}

TEST_F(PodResourcesTest, RateLimitRejectsWithResourceExhausted) {
  Start("1.32", {}, kPlugin, /*qps=*/0.001, /*burst=*/2);
  EXPECT_OK(client_->List());
  EXPECT_OK(client_->GetAllocatableResources());
  auto third = client_->List();
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(third.status().message(),
            "rpc error: code = ResourceExhausted desc = rejected by rate limit");
  // Rejected calls are not counted as requests.
  const auto m = ParseMetrics(metrics_->Render());
  EXPECT_EQ(m.at("kubelet_pod_resources_endpoint_requests_total{server_api_version=\"v1\"}"), 2);
}

TEST_F(PodResourcesTest, MetricsScrapedOverHttpCountEveryAllocate) {
  Start("1.32", {},
        std::string(kPlugin) +
            "faults:\n  allocate: {skip_calls: 3, times: 1, "
            "error: {code: INTERNAL, message: boom}}\n");
  metrics::HttpServer http([this] { return metrics_->Render(); });
  auto addr = http.Start("127.0.0.1:0");
  ASSERT_OK(addr);
  Admit(MakePod("one", {"main:1"}));
  Admit(MakePod("two", {"init:setup:1", "main:2"}));  // two Allocate RPCs
  auto failed = Admit(MakePod("three", {"main:1"}));  // the 4th Allocate fails
  EXPECT_EQ(failed.phase, pod::Phase::kFailed);
  EXPECT_EQ(failed.message,
            "Allocate failed due to rpc error: code = Internal desc = boom, which is unexpected");
  Admit(MakePod("four", {"main:0"}));  // no device: no RPC
  ASSERT_OK(client_->List());
  ASSERT_OK(client_->GetAllocatableResources());

  httplib::Client c("127.0.0.1", std::stoi(addr->substr(addr->rfind(':') + 1)));
  auto res = c.Get("/metrics");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const auto m = ParseMetrics(res->body);
  const int allocates = PluginCalls("Allocate");
  EXPECT_EQ(allocates, 4);
  const std::string l = "{resource_name=\"example.com/gpu\"}";
  EXPECT_EQ(m.at("kubelet_device_plugin_alloc_duration_seconds_count" + l), allocates);
  EXPECT_EQ(m.at("kubelet_device_plugin_alloc_duration_seconds_bucket{resource_name=\"example.com/"
                 "gpu\",le=\"+Inf\"}"),
            allocates);
  EXPECT_GT(m.at("kubelet_device_plugin_alloc_duration_seconds_sum" + l), 0);
  EXPECT_EQ(m.at("kubelet_device_plugin_registration_total" + l), 1);
  EXPECT_EQ(m.at("kubelet_pod_resources_endpoint_requests_total{server_api_version=\"v1\"}"), 2);
  EXPECT_EQ(m.at("kubelet_pod_resources_endpoint_requests_list{server_api_version=\"v1\"}"), 1);
  EXPECT_EQ(
      m.at("kubelet_pod_resources_endpoint_requests_get_allocatable{server_api_version=\"v1\"}"),
      1);
  EXPECT_EQ(m.count("kubelet_pod_resources_endpoint_requests_get{server_api_version=\"v1\"}"), 0u);
  // Every admission counts (policy none here); the failed one is an error.
  EXPECT_EQ(m.at("kubelet_topology_manager_admission_requests_total"), 4);
  EXPECT_EQ(m.at("kubelet_topology_manager_admission_errors_total"), 1);
  EXPECT_EQ(m.at("kubelet_topology_manager_admission_duration_ms_count"), 4);
  // HELP/TYPE as component-base writes them.
  EXPECT_NE(
      res->body.find("# HELP kubelet_device_plugin_alloc_duration_seconds [ALPHA] Duration in "
                     "seconds to serve a device plugin Allocation request. Broken down by "
                     "resource name.\n# TYPE kubelet_device_plugin_alloc_duration_seconds "
                     "histogram\n"),
      std::string::npos);
}

}  // namespace
}  // namespace devmgr::testutil
