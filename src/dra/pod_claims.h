// Claims in pods: a Pod manifest's `spec.resourceClaims` and its
// containers' `resources.claims`, resolved to ResourceClaim objects of the
// API endpoint's store, with the claims of ResourceClaimTemplates generated
// as the resource claim controller (kube-controller-manager) generates them.
//
// What is documented and followed (resource.k8s.io/v1, core/v1 API docs):
//   * exactly one of resourceClaimName and resourceClaimTemplateName per
//     entry; the name is a DNS label, unique in the pod;
//   * a template's claim is named `<pod name>-<claim name>-<random suffix>`
//     (kubernetes#120336), owned by the pod (controller ownerReference), and
//     recorded in the pod's `status.resourceClaimStatuses`; an entry there
//     without resourceClaimName means no claim is needed;
//   * the claim carries the annotation `resource.kubernetes.io/pod-claim-name`
//     with the pod's claim name; the template's labels and annotations are
//     copied, its `spec.spec` becomes the claim's spec.
// How long names are shortened is not documented; done as the controller
// does (k8s.io/kubernetes v1.34.4-v1.37.2, pkg/controller/resourceclaim/
// controller.go, handleClaim): when `<pod>-<claim>-` is longer than 57
// bytes, each name keeps len * 57 / len("<pod>-<claim>-") of its bytes
// (integer division) and the two are joined by one hyphen, without the
// trailing one (`pod-cut-claim-cut` + 5 random characters). That is at
// most 57 bytes, so the API's own cut of generateName at 58 never applies.
#ifndef DEVMGR_DRA_POD_CLAIMS_H_
#define DEVMGR_DRA_POD_CLAIMS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "apiserver/api_error.h"
#include "apiserver/store.h"
#include "nlohmann/json.hpp"

namespace devmgr::dra {

inline constexpr char kPodClaimNameAnnotation[] = "resource.kubernetes.io/pod-claim-name";

// The pod as claims name it (reservedFor, ownerReferences).
struct PodRef {
  std::string namespace_;  // "default" when the manifest has none
  std::string name;
  std::string uid;  // metadata.uid, else pod::DeterministicPodUid as src/pod/ does

  // "<namespace>/<name>".
  std::string String() const { return namespace_ + "/" + name; }
};

// One entry of spec.resourceClaims.
struct PodResourceClaim {
  std::string name;
  std::string resource_claim_name;           // exactly one of these two is set
  std::string resource_claim_template_name;  //
};

// One entry of a container's resources.claims.
struct ContainerClaim {
  std::string field;  // "spec.initContainers[0].resources.claims[1]"
  std::string container_name;
  bool init_container = false;
  std::string name;     // a PodResourceClaim's name
  std::string request;  // "" for every request of the claim
};

struct PodClaims {
  PodRef pod;
  std::vector<PodResourceClaim> resource_claims;  // spec order
  std::vector<ContainerClaim> container_claims;   // initContainers, then containers
  // status.resourceClaimStatuses: pod claim name -> resourceClaimName ("" when
  // the entry has none: no claim needed).
  std::map<std::string, std::string> claim_statuses;
};

// Reads the claims of a Pod manifest (JSON, as the API has it). Errors are
// InvalidArgument `pod <ns>/<name>: <field>: <what>`, e.g.
//   pod default/p: spec.resourceClaims[1]: exactly one of resourceClaimName
//   and resourceClaimTemplateName must be set
//   pod default/p: spec.containers[0].resources.claims[0].name: "gpu" is not
//   the name of an entry of spec.resourceClaims
absl::StatusOr<PodClaims> ParsePodClaims(const nlohmann::json& pod);

// A pod claim and the ResourceClaim it resolved to.
struct ResolvedClaim {
  std::string pod_claim_name;
  nlohmann::json claim;    // the stored object
  bool generated = false;  // made from a template for this pod (owned by it)
};

struct PodClaimResolution {
  PodClaims pod;
  // In spec.resourceClaims order; entries that need no claim are left out.
  std::vector<ResolvedClaim> claims;
  // The pod's status.resourceClaimStatuses after resolution (a JSON list of
  // {name, resourceClaimName}, one per template entry).
  nlohmann::json resource_claim_statuses = nlohmann::json::array();
};

// Resolves every claim of `pod`: a resourceClaimName is read from the store
// (NotFound `pod <ns>/<name>: spec.resourceClaims[i].resourceClaimName:
// resourceclaims.resource.k8s.io "x" not found`); a template entry reuses
// the claim recorded in status.resourceClaimStatuses or one the pod already
// owns for that entry (FailedPrecondition when the recorded claim is not
// owned by the pod), else creates the claim from the template (NotFound when
// the template is missing). Each container claim's request must be a request
// of its claim (InvalidArgument naming the container claim's field). Claims
// created before a failure stay, as the controller's would; calling again
// finds them.
absl::StatusOr<PodClaimResolution> ResolvePodClaims(apiserver::Store& store,
                                                    const nlohmann::json& pod);

// `pod` with status.resourceClaimStatuses replaced by the resolution's.
nlohmann::json WithResourceClaimStatuses(nlohmann::json pod, const PodClaimResolution& resolution);

// True when `claim` has a controller ownerReference to the pod (the check
// the kubelet makes for template claims).
bool IsClaimOwnedByPod(const nlohmann::json& claim, const PodRef& pod);

// An API error as a status: `context: message`, the code mapped (404
// NotFound, 409 Aborted or AlreadyExists, 400/422 InvalidArgument, else
// Internal).
absl::Status FromApiError(const apiserver::ApiError& error, const std::string& context);

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_POD_CLAIMS_H_
