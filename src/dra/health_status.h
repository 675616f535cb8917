// The DRA manager's UpdateAllocatedResourcesStatus (KEP-4680, kubelet
// pkg/kubelet/cm/dra manager.go, 1.34-1.37): a container's
// allocatedResourcesStatus entries for its claims, "claim:<name>" or
// "claim:<name>/<request>", one ResourceHealth per prepared device (the
// resource ID its first CDI ID, else "<driver>/<pool>/<device>") with the
// health the HealthInfoCache holds. Runs after the device manager's, on the
// same statuses, as the container manager calls them. Facts per release:
// docs/resource-health.md ("DRA").
#ifndef DEVMGR_DRA_HEALTH_STATUS_H_
#define DEVMGR_DRA_HEALTH_STATUS_H_

#include <map>
#include <string>
#include <vector>

#include "dra/health_info.h"
#include "dra/manager.h"
#include "manager/resource_health.h"
#include "nlohmann/json.hpp"

namespace devmgr::dra {

struct HealthStatusOptions {
  // The kubelet release emulated (1.<minor>, 34+).
  int kubelet_minor = 37;
  // The ResourceHealthStatusMessage gate (1.36+): messages are shown.
  bool message_gate = false;
};

// Updates `statuses` (the pod's regular containers, as the device manager
// left them) for `pod` (its manifest as DraPods resolved it, with
// status.resourceClaimStatuses) from the claim-info cache of `manager` and
// `health`. Per release:
//   1.34: per container, its claims as GetContainerClaimInfos lists them (a
//     claim missing from the cache skips the container); an entry is named
//     after the first resources.claims entry whose name equals the
//     ResourceClaim's own name, so claims made from a template (whose names
//     differ) get none; all devices of the claim.
//   1.35: per resources.claims entry, the claim named in
//     status.resourceClaimStatuses (so claims given by resourceClaimName,
//     which have no status entry, get none); all devices of the claim.
//   1.36+: the claim from the status entry, else the resourceClaimName;
//     only the devices of the entry's request (a device without request
//     names serves every request), each resource ID once; messages with the
//     gate.
// An existing entry of the same name is replaced, entries left without
// devices are dropped, claims not in the cache leave their entry as it was.
// Entries are sorted by name (the kubelet's order is Go map order).
void UpdateAllocatedResourcesStatus(const nlohmann::json& pod, const Manager& manager,
                                    const HealthInfoCache& health, const HealthStatusOptions& opts,
                                    std::vector<manager::ContainerResourceStatus>* statuses);

// The pods that hold a device of `driver` among `changed` (pod UIDs, sorted),
// from the claim-info cache: the pods HandleWatchResourcesStream queues.
std::vector<std::string> PodsUsingDevices(const std::map<std::string, ClaimInfo>& claims,
                                          const std::string& driver,
                                          const std::vector<DeviceHealth>& changed);

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_HEALTH_STATUS_H_
