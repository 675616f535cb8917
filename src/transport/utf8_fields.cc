#include "transport/utf8_fields.h"

#include "common/go_format.h"

namespace devmgr::transport {
namespace {

using Result = std::optional<std::string>;

// Whether a map<string, string> has a key or value that is not valid UTF-8.
template <typename Map>
bool MapHasInvalid(const Map& m) {
  for (const auto& [k, v] : m) {
    if (!IsValidUtf8(k) || !IsValidUtf8(v)) return true;
  }
  return false;
}

}  // namespace

Result FirstInvalidUtf8Field(const v1beta1::ListAndWatchResponse& m) {
  for (const v1beta1::Device& d : m.devices()) {
    if (!IsValidUtf8(d.id())) return "Device.ID";
    if (!IsValidUtf8(d.health())) return "Device.Health";
    // TopologyInfo and NUMANode have no string fields.
  }
  return std::nullopt;
}

Result FirstInvalidUtf8Field(const v1beta1::AllocateResponse& m) {
  for (const v1beta1::ContainerAllocateResponse& c : m.container_responses()) {
    if (MapHasInvalid(c.envs())) return "ContainerAllocateResponse.Envs";
    for (const v1beta1::Mount& mt : c.mounts()) {
      if (!IsValidUtf8(mt.container_path())) return "Mount.ContainerPath";
      if (!IsValidUtf8(mt.host_path())) return "Mount.HostPath";
    }
    for (const v1beta1::DeviceSpec& d : c.devices()) {
      if (!IsValidUtf8(d.container_path())) return "DeviceSpec.ContainerPath";
      if (!IsValidUtf8(d.host_path())) return "DeviceSpec.HostPath";
      if (!IsValidUtf8(d.permissions())) return "DeviceSpec.Permissions";
    }
    if (MapHasInvalid(c.annotations())) return "ContainerAllocateResponse.Annotations";
    for (const v1beta1::CDIDevice& d : c.cdi_devices()) {
      if (!IsValidUtf8(d.name())) return "CDIDevice.Name";
    }
  }
  return std::nullopt;
}

Result FirstInvalidUtf8Field(const v1beta1::PreferredAllocationResponse& m) {
  for (const v1beta1::ContainerPreferredAllocationResponse& c : m.container_responses()) {
    for (const std::string& id : c.deviceids()) {
      if (!IsValidUtf8(id)) return "ContainerPreferredAllocationResponse.DeviceIDs";
    }
  }
  return std::nullopt;
}

Result FirstInvalidUtf8Field(const v1beta1::RegisterRequest& m) {
  if (!IsValidUtf8(m.version())) return "RegisterRequest.Version";
  if (!IsValidUtf8(m.endpoint())) return "RegisterRequest.Endpoint";
  if (!IsValidUtf8(m.resource_name())) return "RegisterRequest.ResourceName";
  // Options (DevicePluginOptions) holds only bools.
  return std::nullopt;
}

grpc::Status ClientInvalidUtf8Status() {
  return grpc::Status(
      grpc::StatusCode::INTERNAL,
      std::string("grpc: failed to unmarshal the received message: ") + kInvalidUtf8Error);
}

grpc::Status ServerInvalidUtf8Status() {
  return grpc::Status(grpc::StatusCode::INTERNAL,
                      std::string("grpc: error unmarshalling request: ") + kInvalidUtf8Error);
}

}  // namespace devmgr::transport
