#include "scenario/expect/pod_resources_check.h"

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenario/expect/expectations.h"
#include "scenario/format/scenario_parser.h"
#include "scenario/format/scenario_testutil.h"

namespace devmgr::scenario {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace pod_resources_check_test {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

absl::StatusOr<Scenario> ParseExpect(const std::string& expect_yaml) {
  return testutil::ParseCheckStep(expect_yaml, "pr.yaml");
}

PodResourcesExpect Parse(const std::string& expect_yaml) {
  absl::StatusOr<Scenario> s = ParseExpect(expect_yaml);
  EXPECT_OK(s);
  if (!s.ok() || !s->steps[0].expect.pod_resources) return {};
  return *s->steps[0].expect.pod_resources;
}

std::string Err(const std::string& expect_yaml) {
  absl::StatusOr<Scenario> s = ParseExpect(expect_yaml);
  EXPECT_FALSE(s.ok());
  return s.ok() ? "" : std::string(s.status().message());
}

void AddDevice(v1::ContainerDevices* d, const std::string& resource, const std::string& id,
               std::optional<int64_t> numa) {
  d->set_resource_name(resource);
  d->add_device_ids(id);
  if (numa) d->mutable_topology()->add_nodes()->set_id(*numa);
}

// Pod default/train (container main: gpu a on NUMA 0, gpu b on NUMA 1;
// container side: nothing), pod other/idle (container c); allocatable gpu
// a, b (NUMA 0, 1) and c (no topology).
PodResourcesObs World() {
  v1::ListPodResourcesResponse list;
  v1::PodResources* p = list.add_pod_resources();
  p->set_name("train");
  p->set_namespace_("default");
  v1::ContainerResources* c = p->add_containers();
  c->set_name("main");
  AddDevice(c->add_devices(), "example.com/gpu", "a", 0);
  AddDevice(c->add_devices(), "example.com/gpu", "b", 1);
  p->add_containers()->set_name("side");
  v1::PodResources* q = list.add_pod_resources();
  q->set_name("idle");
  q->set_namespace_("other");
  q->add_containers()->set_name("c");
  v1::AllocatableResourcesResponse alloc;
  AddDevice(alloc.add_devices(), "example.com/gpu", "a", 0);
  AddDevice(alloc.add_devices(), "example.com/gpu", "b", 1);
  AddDevice(alloc.add_devices(), "example.com/gpu", "c", std::nullopt);
  PodResourcesObs o = FromProto(list, alloc);
  o.get["default/train"].pod = o.list[0];
  o.get["ghost"].error = "pod ghost in namespace default not found";
  return o;
}

std::vector<Failure> Check(const std::string& yaml) {
  std::vector<Failure> out;
  CheckPodResources(Parse(yaml), World(), &out);
  return out;
}

TEST(PodResourcesCheck, FromProtoMergesTopologyPerDevice) {
  v1::ListPodResourcesResponse list;
  v1::ContainerResources* c = list.add_pod_resources()->add_containers();
  // The kubelet flattens a device on two NUMA nodes into two entries.
  AddDevice(c->add_devices(), "r", "x", 0);
  AddDevice(c->add_devices(), "r", "x", 1);
  const PodResourcesObs o = FromProto(list, {});
  ASSERT_THAT(o.list, SizeIs(1));
  EXPECT_EQ(o.list[0].containers[0].devices.at("r").at("x"), (std::set<int64_t>{0, 1}));
  EXPECT_THAT(o.allocatable, IsEmpty());
}

TEST(PodResourcesCheck, HoldingExpectationsPass) {
  EXPECT_THAT(Check(R"(      pod_resources:
        allocatable:
          example.com/gpu: [a, b, c]
        pod_count: 2
        pods:
          train:
            containers:
              main: {example.com/gpu: {ids: [b, a], numa: [0, 1]}}
              side: none
          other/idle: {containers: {c: none}}
          nobody: absent
        get:
          default/train: {containers: {main: {example.com/gpu: 2}}}
          ghost: {error: {regex: "not found$"}}
)"),
              IsEmpty());
}

TEST(PodResourcesCheck, EachMismatchIsReportedWithWhereItIs) {
  const std::vector<Failure> f = Check(R"(      pod_resources:
        allocatable: {example.com/gpu: 2, example.com/nic: [n0]}
        pod_count: 1
        pods:
          train: {containers: {main: {example.com/gpu: {numa: [0]}}, side: {example.com/gpu: 1}}}
          idle: absent
          missing: {}
        get:
          default/train: {error: "x"}
          ghost: {containers: {c: none}}
)");
  std::vector<std::string> what;
  for (const Failure& x : f) what.push_back(x.what);
  EXPECT_THAT(
      what, ElementsAre("pod_resources.allocatable['example.com/gpu']",
                        "pod_resources.allocatable['example.com/nic']", "pod_resources.pod_count",
                        "pod_resources.pods['train'].containers['main']['example.com/gpu'].numa",
                        "pod_resources.pods['train'].containers['side']['example.com/gpu']",
                        "pod_resources.pods['idle']", "pod_resources.pods['missing']",
                        "pod_resources.get['default/train'].error", "pod_resources.get['ghost']"));
  EXPECT_EQ(f[0].actual, "3 [a b c]");
  EXPECT_EQ(f[2].actual, "2 [default/train other/idle]");
  EXPECT_EQ(f[3].expected, "[0]");
  EXPECT_EQ(f[3].actual, "[0 1]");
  EXPECT_EQ(f[6].actual, "not listed; List returned [default/train other/idle]");
  EXPECT_EQ(f[8].actual, "error \"pod ghost in namespace default not found\"");
  EXPECT_EQ(f[0].loc.ToString(), "pr.yaml:8:23");
}

TEST(PodResourcesCheck, AbsentContainer) {
  EXPECT_THAT(
      Check("      pod_resources: {pods: {default/train: {containers: {ghost: absent}}}}\n"),
      IsEmpty());
  const std::vector<Failure> f =
      Check("      pod_resources: {pods: {default/train: {containers: {side: absent}}}}\n");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].what, "pod_resources.pods['default/train'].containers['side']");
  EXPECT_EQ(f[0].expected, "absent (not listed)");
  EXPECT_EQ(f[0].actual, "listed");
}

TEST(PodResourcesCheck, UnlistedContainerAndDevicesWhereNoneExpected) {
  const std::vector<Failure> f = Check(R"(      pod_resources:
        pods:
          default/train: {containers: {main: none, ghost: {example.com/gpu: 0}}}
)");
  ASSERT_THAT(f, SizeIs(2));
  EXPECT_EQ(f[0].what, "pod_resources.pods['default/train'].containers['main']");
  EXPECT_EQ(f[0].actual, "example.com/gpu [a b]");
  EXPECT_EQ(f[1].actual, "not listed; the pod lists [main side]");
}

TEST(PodResourcesCheck, NotObservedIsAFailure) {
  absl::StatusOr<Scenario> s = ParseExpect("      pod_resources: {pod_count: 0}\n");
  ASSERT_OK(s);
  const std::vector<Failure> f = CheckExpectations(s->steps[0].expect, Observed{});
  ASSERT_THAT(f, SizeIs(1));
  EXPECT_EQ(f[0].actual, "not observed");
}

TEST(PodResourcesCheck, SplitGetRef) {
  EXPECT_EQ(SplitGetRef("ns/p"), std::make_pair(std::string("ns"), std::string("p")));
  EXPECT_EQ(SplitGetRef("p"), std::make_pair(std::string("default"), std::string("p")));
}

TEST(PodResourcesParser, Errors) {
  EXPECT_THAT(Err("      pod_resources: {}\n"),
              HasSubstr("pr.yaml:7:22: expect.pod_resources: has nothing to check"));
  EXPECT_THAT(Err("      pod_resources: {pods: {a/b/c: {}}}\n"),
              HasSubstr("pod_resources.pods['a/b/c']: a pod is NAME or NAMESPACE/NAME"));
  EXPECT_THAT(Err("      pod_resources: {pods: {p: {error: x}}}\n"), HasSubstr("error"));
  EXPECT_THAT(Err("      pod_resources: {get: {p: absent}}\n"), HasSubstr("{error: ...}"));
  EXPECT_THAT(Err("      pod_resources: {get: {p: {error: x, containers: {}}}}\n"),
              HasSubstr("give containers or error, not both"));
  EXPECT_THAT(Err("      pod_resources: {alocatable: {r: 1}}\n"),
              HasSubstr("did you mean 'allocatable'"));
  EXPECT_THAT(Err("      pod_resources: {pods: {p: {containers: {c: [a]}}}}\n"),
              HasSubstr("container 'c' (resource -> count, ids or a mapping; none; absent)"));
}

TEST(PodResourcesParser, FeatureGatesAreValidatedWithTheKubeletsTexts) {
  absl::StatusOr<Scenario> ok = ParseScenario(
      "node: {feature_gates: 'KubeletPodResourcesGet=true'}\nsteps: [{check: null, expect: "
      "{within: 1s}}]\n",
      "g.yaml");
  ASSERT_OK(ok);
  EXPECT_EQ(ok->node.feature_gates, "KubeletPodResourcesGet=true");
  absl::StatusOr<Scenario> bad = ParseScenario(
      "node: {feature_gates: 'KubeletPodResourcesGot=true'}\nsteps: [{check: null}]\n", "g.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("g.yaml:1:23: node.feature_gates: unrecognized feature gate: "
                        "KubeletPodResourcesGot"));
}

}  // namespace pod_resources_check_test
}  // namespace devmgr::scenario
