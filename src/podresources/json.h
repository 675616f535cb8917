// PodResources answers as JSON with the Go API types' json field names
// (pod_resources, containers, devices, resource_name, device_ids,
// topology.nodes[].ID, cpu_ids, memory, dynamic_resources[].claim_name,
// claim_namespace, claim_resources[].cdi_devices[].name, driver_name,
// pool_name, device_name, share_id), empty fields omitted as Go's omitempty
// does; and as plain-text tables.
#ifndef DEVMGR_PODRESOURCES_JSON_H_
#define DEVMGR_PODRESOURCES_JSON_H_

#include <string>

#include "nlohmann/json.hpp"
#include "podresources/v1/api.pb.h"

namespace devmgr::podresources {

nlohmann::ordered_json ToJson(const v1::ListPodResourcesResponse& r);
nlohmann::ordered_json ToJson(const v1::AllocatableResourcesResponse& r);
nlohmann::ordered_json ToJson(const v1::GetPodResourcesResponse& r);

// NAMESPACE POD CONTAINER RESOURCE DEVICE NUMA, one row per device entry,
// then one per DRA claim resource (RESOURCE "claim:<claim name>", DEVICE
// "<driver>/<pool>/<device>", NUMA "-"); a container with neither gets one
// row with "-".
std::string ToTable(const v1::ListPodResourcesResponse& r);
std::string ToTable(const v1::GetPodResourcesResponse& r);
// RESOURCE DEVICE NUMA.
std::string ToTable(const v1::AllocatableResourcesResponse& r);

}  // namespace devmgr::podresources

#endif  // DEVMGR_PODRESOURCES_JSON_H_
