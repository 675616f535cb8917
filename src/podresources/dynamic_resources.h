// The DRA part of a container's PodResources answer: the claims it uses, as
// the kubelet's container manager turns its DRA manager's claim infos into
// v1.DynamicResource messages (GetDynamicResources), for List and Get alike.
//
// What the kubelet does there (pkg/kubelet/cm/container_manager_linux.go
// GetDynamicResources and pkg/kubelet/cm/dra/manager.go GetContainerClaimInfos,
// 1.34-1.37; the facts and their sources are listed in dynamic_resources_test.cc):
//   * one DynamicResource per (pod claim, resources.claims entry naming it),
//     in spec.resourceClaims order: the request of the entry narrows nothing,
//     and a claim two entries name is listed twice;
//   * per driver, one ClaimResource per device in the order the driver
//     returned them, with the driver, pool and device names and the share ID
//     when the device has one (1.35+);
//   * a quirk kept on purpose: the CDI device list of a ClaimResource is that
//     device's IDs *after* the IDs of the earlier devices of the same driver
//     in that claim (the kubelet builds one growing list per driver and hands
//     each device the list as it stands), so the second device of a driver
//     shows the first one's CDI IDs too;
//   * drivers come in Go map order there; here by driver name.
#ifndef DEVMGR_PODRESOURCES_DYNAMIC_RESOURCES_H_
#define DEVMGR_PODRESOURCES_DYNAMIC_RESOURCES_H_

#include <vector>

#include "dra/state.h"
#include "podresources/v1/api.pb.h"

namespace devmgr::podresources {

// Appends one DynamicResource per entry of `claims` (the container's claim
// infos, dra::Manager::ContainerClaimInfos) to `out`.
void AppendDynamicResources(const std::vector<dra::ClaimInfoState>& claims,
                            google::protobuf::RepeatedPtrField<v1::DynamicResource>* out);

}  // namespace devmgr::podresources

#endif  // DEVMGR_PODRESOURCES_DYNAMIC_RESOURCES_H_
