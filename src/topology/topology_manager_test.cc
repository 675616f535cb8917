// TopologyManager: construction errors per profile and the admission flow of
// every policy under both scopes (pkg/kubelet/cm/topologymanager), with fake
// hint providers.
#include "topology/topology_manager.h"

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/policy_options.h"

namespace devmgr::topology {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace topology_manager_test {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TopologyHint H(uint64_t m, bool preferred) { return TopologyHint{BitMask(m), preferred}; }
using List = std::vector<TopologyHint>;

std::vector<NumaNode> Nodes(int n) {
  std::vector<NumaNode> t;
  for (int i = 0; i < n; ++i) t.push_back(NumaNode{i, std::nullopt});
  return t;
}

absl::Status CreateStatus(const std::string& policy, const std::string& scope, int nodes,
                          std::map<std::string, std::string> options = {},
                          const std::string& version = "1.32", OptionGates gates = {}) {
  TopologyManagerConfig c;
  c.policy = policy;
  c.scope = scope;
  c.policy_options = std::move(options);
  c.gates = gates;
  return TopologyManager::Create(c, Nodes(nodes), *ProfileForVersion(version)).status();
}

TEST(CreateTest, PolicyAndScopeNames) {
  EXPECT_OK(CreateStatus("none", "container", 2));
  EXPECT_OK(CreateStatus("best-effort", "pod", 2));
  EXPECT_OK(CreateStatus("restricted", "container", 2));
  EXPECT_OK(CreateStatus("single-numa-node", "pod", 2));
  EXPECT_EQ(CreateStatus("static", "container", 2).message(), "unknown policy: \"static\"");
  EXPECT_EQ(CreateStatus("best-effort", "node", 2).message(), "unknown scope: \"node\"");
  // "none" short-circuits: neither the scope nor the options are looked at.
  EXPECT_OK(CreateStatus("none", "node", 2, {{"bogus", "1"}}));
}

TEST(CreateTest, MoreThanEightNumaNodes) {
  EXPECT_OK(CreateStatus("best-effort", "container", 8));
  EXPECT_EQ(CreateStatus("best-effort", "container", 9).message(),
            "unsupported on machines with more than 8 NUMA Nodes");
  EXPECT_EQ(CreateStatus("single-numa-node", "pod", 9).message(),
            "unsupported on machines with more than 8 NUMA Nodes");
  EXPECT_OK(CreateStatus("none", "container", 9));
  // max-allowable-numa-nodes (1.31+).
  EXPECT_OK(
      CreateStatus("best-effort", "container", 9, {{"max-allowable-numa-nodes", "9"}}, "1.31"));
  EXPECT_OK(CreateStatus("restricted", "container", 12, {{"max-allowable-numa-nodes", "16"}}));
  EXPECT_EQ(
      CreateStatus("restricted", "container", 17, {{"max-allowable-numa-nodes", "16"}}).message(),
      "unsupported on machines with more than 16 NUMA Nodes");
  EXPECT_EQ(CreateStatus("best-effort", "container", 9, {{"max-allowable-numa-nodes", "9"}}, "1.30")
                .message(),
            "unknown Topology Manager Policy option: \"max-allowable-numa-nodes\"");
  EXPECT_EQ(CreateStatus("best-effort", "container", 9, {{"max-allowable-numa-nodes", "9"}}, "1.32",
                         OptionGates{.beta = false})
                .message(),
            "Topology Manager Policy Beta-level Options not enabled, but option "
            "\"max-allowable-numa-nodes\" provided");
}

TEST(CreateTest, PolicyOptionTexts) {
  EXPECT_EQ(
      CreateStatus("best-effort", "container", 2, {{"max-allowable-numa-nodes", "7"}}).message(),
      "the minimum value of \"max-allowable-numa-nodes\" should not be less than 8");
  EXPECT_EQ(
      CreateStatus("best-effort", "container", 2, {{"max-allowable-numa-nodes", "x8"}}).message(),
      "unable to convert policy option to integer \"max-allowable-numa-nodes\": "
      "strconv.Atoi: parsing \"x8\": invalid syntax");
  EXPECT_EQ(CreateStatus("best-effort", "container", 2,
                         {{"max-allowable-numa-nodes", "99999999999999999999"}})
                .message(),
            "unable to convert policy option to integer \"max-allowable-numa-nodes\": "
            "strconv.Atoi: parsing \"99999999999999999999\": value out of range");
  EXPECT_EQ(
      CreateStatus("best-effort", "container", 2, {{"prefer-closest-numa-nodes", "yes"}}).message(),
      "bad value for option \"prefer-closest-numa-nodes\": strconv.ParseBool: parsing "
      "\"yes\": invalid syntax");
  EXPECT_EQ(CreateStatus("best-effort", "container", 2, {{"full-pcpus-only", "true"}}).message(),
            "unknown Topology Manager Policy option: \"full-pcpus-only\"");
  // prefer-closest needs distances.
  EXPECT_EQ(CreateStatus("best-effort", "container", 2, {{"prefer-closest-numa-nodes", "true"}})
                .message(),
            "cannot discover NUMA topology: error getting NUMA distances from cadvisor");
  EXPECT_OK(CreateStatus("best-effort", "container", 2, {{"prefer-closest-numa-nodes", "false"}}));
  // Beta before 1.32, GA from 1.32.
  OptionGates no_beta{.beta = false};
  EXPECT_EQ(CreateStatus("best-effort", "container", 2, {{"prefer-closest-numa-nodes", "0"}},
                         "1.31", no_beta)
                .message(),
            "Topology Manager Policy Beta-level Options not enabled, but option "
            "\"prefer-closest-numa-nodes\" provided");
  EXPECT_OK(CreateStatus("best-effort", "container", 2, {{"prefer-closest-numa-nodes", "0"}},
                         "1.32", no_beta));
}

TEST(CreateTest, PreferClosestWithDistances) {
  TopologyManagerConfig c;
  c.policy = "best-effort";
  c.policy_options = {{"prefer-closest-numa-nodes", "true"}};
  std::vector<NumaNode> t = {{0, std::vector<uint64_t>{10, 20}},
                             {1, std::vector<uint64_t>{20, 10}}};
  auto tm = TopologyManager::Create(c, t);
  ASSERT_OK(tm);
  EXPECT_DOUBLE_EQ((*tm)->numa_info().AverageDistance(BitMask(0b11)), 15);
}

TEST(GoParseTest, BoolAndAtoi) {
  for (const char* t : {"1", "t", "T", "true", "TRUE", "True"}) EXPECT_TRUE(*GoParseBool(t));
  for (const char* f : {"0", "f", "F", "false", "FALSE", "False"}) EXPECT_FALSE(*GoParseBool(f));
  EXPECT_FALSE(GoParseBool("tRuE").ok());
  EXPECT_EQ(*GoAtoi("+16"), 16);
  EXPECT_EQ(*GoAtoi("-3"), -3);
  EXPECT_EQ(GoAtoi("").status().message(), "strconv.Atoi: parsing \"\": invalid syntax");
  EXPECT_EQ(GoAtoi("1_0").status().message(), "strconv.Atoi: parsing \"1_0\": invalid syntax");
  EXPECT_EQ(*GoAtoi("9223372036854775807"), 9223372036854775807LL);
  EXPECT_FALSE(GoAtoi("9223372036854775808").ok());
}

// A provider with per-container hints that records what it is asked, and the
// affinity stored when Allocate is called.
class FakeProvider final : public HintProvider {
 public:
  FakeProvider(std::string name, TopologyManager* tm) : name_(std::move(name)), tm_(tm) {}
  std::string Name() const override { return name_; }
  ProviderHints GetTopologyHints(const pod::Pod&, const pod::Container& c) override {
    calls.push_back("hints:" + c.name);
    auto it = per_container.find(c.name);
    return it == per_container.end() ? ProviderHints{} : it->second;
  }
  ProviderHints GetPodTopologyHints(const pod::Pod&) override {
    calls.push_back("podhints");
    return pod_hints;
  }
  absl::Status Allocate(const pod::Pod& p, const pod::Container& c) override {
    calls.push_back("alloc:" + c.name + "@" + tm_->GetHint(p.uid, c.name).String());
    if (c.name == fail_on) return absl::ResourceExhaustedError("no room");
    return absl::OkStatus();
  }
  std::map<std::string, ProviderHints> per_container;
  ProviderHints pod_hints;
  std::string fail_on;
  std::vector<std::string> calls;

 private:
  std::string name_;
  TopologyManager* tm_;
};

pod::Pod TwoContainerPod() {
  pod::Pod p;
  p.uid = "uid-1";
  p.name = "p";
  p.namespace_ = "default";
  p.init_containers.push_back(pod::Container{.name = "init"});
  p.containers.push_back(pod::Container{.name = "one"});
  p.containers.push_back(pod::Container{.name = "split"});
  return p;
}

struct MatrixCase {
  std::string policy;
  std::string scope;
  bool admitted;
  std::string reason;
  std::vector<std::string> calls;
  // Stored hint per container (String()), "" = none stored.
  std::map<std::string, std::string> stored;
};

class MatrixTest : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(MatrixTest, AdmitStoresAndAllocates) {
  const MatrixCase& c = GetParam();
  TopologyManagerConfig cfg;
  cfg.policy = c.policy;
  cfg.scope = c.scope;
  auto tm = TopologyManager::Create(cfg, Nodes(2));
  ASSERT_OK(tm);
  FakeProvider dev("devices", tm->get());
  // init: no preference; one: fits one node; split: needs both nodes.
  dev.per_container["init"] = {{"r", std::nullopt}};
  dev.per_container["one"] = {{"r", List{H(0b01, true), H(0b10, true), H(0b11, false)}}};
  dev.per_container["split"] = {{"r", List{H(0b11, true)}}};
  dev.pod_hints = {{"r", List{H(0b11, true)}}};
  (*tm)->AddHintProvider(&dev);
  pod::Pod p = TwoContainerPod();
  AdmitResult r = (*tm)->Admit(p);
  EXPECT_EQ(r.admitted, c.admitted);
  EXPECT_EQ(r.reason, c.reason);
  if (c.reason == "TopologyAffinityError") {
    EXPECT_EQ(r.message, "Resources cannot be allocated with Topology locality");
  }
  EXPECT_EQ(dev.calls, c.calls);
  for (const char* name : {"init", "one", "split"}) {
    auto it = c.stored.find(name);
    const std::string want = it == c.stored.end() ? "" : it->second;
    EXPECT_EQ((*tm)->HasHint(p.uid, name) ? (*tm)->GetHint(p.uid, name).String() : "", want)
        << name;
  }
  auto trace = (*tm)->LastAdmission(p.uid);
  ASSERT_TRUE(trace.has_value());
  EXPECT_EQ(trace->result.admitted, c.admitted);
}

INSTANTIATE_TEST_SUITE_P(
    PoliciesByScopes, MatrixTest,
    ::testing::Values(
        MatrixCase{
            "none",
            "container",
            true,
            "",
            {"alloc:init@{<nil> false}", "alloc:one@{<nil> false}", "alloc:split@{<nil> false}"},
            {}},
        MatrixCase{
            "none",
            "pod",
            true,
            "",
            {"alloc:init@{<nil> false}", "alloc:one@{<nil> false}", "alloc:split@{<nil> false}"},
            {}},
        MatrixCase{"best-effort",
                   "container",
                   true,
                   "",
                   {"hints:init", "alloc:init@{11 true}", "hints:one", "alloc:one@{01 true}",
                    "hints:split", "alloc:split@{11 true}"},
                   {{"init", "{11 true}"}, {"one", "{01 true}"}, {"split", "{11 true}"}}},
        MatrixCase{"restricted",
                   "container",
                   true,
                   "",
                   {"hints:init", "alloc:init@{11 true}", "hints:one", "alloc:one@{01 true}",
                    "hints:split", "alloc:split@{11 true}"},
                   {{"init", "{11 true}"}, {"one", "{01 true}"}, {"split", "{11 true}"}}},
        // single-numa-node: "any" is stored as nil; the split container is
        // rejected after the earlier containers were allocated.
        MatrixCase{"single-numa-node",
                   "container",
                   false,
                   "TopologyAffinityError",
                   {"hints:init", "alloc:init@{<nil> true}", "hints:one", "alloc:one@{01 true}",
                    "hints:split"},
                   {{"init", "{<nil> true}"}, {"one", "{01 true}"}}},
        MatrixCase{
            "best-effort",
            "pod",
            true,
            "",
            {"podhints", "alloc:init@{11 true}", "alloc:one@{11 true}", "alloc:split@{11 true}"},
            {{"init", "{11 true}"}, {"one", "{11 true}"}, {"split", "{11 true}"}}},
        MatrixCase{
            "restricted",
            "pod",
            true,
            "",
            {"podhints", "alloc:init@{11 true}", "alloc:one@{11 true}", "alloc:split@{11 true}"},
            {{"init", "{11 true}"}, {"one", "{11 true}"}, {"split", "{11 true}"}}},
        MatrixCase{"single-numa-node", "pod", false, "TopologyAffinityError", {"podhints"}, {}}),
    [](const ::testing::TestParamInfo<MatrixCase>& i) {
      std::string n = i.param.policy + "_" + i.param.scope;
      for (char& ch : n) {
        if (ch == '-') ch = '_';
      }
      return n;
    });

TEST(AdmitTest, RestrictedRejectsANonPreferredMergeFromTwoProviders) {
  TopologyManagerConfig cfg;
  cfg.policy = "restricted";
  auto tm = *TopologyManager::Create(cfg, Nodes(2));
  FakeProvider dev("devicemanager", tm.get());
  StaticProviderSpec cpu_spec;
  cpu_spec.name = "cpumanager";
  cpu_spec.hints = {{"cpu", List{H(0b10, true), H(0b11, false)}}};
  StaticHintProvider cpu(cpu_spec);
  dev.per_container["one"] = {{"gpu", List{H(0b01, true), H(0b11, false)}}};
  tm->AddHintProvider(&dev);
  tm->AddHintProvider(&cpu);
  pod::Pod p;
  p.uid = "u";
  p.containers.push_back(pod::Container{.name = "one"});
  AdmitResult r = tm->Admit(p);
  EXPECT_FALSE(r.admitted);
  EXPECT_EQ(r.reason, "TopologyAffinityError");
  auto trace = tm->LastAdmission("u");
  ASSERT_EQ(trace->merges.size(), 1u);
  EXPECT_EQ(trace->merges[0].best, H(0b01, false));
  ASSERT_EQ(trace->merges[0].provider_hints.size(), 2u);
  EXPECT_EQ(trace->merges[0].provider_hints[1].first, "cpumanager");
  EXPECT_EQ(tm->metrics().admission_errors_total, 1);
  EXPECT_EQ(tm->metrics().admission_requests_total, 1);

  // best-effort admits the same pod with that non-preferred affinity.
  cfg.policy = "best-effort";
  auto be = *TopologyManager::Create(cfg, Nodes(2));
  FakeProvider dev2("devicemanager", be.get());
  dev2.per_container = dev.per_container;
  be->AddHintProvider(&dev2);
  be->AddHintProvider(&cpu);
  EXPECT_TRUE(be->Admit(p).admitted);
  EXPECT_THAT(dev2.calls, ElementsAre("hints:one", "alloc:one@{01 false}"));
  EXPECT_EQ(be->GetAffinity("u", "one"), BitMask(0b01));
}

TEST(AdmitTest, AllocateErrorIsUnexpectedAdmissionError) {
  for (const char* policy : {"none", "best-effort"}) {
    TopologyManagerConfig cfg;
    cfg.policy = policy;
    auto tm = *TopologyManager::Create(cfg, Nodes(2));
    FakeProvider dev("devicemanager", tm.get());
    dev.fail_on = "one";
    tm->AddHintProvider(&dev);
    AdmitResult r = tm->Admit(TwoContainerPod());
    EXPECT_FALSE(r.admitted);
    EXPECT_EQ(r.reason, "UnexpectedAdmissionError");
    EXPECT_EQ(r.message, "Allocate failed due to no room, which is unexpected");
    // Nothing after the failing container.
    EXPECT_EQ(dev.calls.back().rfind("alloc:one", 0), 0u) << policy;
    EXPECT_EQ(tm->metrics().admission_errors_total, 1);
  }
}

TEST(AdmitTest, StaticProviderPerContainerAndPod) {
  StaticProviderSpec spec;
  spec.name = "memorymanager";
  spec.hints = {{"memory", std::nullopt}};
  spec.per_container["one"] = {{"memory", List{H(0b10, true)}}};
  spec.pod = ProviderHints{{"memory", List{}}};
  StaticHintProvider p(spec);
  pod::Pod pod;
  EXPECT_EQ(p.GetTopologyHints(pod, pod::Container{.name = "one"}).at("memory")->size(), 1u);
  EXPECT_FALSE(p.GetTopologyHints(pod, pod::Container{.name = "two"}).at("memory").has_value());
  EXPECT_THAT(*p.GetPodTopologyHints(pod).at("memory"), IsEmpty());
  EXPECT_OK(p.Allocate(pod, pod::Container{}));
}

TEST(AdmitTest, SingleNumaNodeCountsAlignedAdmissionsFrom132) {
  for (const char* version : {"1.31", "1.32"}) {
    TopologyManagerConfig cfg;
    cfg.policy = "single-numa-node";
    auto tm = *TopologyManager::Create(cfg, Nodes(2), *ProfileForVersion(version));
    FakeProvider dev("devicemanager", tm.get());
    dev.per_container["one"] = {{"r", List{H(0b01, true)}}};
    tm->AddHintProvider(&dev);
    pod::Pod p;
    p.uid = "u";
    p.containers.push_back(pod::Container{.name = "one"});
    EXPECT_TRUE(tm->Admit(p).admitted);
    EXPECT_EQ(tm->metrics().aligned_container, std::string(version) == "1.32" ? 1 : 0);
    tm->RemovePod("u");
    EXPECT_FALSE(tm->HasHint("u", "one"));
    EXPECT_EQ(tm->GetAffinity("u", "one"), std::nullopt);
  }
}

TEST(ProviderHintsStringTest, GoMapFormat) {
  EXPECT_EQ(ProviderHintsString({}), "map[]");
  EXPECT_EQ(ProviderHintsString({{"a", std::nullopt}, {"b", List{H(1, true)}}}),
            "map[a:[] b:[{01 true}]]");
}

}  // namespace topology_manager_test
}  // namespace devmgr::topology
