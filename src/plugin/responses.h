// The sample plugin's answers to Allocate and GetPreferredAllocation, built
// from the config (no gRPC here).
#ifndef DEVMGR_PLUGIN_RESPONSES_H_
#define DEVMGR_PLUGIN_RESPONSES_H_

#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"
#include "plugin/config.h"

namespace devmgr::plugin {

// The response for one container that was given `device_ids`: the
// per-container template expanded once, then the per-device template once
// per device, in request order (maps: later entries win).
v1beta1::ContainerAllocateResponse BuildContainerAllocateResponse(
    const Config& config, const std::vector<std::string>& device_ids);

// The preferred devices for one container request under `policy`:
//   first: must-include (in request order), then the other available IDs
//          in ascending byte order, cut at allocation_size;
//   last: the same with the others in descending order;
//   echo-must-include: exactly the must-include IDs;
//   fixed: exactly the configured list.
std::vector<std::string> PreferredDevices(const PreferredAllocationConfig& policy,
                                          const v1beta1::ContainerPreferredAllocationRequest& req);

}  // namespace devmgr::plugin

#endif  // DEVMGR_PLUGIN_RESPONSES_H_
