// Allocation of a pod's ResourceClaims on one node, as the scheduler's DRA
// plugin does it for the common case of resource.k8s.io/v1, and their
// release when the pod goes.
//
// Allocation. Every request of an unallocated claim must be `exactly`
// {deviceClassName, allocationMode ExactCount (count, default 1) or All,
// selectors}. The devices are those of the ResourceSlices in the store whose
// spec.nodeName is the node (every driver; per pool only the slices of the
// newest spec.pool.generation), minus devices in the results of any other
// claim's status.allocation, minus devices given to an earlier request of
// this pod. A device fits a request when every CEL selector of its
// DeviceClass and then of the request is true (cel_selector.h for the
// subset; an evaluation error aborts the allocation). ExactCount takes
// `count` devices, searching with backtracking so that a later request is not
// starved by an earlier one's choice; All takes every fitting device and
// fails when there is none, when one of them is in use, or when a pool of the
// node is incomplete (fewer slices of the newest generation than
// resourceSliceCount). The result written to status.allocation:
// devices.results[] {request, driver, pool, device} in request order,
// devices.config[] (the classes' config as FromClass, then the claim's as
// FromClaim, each with the request names it applies to), and nodeSelector
// matching the node by metadata.name. The claim also gets the finalizer
// `resource.kubernetes.io/delete-protection` and the pod in
// status.reservedFor {resource: pods, name, uid}.
//
// Not supported, each failing with Unimplemented naming claim and request:
// firstAvailable, adminAccess, consumable capacity requests, tolerations,
// spec.devices.constraints, selectors other than CEL. Slices with nodeSelector,
// allNodes or perDeviceNodeSelection are not considered; device taints are
// not looked at.
//
// A claim that is already allocated is used as it is, only reserved; its
// nodeSelector must name the node (by metadata.name) when it has one.
#ifndef DEVMGR_DRA_ALLOCATOR_H_
#define DEVMGR_DRA_ALLOCATOR_H_

#include <string>

#include "absl/status/status.h"
#include "apiserver/store.h"
#include "dra/pod_claims.h"
#include "nlohmann/json.hpp"

namespace devmgr::dra {

inline constexpr char kDeleteProtectionFinalizer[] = "resource.kubernetes.io/delete-protection";
// ResourceClaimReservedForMaxSize.
inline constexpr size_t kReservedForMaxSize = 256;

// Allocates the resolution's unallocated claims on `node_name`, then
// reserves every claim for the pod, writing each through the store (status
// subresource; the finalizer through the object). On success the claims of
// `resolution` are the stored objects. Errors, each naming the pod, and the
// claim and request where there is one:
//   FailedPrecondition "pod <ns>/<p>: cannot allocate all claims on node
//     <n>: ..." when the devices do not suffice (the scheduler's words for an
//     unschedulable pod), or when an allocated claim is for another node or
//     reservedFor is full;
//   InvalidArgument for a missing request field or an unsupported CEL
//     selector; FailedPrecondition "CEL runtime error" from evaluation;
//   NotFound for a missing DeviceClass; Unimplemented (above);
//   Aborted when a claim changed meanwhile (a Conflict): call again.
// On failure nothing stays written: the claims written by this call get their
// previous status back.
absl::Status AllocateAndReserve(apiserver::Store& store, const std::string& node_name,
                                PodClaimResolution& resolution);

// Pod deletion: removes the pod from status.reservedFor of each of its
// claims (claims that are gone are skipped). A claim generated for the pod
// is deleted with it (as the garbage collector does). Any other claim stays;
// when no pod has it reserved any more and it carries the delete-protection
// finalizer (allocated here, as by the scheduler), its allocation is cleared
// and the finalizer removed, as the resource claim controller does; a claim
// allocated otherwise keeps its allocation. Errors: InvalidArgument (bad
// manifest), Aborted (a concurrent change; call again).
absl::Status ReleasePodClaims(apiserver::Store& store, const nlohmann::json& pod);

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_ALLOCATOR_H_
