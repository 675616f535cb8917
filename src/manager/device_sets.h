// DeviceSets: the manager's per-resource device state as the last
// ListAndWatch responses left it (the kubelet's allDevices, healthyDevices
// and unhealthyDevices), with the full-replacement update and
// markResourceUnhealthy. Whether a resource has a key in `healthy` or
// `unhealthy` is meaningful (GetCapacity, the checkpoint), so the maps are
// kept exactly as the kubelet keeps them.
// See shared/kubelet-device-manager.md sections 5.2 and 5.3.
#ifndef DEVMGR_MANAGER_DEVICE_SETS_H_
#define DEVMGR_MANAGER_DEVICE_SETS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "manager/device_set.h"

namespace devmgr::manager {

// One device of allDevices.
struct StoredDevice {
  std::string health;
  // NUMA node ids as sent; empty for a nil topology or one with no nodes.
  std::vector<int64_t> numa_nodes;
};

using DeviceMap = absl::flat_hash_map<std::string, StoredDevice>;

// Thread-compatible (guarded by the manager's mutex).
struct DeviceSets {
  std::map<std::string, DeviceMap> all;
  std::map<std::string, DeviceSet> healthy;
  std::map<std::string, DeviceSet> unhealthy;

  // genericDeviceUpdateCallback's state change: the resource's three maps
  // are replaced by the response's devices, in order. A duplicate ID: the
  // last occurrence wins in `all`, and an ID sent once "Healthy" and once
  // otherwise lands in both sets, as in the kubelet. Only the exact string
  // "Healthy" is healthy.
  void Replace(const std::string& resource_name,
               const google::protobuf::RepeatedPtrField<v1beta1::Device>& devices);

  // markResourceUnhealthy: moves every healthy ID to unhealthy. A resource
  // with no healthy key keeps none; unhealthy is created if missing.
  void MarkResourceUnhealthy(const std::string& resource_name);

  // deviceHasTopologyAlignment: some device of the resource has >= 1 NUMA
  // node.
  bool HasTopologyAlignment(const std::string& resource_name) const;

  // The device's NUMA nodes, or nullptr when allDevices has no such device.
  const StoredDevice* Find(const std::string& resource_name, const std::string& id) const;
};

}  // namespace devmgr::manager

#endif  // DEVMGR_MANAGER_DEVICE_SETS_H_
