// Issue 6 end to end: NUMA-aware admission through the topology manager
// (policies, scopes, static hint providers), against the reference plugin
// with NUMA-tagged devices over real sockets, and the status file's affinity.
#include <set>

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node/pod_manager.h"
#include "node/status_file.h"
#include "pod/manifest_parser.h"
#include "tests/integration/test_env.h"
#include "topology/topology_manager.h"

namespace devmgr::testutil {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace topology_test {

using ::testing::SizeIs;
using ::testing::UnorderedElementsAre;

constexpr char kGpu[] = "example.com/gpu";

// gpu-0, gpu-1 on node 0; gpu-2, gpu-3 on node 1.
std::string FourGpus(const std::string& extra = "") {
  return std::string(R"(
resource: example.com/gpu
devices:
  - {id: gpu-0, numa: [0]}
  - {id: gpu-1, numa: [0]}
  - {id: gpu-2, numa: [1]}
  - {id: gpu-3, numa: [1]}
)") + extra;
}

topology::TopologyHint H(uint64_t m, bool preferred) {
  return topology::TopologyHint{topology::BitMask(m), preferred};
}

class TopologyTest : public ::testing::Test {
 protected:
  void Start(const std::string& policy, const std::string& scope,
             const std::string& plugin_yaml = FourGpus(),
             std::vector<topology::StaticProviderSpec> providers = {}) {
    node::NodeOptions o;
    o.plugin_dir = dir_.path();
    o.profile = *ProfileForVersion("1.32");
    o.clock = &clock_;
    o.fsync = false;
    o.dial_timeout = absl::Seconds(2);
    o.numa_nodes = {0, 1};
    o.topology.policy = policy;
    o.topology.scope = scope;
    o.topology_hint_providers = std::move(providers);
    node_ = std::make_unique<node::Node>(o);
    node_->manager().SetChangeCallback([this] { changes_.Notify(); });
    pods_ = std::make_unique<node::PodManager>(node_.get());
    ASSERT_OK(node_->Start(pods_->MakeStartOptions(false)));
    plugin_ = MakePlugin(plugin_yaml, dir_.path());
    ASSERT_OK(plugin_->Start());
    ASSERT_TRUE(changes_.WaitFor([&] { return Find(*node_, kGpu).allocatable == 4; }));
  }
  node::PodRecord Admit(const pod::Pod& p) { return AdmitOrFail(*pods_, p); }
  std::vector<std::string> Devices(const std::string& uid, const std::string& container) {
    return ContainerDevices(*node_, uid, container, kGpu);
  }
  // The NUMA nodes of a container's devices.
  std::set<int> NodesOf(const std::string& uid, const std::string& container) {
    std::set<int> out;
    for (const std::string& d : Devices(uid, container))
      out.insert(d == "gpu-0" || d == "gpu-1" ? 0 : 1);
    return out;
  }
  std::vector<plugin::CallRecord> CallsOf(const std::string& method) {
    return ReceivedCalls(*plugin_, method);
  }
  std::optional<uint64_t> Affinity(const node::PodRecord& rec, const std::string& container) {
    for (const auto& c : rec.containers) {
      if (c.name == container) return c.numa_affinity;
    }
    return std::nullopt;
  }

  TempDir dir_;
  FakeClock clock_;
  ChangeSignal changes_;
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<node::PodManager> pods_;
  std::unique_ptr<plugin::SamplePlugin> plugin_;
};

TEST_F(TopologyTest, SingleNumaNodeRejectsASplitRequest) {
  Start("single-numa-node", "container");
  auto rec = Admit(MakePod("split", {"main:3"}));
  EXPECT_EQ(rec.phase, pod::Phase::kFailed);
  EXPECT_EQ(rec.reason, "TopologyAffinityError");
  EXPECT_EQ(rec.message, "Resources cannot be allocated with Topology locality");
  EXPECT_THAT(CallsOf("Allocate"), SizeIs(0));
  EXPECT_TRUE(Find(*node_, kGpu).allocated.empty());

  // Two devices fit on one node: admitted, both on node 0.
  auto ok = Admit(MakePod("fits", {"main:2"}));
  ASSERT_EQ(ok.phase, pod::Phase::kRunning) << ok.message;
  EXPECT_THAT(Devices(ok.pod.uid, "main"), UnorderedElementsAre("gpu-0", "gpu-1"));
  EXPECT_EQ(Affinity(ok, "main"), uint64_t{0b01});
  // The next pair goes to node 1.
  auto next = Admit(MakePod("next", {"main:2"}));
  ASSERT_EQ(next.phase, pod::Phase::kRunning) << next.message;
  EXPECT_THAT(Devices(next.pod.uid, "main"), UnorderedElementsAre("gpu-2", "gpu-3"));
  EXPECT_EQ(Affinity(next, "main"), uint64_t{0b10});
  auto tm = node_->topology_manager();
  ASSERT_NE(tm, nullptr);
  EXPECT_EQ(tm->metrics().admission_errors_total, 1);
}

TEST_F(TopologyTest, BestEffortAcceptsASplitRequest) {
  Start("best-effort", "container");
  auto rec = Admit(MakePod("split", {"main:3"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  EXPECT_THAT(Devices(rec.pod.uid, "main"), SizeIs(3));
  EXPECT_EQ(NodesOf(rec.pod.uid, "main"), (std::set<int>{0, 1}));
  EXPECT_EQ(Affinity(rec, "main"), uint64_t{0b11});
  auto trace = node_->topology_manager()->LastAdmission(rec.pod.uid);
  ASSERT_TRUE(trace.has_value());
  ASSERT_THAT(trace->merges, SizeIs(1));
  EXPECT_EQ(trace->merges[0].best, H(0b11, true));
  ASSERT_THAT(trace->merges[0].provider_hints, SizeIs(1));
  EXPECT_EQ(trace->merges[0].provider_hints[0].first, "devicemanager");
  EXPECT_EQ(topology::HintListString(trace->merges[0].provider_hints[0].second.at(kGpu)),
            "[{11 true}]");
}

TEST_F(TopologyTest, TooLargeARequestIsAnAffinityErrorUnderRestricted) {
  Start("restricted", "container");
  // Five of four: the device manager's hints are empty (not nil), so the
  // merge is not preferred and restricted rejects before any allocation.
  auto rec = Admit(MakePod("huge", {"main:5"}));
  EXPECT_EQ(rec.reason, "TopologyAffinityError");
  EXPECT_THAT(CallsOf("Allocate"), SizeIs(0));
}

TEST_F(TopologyTest, TooLargeARequestFailsAllocationUnderBestEffort) {
  Start("best-effort", "container");
  auto rec = Admit(MakePod("huge", {"main:5"}));
  EXPECT_EQ(rec.reason, "UnexpectedAdmissionError");
  EXPECT_EQ(rec.message,
            "Allocate failed due to requested number of devices unavailable for "
            "example.com/gpu. Requested: 5, Available: 4, which is unexpected");
}

topology::StaticProviderSpec CpuOnNode1() {
  topology::StaticProviderSpec cpu;
  cpu.name = "cpumanager";
  cpu.hints = {{"cpu", std::vector<topology::TopologyHint>{H(0b10, true), H(0b11, false)}}};
  return cpu;
}

TEST_F(TopologyTest, RestrictedMergesWithAStaticCpuProvider) {
  Start("restricted", "container", FourGpus(), {CpuOnNode1()});
  // The CPUs are on node 1: the GPUs follow.
  auto a = Admit(MakePod("a", {"main:2"}));
  ASSERT_EQ(a.phase, pod::Phase::kRunning) << a.message;
  EXPECT_THAT(Devices(a.pod.uid, "main"), UnorderedElementsAre("gpu-2", "gpu-3"));
  EXPECT_EQ(Affinity(a, "main"), uint64_t{0b10});
  // Node 1 has no GPU left: only a non-preferred merge remains; rejected.
  auto b = Admit(MakePod("b", {"main:2"}));
  EXPECT_EQ(b.phase, pod::Phase::kFailed);
  EXPECT_EQ(b.reason, "TopologyAffinityError");
  auto trace = node_->topology_manager()->LastAdmission(b.pod.uid);
  ASSERT_TRUE(trace.has_value());
  // {01 false} beats {10 false}: same count, lower mask.
  EXPECT_EQ(trace->merges[0].best, H(0b01, false));
}

TEST_F(TopologyTest, BestEffortTakesTheNarrowestNonPreferredMerge) {
  Start("best-effort", "container", FourGpus(), {CpuOnNode1()});
  auto a = Admit(MakePod("a", {"main:2"}));
  ASSERT_EQ(a.phase, pod::Phase::kRunning) << a.message;
  auto b = Admit(MakePod("b", {"main:2"}));
  ASSERT_EQ(b.phase, pod::Phase::kRunning) << b.message;
  // Non-preferred merges {01}, {10} and {11}; with B = 1 the tie between
  // the one-node masks goes to the lower node: the GPUs' node 0.
  EXPECT_EQ(Affinity(b, "main"), uint64_t{0b01});
  EXPECT_THAT(Devices(b.pod.uid, "main"), UnorderedElementsAre("gpu-0", "gpu-1"));
}

TEST_F(TopologyTest, PodScopeAlignsTheWholePod) {
  Start("single-numa-node", "pod");
  // 2 + 2 devices: the pod as a whole needs both nodes.
  auto rec = Admit(MakePod("two-by-two", {"a:2", "b:2"}));
  EXPECT_EQ(rec.reason, "TopologyAffinityError");
  EXPECT_THAT(CallsOf("Allocate"), SizeIs(0));
  // 1 + 1: both containers on the same node.
  auto ok = Admit(MakePod("pair", {"a:1", "b:1"}));
  ASSERT_EQ(ok.phase, pod::Phase::kRunning) << ok.message;
  EXPECT_EQ(NodesOf(ok.pod.uid, "a"), (std::set<int>{0}));
  EXPECT_EQ(NodesOf(ok.pod.uid, "b"), (std::set<int>{0}));
  EXPECT_EQ(Affinity(ok, "a"), uint64_t{0b01});
  EXPECT_EQ(Affinity(ok, "b"), uint64_t{0b01});
}

TEST_F(TopologyTest, ContainerScopePlacesEachContainerSeparately) {
  Start("single-numa-node", "container");
  // The same 2 + 2 pod fits one container per node.
  auto rec = Admit(MakePod("two-by-two", {"a:2", "b:2"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  EXPECT_EQ(NodesOf(rec.pod.uid, "a"), (std::set<int>{0}));
  EXPECT_EQ(NodesOf(rec.pod.uid, "b"), (std::set<int>{1}));
  EXPECT_EQ(Affinity(rec, "a"), uint64_t{0b01});
  EXPECT_EQ(Affinity(rec, "b"), uint64_t{0b10});
}

TEST_F(TopologyTest, InitContainerDevicesAreReusedOnTheirNode) {
  Start("single-numa-node", "container");
  auto rec = Admit(MakePod("reuse", {"init:init:1", "main:1"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  // The app container gets the init container's device back.
  EXPECT_EQ(Devices(rec.pod.uid, "main"), Devices(rec.pod.uid, "init"));
  EXPECT_THAT(CallsOf("Allocate"), SizeIs(2));
}

TEST_F(TopologyTest, PreferredAllocationOnlySeesAlignedDevices) {
  Start("best-effort", "container",
        FourGpus("options: {get_preferred_allocation_available: true}\n"
                 "preferred_allocation: {policy: last}\n"));
  // One device: the affinity is node 0, so the plugin chooses among gpu-0
  // and gpu-1 only, and "last" picks gpu-1 (not gpu-3).
  auto rec = Admit(MakePod("one", {"main:1"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  EXPECT_THAT(Devices(rec.pod.uid, "main"), UnorderedElementsAre("gpu-1"));
  auto calls = CallsOf("GetPreferredAllocation");
  ASSERT_THAT(calls, SizeIs(1));
  const auto& req = calls[0].args["container_requests"][0];
  std::set<std::string> avail;
  for (const auto& d : req["available_deviceIDs"]) avail.insert(d.get<std::string>());
  EXPECT_EQ(avail, (std::set<std::string>{"gpu-0", "gpu-1"}));
  EXPECT_EQ(req["allocation_size"], 1);
}

TEST_F(TopologyTest, PreferredAllocationIsSkippedWhenAlignedDevicesAreJustEnough) {
  Start("best-effort", "container",
        FourGpus("options: {get_preferred_allocation_available: true}\n"
                 "preferred_allocation: {policy: last}\n"));
  // Two devices on node 0 for a request of 2: taken without asking, and
  // the plugin's "last" (gpu-2, gpu-3) does not matter.
  auto rec = Admit(MakePod("two", {"main:2"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  EXPECT_THAT(Devices(rec.pod.uid, "main"), UnorderedElementsAre("gpu-0", "gpu-1"));
  EXPECT_THAT(CallsOf("GetPreferredAllocation"), SizeIs(0));
}

TEST_F(TopologyTest, DevicesWithoutTopologyAreDontCare) {
  Start("single-numa-node", "container", R"(
resource: example.com/gpu
devices:
  - {id: gpu-0}
  - {id: gpu-1}
  - {id: gpu-2}
  - {id: gpu-3}
)");
  // No NUMA information at all: nil hints, admitted whatever the size.
  auto rec = Admit(MakePod("big", {"main:3"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  EXPECT_THAT(Devices(rec.pod.uid, "main"), SizeIs(3));
  // single-numa-node stores "any" as a nil affinity.
  EXPECT_EQ(Affinity(rec, "main"), std::nullopt);
  EXPECT_TRUE(node_->topology_manager()->HasHint(rec.pod.uid, "main"));
}

TEST_F(TopologyTest, StatusFileShowsTheAffinity) {
  Start("best-effort", "container");
  auto rec = Admit(MakePod("split", {"main:3"}));
  ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
  node::StatusInput in;
  in.pods = pods_->Pods();
  in.allocations = node_->manager().Allocations();
  in.now = absl::Now();
  nlohmann::ordered_json j = node::BuildStatus(in);
  const std::string text = j.dump();
  EXPECT_NE(text.find("\"numaAffinity\":[0,1]"), std::string::npos) << text;
}

TEST_F(TopologyTest, BadTopologyConfigurationFailsStart) {
  node::NodeOptions o;
  o.plugin_dir = dir_.path();
  o.clock = &clock_;
  o.numa_nodes = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  o.topology.policy = "best-effort";
  node::Node n(o);
  EXPECT_EQ(n.Start().message(), "unsupported on machines with more than 8 NUMA Nodes");
  o.topology.policy_options = {{"max-allowable-numa-nodes", "9"}};
  node::Node n9(o);
  EXPECT_OK(n9.Start());
  n9.Stop();
}

}  // namespace topology_test
}  // namespace devmgr::testutil
