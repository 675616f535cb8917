#include "scenario/expect/expect_kind.h"

#include <utility>

namespace devmgr::scenario {
namespace {

Keys Union(const Keys& first, Keys ExpectKind::*level) {
  Keys keys = first;
  for (const ExpectKind* k : ExpectKinds()) {
    const Keys& more = k->*level;
    keys.insert(keys.end(), more.begin(), more.end());
  }
  return keys;
}

}  // namespace

const std::vector<const ExpectKind*>& ExpectKinds() {
  // The order is that of the failures of a step: node resources, pods (and,
  // per container, devices, runtime, topology, health, DRA CDI IDs; then a
  // pod's own topology), disjoint devices, the checkpoint, calls, DRA claims,
  // dra_manager_state, DRA driver calls, ResourceSlices, API requests,
  // PodResources, logs.
  static const std::vector<const ExpectKind*> kKinds = {
      &NodeExpectKind(),           // resources
      &PodsExpectKind(),           // pods (and the pod and container kinds below)
      &DevicesExpectKind(),        // disjoint; a container's devices
      &RuntimeExpectKind(),        // a container's runtime options and state
      &TopologyExpectKind(),       // a pod's and a container's topology
      &HealthExpectKind(),         // a container's allocated_resources_status
      &DraCdiExpectKind(),         // a container's dra_cdi_devices
      &CheckpointExpectKind(),     // checkpoint
      &CallsExpectKind(),          // calls
      &DraClaimsExpectKind(),      // claims
      &DraCheckpointExpectKind(),  // dra_checkpoint
      &DraCallsExpectKind(),       // dra_calls
      &DraSlicesExpectKind(),      // resource_slices
      &ApiRequestsExpectKind(),    // api_requests
      &PodResourcesExpectKind(),   // pod_resources
      &LogExpectKind(),            // log
  };
  return kKinds;
}

const Keys& ExpectKeys() {
  static const Keys kKeys = Union({"within"}, &ExpectKind::expect_keys);
  return kKeys;
}

const Keys& PodKeys() {
  static const Keys kKeys = Union({}, &ExpectKind::pod_keys);
  return kKeys;
}

const Keys& ContainerKeys() {
  static const Keys kKeys = Union({}, &ExpectKind::container_keys);
  return kKeys;
}

void Fail(std::vector<Failure>* out, const Location& loc, std::string what, std::string expected,
          std::string actual) {
  out->push_back(Failure{loc, std::move(what), std::move(expected), std::move(actual)});
}

std::string IntString(int64_t v) { return std::to_string(v); }
std::string BoolString(bool b) { return b ? "true" : "false"; }

}  // namespace devmgr::scenario
