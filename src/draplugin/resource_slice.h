// The driver's one ResourceSlice for its node (resource.k8s.io/v1): pool =
// node name, resourceSliceCount 1, the configured devices with their
// attributes, and how it is published at start.
#ifndef DEVMGR_DRAPLUGIN_RESOURCE_SLICE_H_
#define DEVMGR_DRAPLUGIN_RESOURCE_SLICE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "draplugin/api_client.h"
#include "draplugin/config.h"
#include "nlohmann/json.hpp"

namespace devmgr::draplugin {

// The slice object, with metadata.generateName "<node>-<driver>-". With
// misbehave.invalid_slice the first device's name is not a DNS label.
nlohmann::json BuildResourceSlice(const Config& config, const std::string& node,
                                  int64_t generation);

// Replaces the driver's slices for `node`: lists them, deletes them and
// creates one with the next pool generation (1 on a fresh node). Returns the
// stored slice; the API error otherwise (InvalidArgument for a rejected slice).
absl::StatusOr<nlohmann::json> PublishResourceSlice(const ApiClient& api, const Config& config,
                                                    const std::string& node);

}  // namespace devmgr::draplugin

#endif  // DEVMGR_DRAPLUGIN_RESOURCE_SLICE_H_
