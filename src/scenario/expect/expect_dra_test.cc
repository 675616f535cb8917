// The DRA expectation kinds (claims, dra_cdi_devices, dra_calls,
// dra_checkpoint, resource_slices) checked against observations made by hand.
#include "common/status_testutil.h"
#include "dra/checkpoint.h"
#include "dra/state.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenario/expect/expectations.h"
#include "scenario/format/scenario_parser.h"

namespace devmgr::scenario {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace expect_dra_test {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

Expectations Parse(const std::string& expect_yaml) {
  const std::string text = R"(plugins:
  - {name: drv, dra_driver: gpu.example.com, command: my-driver}
steps:
  - check:
    expect:
)" + expect_yaml;
  absl::StatusOr<Scenario> s = ParseScenario(text, "e.yaml");
  EXPECT_OK(s);
  return s.ok() ? s->steps[0].expect : Expectations{};
}

// Pod p (uid-p) with a template claim `gpu` made for it and a shared named
// claim; its container c got one CDI ID.
Observed World() {
  Observed o;
  node::PodRecord p;
  p.pod.uid = "uid-p";
  p.pod.name = "p";
  p.pod.namespace_ = "default";
  p.pod.manifest_json = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
    "spec":{"resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"t"},
                              {"name":"shared","resourceClaimName":"shared-gpu"}],
            "containers":[{"name":"c","resources":{"claims":[{"name":"gpu"}]}}]}})";
  node::ContainerRecord c;
  c.name = "c";
  c.cdi_devices = {"gpu.example.com/gpu=uid-1-gpu-0"};
  p.containers.push_back(c);
  o.pods.push_back(p);
  o.dra_claims.push_back(nlohmann::json::parse(R"({"metadata":{"name":"p-gpu-x7k2p",
    "namespace":"default","uid":"claim-1",
    "annotations":{"resource.kubernetes.io/pod-claim-name":"gpu"},
    "ownerReferences":[{"kind":"Pod","name":"p","uid":"uid-p"}]},
    "status":{"allocation":{"devices":{"results":[{"driver":"gpu.example.com","pool":"n",
      "device":"gpu-0","request":"r"}]}},
      "reservedFor":[{"resource":"pods","name":"p","uid":"uid-p"}]}})"));
  o.dra_claims.push_back(nlohmann::json::parse(
      R"({"metadata":{"name":"shared-gpu","namespace":"default","uid":"claim-2"}})"));
  dra::ClaimInfo info;
  info.prepared = true;
  o.dra_claim_infos["claim-1"] = info;
  o.dra_calls_since_start = {
      {"NodePrepareResources", "gpu.example.com", {{"claim-1", "p-gpu-x7k2p", "default"}}, ""},
      {"NodeUnprepareResources",
       "gpu.example.com",
       {{"claim-1", "p-gpu-x7k2p", "default"}},
       "rpc error: code = Unavailable desc = gone"}};
  o.dra_calls_since_step = {o.dra_calls_since_start[1]};
  dra::ClaimInfoState s;
  s.claim_uid = "claim-1";
  s.claim_name = "p-gpu-x7k2p";
  s.namespace_ = "default";
  s.pod_uids = std::set<std::string>{"uid-p"};
  o.dra_checkpoint_bytes = dra::EncodeFile(
      dra::NewCheckpoint(std::vector<dra::ClaimInfoState>{s}, dra::LayoutForMinor(37)));
  o.kubelet_minor = 37;
  return o;
}

TEST(DraExpectations, ClaimsByNameAndByPodEntry) {
  EXPECT_THAT(CheckExpectations(Parse(R"(      claims:
        - {pod: p, claim: gpu, allocated: true, reserved_for: [p], devices: [gpu-0], cached: true, prepared: true}
        - {name: shared-gpu, allocated: false, reserved_for: [], cached: false, prepared: false}
        - {name: other/gone, exists: false}
)"),
                                World()),
              IsEmpty());
  std::vector<Failure> f = CheckExpectations(Parse(R"(      claims:
        - {pod: p, claim: gpu, reserved_for: [], prepared: false}
        - {name: shared-gpu, exists: false}
        - {pod: p, claim: nope, exists: true}
)"),
                                             World());
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].what, "claims[p/gpu].reserved_for");
  EXPECT_EQ(f[0].actual, "[p]");
  EXPECT_EQ(f[1].what, "claims[p/gpu].prepared");
  EXPECT_EQ(f[2].what, "claims['shared-gpu'].exists");
  EXPECT_EQ(f[3].actual, "pod 'p' has no spec.resourceClaims entry 'nope'");
  EXPECT_EQ(f[3].loc.line, 9);  // the third claim of the list
}

TEST(DraExpectations, ContainerCdiDevicesAreExact) {
  EXPECT_THAT(
      CheckExpectations(
          Parse("      pods: {p: {containers: {c: {dra_cdi_devices: [{regex: gpu-0$}]}}}}\n"),
          World()),
      IsEmpty());
  std::vector<Failure> f = CheckExpectations(
      Parse("      pods: {p: {containers: {c: {dra_cdi_devices: none}}}}\n"), World());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].what, "pods['p'].containers['c'].dra_cdi_devices");
  EXPECT_EQ(f[0].expected, "none");
  EXPECT_EQ(f[0].actual, "[gpu.example.com/gpu=uid-1-gpu-0]");
}

TEST(DraExpectations, DriverCallsInOrderWithCountsAndResults) {
  EXPECT_THAT(CheckExpectations(Parse(R"(      dra_calls:
        gpu.example.com:
          since: start
          sequence: [{method: NodePrepareResources, claims: [{regex: "^p-gpu-"}], ok: true},
                     {method: NodeUnprepareResources, ok: false}]
          exact: true
          counts: {NodePrepareResources: 1}
)"),
                                World()),
              IsEmpty());
  std::vector<Failure> f = CheckExpectations(Parse(R"(      dra_calls:
        gpu.example.com:
          sequence: [NodePrepareResources]
          counts: {NodeUnprepareResources: 2}
)"),
                                             World());
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].what, "dra_calls['gpu.example.com'].counts[NodeUnprepareResources]");
  EXPECT_THAT(f[0].actual, HasSubstr("1 [NodeUnprepareResources[p-gpu-x7k2p] (error: rpc error"));
  EXPECT_EQ(f[1].what, "dra_calls['gpu.example.com'].sequence[0]");
}

TEST(DraExpectations, CheckpointEntriesAndValidity) {
  EXPECT_THAT(CheckExpectations(Parse(R"(      dra_checkpoint:
        {exists: true, valid: true, entry_count: 1, claims: [default/p-gpu-x7k2p], absent_claims: [shared-gpu], pods: [p]}
)"),
                                World()),
              IsEmpty());
  Observed o = World();
  std::string& bytes = *o.dra_checkpoint_bytes;
  const size_t at = bytes.find("\"Checksum\":") + 11;
  bytes[at] = bytes[at] == '1' ? '2' : '1';
  std::vector<Failure> f =
      CheckExpectations(Parse("      dra_checkpoint: {valid: true, claims: [x]}\n"), o);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].what, "dra_checkpoint.valid");
  EXPECT_THAT(f[0].actual, HasSubstr("stored"));
  EXPECT_EQ(f[1].what, "dra_checkpoint.claims['x']");
  o.dra_checkpoint_bytes.reset();
  f = CheckExpectations(Parse("      dra_checkpoint: {exists: false}\n"), o);
  EXPECT_THAT(f, IsEmpty());
}

// Two slices of the driver for node n1 (pool n1, two devices and one), one
// of another driver.
std::vector<nlohmann::json> Slices() {
  return {nlohmann::json::parse(R"({"metadata":{"name":"n1-gpu-a"},"spec":{
            "driver":"gpu.example.com","nodeName":"n1",
            "pool":{"name":"n1","generation":1,"resourceSliceCount":2},
            "devices":[{"name":"gpu-0"},{"name":"gpu-1"}]}})"),
          nlohmann::json::parse(R"({"metadata":{"name":"n1-gpu-b"},"spec":{
            "driver":"gpu.example.com","nodeName":"n1",
            "pool":{"name":"n1","generation":1,"resourceSliceCount":2},
            "devices":[{"name":"gpu-2"}]}})"),
          nlohmann::json::parse(R"({"metadata":{"name":"n1-nic"},"spec":{
            "driver":"nic.example.com","nodeName":"n1",
            "pool":{"name":"n1","generation":1,"resourceSliceCount":1},"devices":[]}})")};
}

TEST(DraExpectations, ResourceSlicesByDriver) {
  Observed o = World();
  o.dra_slices = Slices();
  EXPECT_THAT(CheckExpectations(Parse(R"(      resource_slices:
        gpu.example.com: {slices: 2, pools: [n1], devices: [gpu-2, gpu-0, gpu-1], node_name: n1}
)"),
                                o),
              IsEmpty());
  EXPECT_THAT(
      CheckExpectations(Parse("      resource_slices: {gpu.example.com: {devices: {count: 3, "
                              "superset_of: [gpu-1]}, node_name: {regex: '^n'}}}\n"),
                        o),
      IsEmpty());
  std::vector<Failure> f = CheckExpectations(Parse(R"(      resource_slices:
        gpu.example.com: {slices: 1, pools: [n2], devices: 2, node_name: n2}
)"),
                                             o);
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[0].what, "resource_slices['gpu.example.com'].slices");
  EXPECT_EQ(f[0].actual,
            "2 [n1-gpu-a (node n1, pool n1, 2 device(s)) n1-gpu-b (node n1, pool n1, 1 "
            "device(s))]");
  EXPECT_EQ(f[1].what, "resource_slices['gpu.example.com'].node_name");
  EXPECT_EQ(f[1].expected, "\"n2\"");
  EXPECT_EQ(f[3].what, "resource_slices['gpu.example.com'].pools");
  EXPECT_EQ(f[3].expected, "[n2]");
  EXPECT_EQ(f[3].actual, "[n1]");
  EXPECT_EQ(f[4].what, "resource_slices['gpu.example.com'].devices");
  EXPECT_EQ(f[4].loc.line, 7);

  // absent: no slice of the driver; a driver without slices fails any other
  // expectation but `slices: 0`.
  f = CheckExpectations(Parse("      resource_slices: {gpu.example.com: absent}\n"), o);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].expected, "absent (no slice)");
  EXPECT_THAT(f[0].actual, HasSubstr("2 slice(s) [n1-gpu-a"));
  o.dra_slices.erase(o.dra_slices.begin(), o.dra_slices.begin() + 2);
  EXPECT_THAT(CheckExpectations(Parse("      resource_slices: {gpu.example.com: absent}\n"), o),
              IsEmpty());
  EXPECT_THAT(
      CheckExpectations(Parse("      resource_slices: {gpu.example.com: {slices: 0}}\n"), o),
      IsEmpty());
  f = CheckExpectations(Parse("      resource_slices: {gpu.example.com: {devices: 3}}\n"), o);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].actual, "none");
}

TEST(DraExpectations, ResourceSlicesMistakesHavePositions) {
  auto err = [](const std::string& expect_yaml) {
    absl::StatusOr<Scenario> s = ParseScenario(R"(plugins:
  - {name: drv, dra_driver: gpu.example.com, command: my-driver}
steps:
  - check:
    expect:
)" + expect_yaml,
                                               "e.yaml");
    return s.ok() ? std::string() : std::string(s.status().message());
  };
  EXPECT_THAT(err("      resource_slices: {gpu.example.con: absent}\n"),
              HasSubstr("e.yaml:6:25: no plugin of the scenario is DRA driver 'gpu.example.con' "
                        "(did you mean 'gpu.example.com'?)"));
  EXPECT_THAT(err("      resource_slices: {gpu.example.com: {pool: [n1]}}\n"),
              HasSubstr("unknown key 'pool' in resource_slices of a driver (did you mean "
                        "'pools'?)"));
  EXPECT_THAT(err("      resource_slices: {gpu.example.com: gone}\n"),
              HasSubstr("e.yaml:6:42: resource_slices of a driver"));
  EXPECT_THAT(err("      resource_slice: {gpu.example.com: absent}\n"),
              HasSubstr("did you mean 'resource_slices'?"));
}

}  // namespace expect_dra_test
}  // namespace devmgr::scenario
