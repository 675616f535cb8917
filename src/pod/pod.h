// Pod: the parts of a Kubernetes v1 Pod that the device manager reads.
//
// Only what the kubelet's device manager looks at is kept: identity
// (uid/name/namespace), the containers in kubelet order with their resource
// limits and requests, whether an init container is a restartable "sidecar"
// (restartPolicy: Always), and the pod phase (GC of terminated pods).
// Parsing lives in manifest_parser.h; quantities in quantity.h.
#ifndef DEVMGR_POD_POD_H_
#define DEVMGR_POD_POD_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace devmgr::pod {

struct Container {
  std::string name;
  // Resource name -> Quantity.Value() (rounded up to an integer, as Go's
  // resource.Quantity.Value() does). The device manager only reads limits.
  std::map<std::string, int64_t> limits;
  std::map<std::string, int64_t> requests;
  // restartPolicy: Always on an init container (a sidecar, KEP-753).
  // Always false for app containers.
  bool restartable = false;
};

enum class Phase { kPending, kRunning, kSucceeded, kFailed };

// "Pending", "Running", "Succeeded", "Failed" (the API's spelling).
std::string_view PhaseName(Phase phase);

// One entry of status.extendedResourceClaimStatus.requestMappings
// (DRA-backed extended resources, KEP-5004): the container's limit of
// `resource_name` is served by the claim's request `request_name`.
struct ExtendedResourceMapping {
  std::string container_name;
  std::string resource_name;
  std::string request_name;
};

struct Pod {
  std::string uid;
  std::string name;
  std::string namespace_;  // "default" when the manifest has none
  std::vector<Container> init_containers;
  std::vector<Container> containers;
  Phase phase = Phase::kPending;
  // status.extendedResourceClaimStatus (set by the scheduler in a real
  // cluster; given in the manifest here). Empty: none.
  std::string extended_resource_claim_name;
  std::vector<ExtendedResourceMapping> extended_resource_mappings;
  // The manifest file the pod came from ("" when built in code).
  std::string source;
  // Set by the manifest parser: the UID was generated (no metadata.uid),
  // and the hex SHA-1 of the pod's YAML document as re-emitted (comments
  // and layout do not count) — what static pods derive their UID from.
  bool uid_generated = false;
  std::string manifest_digest;
  // The pod's document as JSON (the API's form: plain scalars that read as
  // integers, booleans or null become those), for what reads more of the
  // manifest than this struct keeps (DRA: spec.resourceClaims, containers'
  // resources.claims, status.resourceClaimStatuses). "" when built in code.
  std::string manifest_json;
};

// initContainers then containers, in manifest order: the order in which the
// kubelet admits (allocates for) containers. Pointers into `pod`.
std::vector<const Container*> AllContainersInKubeletOrder(const Pod& pod);

// True when status.extendedResourceClaimStatus maps (container, resource)
// to a claim: a DRA-backed extended resource.
bool IsDraBackedResource(const Pod& pod, std::string_view container_name,
                         std::string_view resource_name);

// True if `name` names one of pod.init_containers.
bool IsInitContainer(const Pod& pod, std::string_view name);

// nullptr when no container (init or app) has that name.
const Container* FindContainer(const Pod& pod, std::string_view name);

// Pod-level effective limits (the kubelet's resource.PodLimits with
// ExcludeOverhead), used by the topology manager's pod scope:
//   max( sum(app) + sum(restartable init),
//        max over init containers i of (limit_i + sum of restartable init
//        containers declared before i) )
// where a restartable init container's own term is the cumulative sum of
// restartable init containers including itself. Computed per resource over
// every resource that appears in any container's limits.
std::map<std::string, int64_t> PodLimits(const Pod& pod);

}  // namespace devmgr::pod

#endif  // DEVMGR_POD_POD_H_
