// Expectation kinds: each part of a step's `expect:` block (docs/scenarios.md,
// "Expectations") is read from YAML and checked against what the runner
// observed in the one file of its kind (expect_<kind>.cc). ExpectKinds() lists
// the kinds; ParseExpect (expect_parser.cc) and CheckExpectations
// (expectations.cc) only walk that list, and the `pods:` kind walks it again
// for the keys of a pod and of a container. Internal to the module.
#ifndef DEVMGR_SCENARIO_EXPECT_EXPECT_KIND_H_
#define DEVMGR_SCENARIO_EXPECT_EXPECT_KIND_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "scenario/expect/expect_reader.h"
#include "scenario/expect/expectations.h"
#include "scenario/format/scenario.h"
#include "scenario/report/result.h"
#include "yaml-cpp/yaml.h"

namespace devmgr::scenario {

// A pod expectation being checked, with the pod it found.
struct PodCheck {
  const Observed& observed;
  const PodExpect& want;
  const node::PodRecord& pod;
  const std::string& where;  // "pods['REF']"
};

// A container expectation being checked, with the container it found.
struct ContainerCheck {
  const Observed& observed;
  const ContainerExpect& want;
  const node::PodRecord& pod;
  const node::ContainerRecord& container;
  const std::string& where;  // "pods['REF'].containers['NAME']"
};

// One kind of expectation. It reads keys at up to three levels: of `expect:`
// itself, of a pod's expectation (`expect.pods.P`) and of a container's
// (`expect.pods.P.containers.C`); a level it has no keys at has no functions
// there. Parse functions are called for every block (they look for their own
// keys, which CheckKeys has already allowed) and return InvalidArgument at
// the first problem; check functions append a Failure per expectation that
// does not hold.
struct ExpectKind {
  std::string_view name;
  Keys expect_keys;
  Keys pod_keys;
  Keys container_keys;
  absl::Status (*parse)(const ExpectReader& r, const YAML::Node& expect, Expectations* e) = nullptr;
  absl::Status (*parse_pod)(const ExpectReader& r, const YAML::Node& pod, PodExpect* p) = nullptr;
  absl::Status (*parse_container)(const ExpectReader& r, const YAML::Node& container,
                                  ContainerExpect* c) = nullptr;
  void (*check)(const Expectations& e, const Observed& o, std::vector<Failure>* out) = nullptr;
  void (*check_pod)(const PodCheck& p, std::vector<Failure>* out) = nullptr;
  void (*check_container)(const ContainerCheck& c, std::vector<Failure>* out) = nullptr;
};

// Every kind, in the order its keys are read and checked (so in the order of
// the failures of a step).
const std::vector<const ExpectKind*>& ExpectKinds();

// The keys every kind reads, in that order: of `expect:` ("within" first),
// of a pod's expectation, of a container's.
const Keys& ExpectKeys();
const Keys& PodKeys();
const Keys& ContainerKeys();

// The kinds, one file each.
const ExpectKind& NodeExpectKind();           // expect_node.cc: resources
const ExpectKind& PodsExpectKind();           // expect_pods.cc: pods, admission
const ExpectKind& DevicesExpectKind();        // expect_devices.cc: devices, disjoint
const ExpectKind& RuntimeExpectKind();        // expect_runtime.cc: what the runtime got
const ExpectKind& TopologyExpectKind();       // expect_topology.cc: hints, NUMA affinity
const ExpectKind& HealthExpectKind();         // health_check.cc: allocated_resources_status
const ExpectKind& CheckpointExpectKind();     // expect_checkpoint.cc: checkpoint
const ExpectKind& CallsExpectKind();          // expect_calls.cc: calls
const ExpectKind& PodResourcesExpectKind();   // pod_resources_check.cc: pod_resources
const ExpectKind& LogExpectKind();            // expect_log.cc: log
const ExpectKind& DraCdiExpectKind();         // expect_dra_cdi.cc: a container's dra_cdi_devices
const ExpectKind& DraClaimsExpectKind();      // expect_dra_claims.cc: claims
const ExpectKind& DraCheckpointExpectKind();  // expect_dra_checkpoint.cc: dra_checkpoint
const ExpectKind& DraCallsExpectKind();       // expect_dra_calls.cc: dra_calls
const ExpectKind& DraSlicesExpectKind();      // expect_dra_slices.cc: resource_slices
const ExpectKind& ApiRequestsExpectKind();    // expect_api_requests.cc: api_requests

// Shared by the checks.
void Fail(std::vector<Failure>* out, const Location& loc, std::string what, std::string expected,
          std::string actual);
std::string IntString(int64_t v);
std::string BoolString(bool b);

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_EXPECT_EXPECT_KIND_H_
