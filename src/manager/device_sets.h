// DeviceSets: the manager's per-resource device state as the last
// ListAndWatch responses left it: the kubelet's allDevices, healthyDevices
// and unhealthyDevices, with the full-replacement update and
// markResourceUnhealthy. Whether a resource has a healthy or an unhealthy
// "key" is meaningful (GetCapacity, the checkpoint), so key presence is kept
// exactly as the kubelet's maps have it.
//
// Representation: set membership is a pair of flags on each allDevices
// entry (the kubelet's sets only ever hold IDs of allDevices[r]), so that a
// 100,000-device update costs one hash lookup per device.
// As devicemanager genericDeviceUpdateCallback and PluginDisconnected.
#ifndef DEVMGR_MANAGER_DEVICE_SETS_H_
#define DEVMGR_MANAGER_DEVICE_SETS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "manager/device_set.h"

namespace devmgr::manager {

using NumaNodes = absl::InlinedVector<int64_t, 2>;

// One device of allDevices.
struct StoredDevice {
  std::string health;
  // NUMA node ids as sent; empty for a nil topology or one with no nodes.
  NumaNodes numa_nodes;
  // The Device had a Topology message (possibly with no nodes). Topology
  // hints treat a reusable device with an empty topology differently from
  // one with none (section 9.1).
  bool has_topology = false;
  // Membership of healthyDevices[r] / unhealthyDevices[r] (both possible).
  bool healthy = false;
  bool unhealthy = false;
  // Scratch of Replace: the update that last saw the device, and whether
  // it was healthy before that update.
  uint64_t epoch = 0;
  bool was_healthy = false;
};

using DeviceMap = absl::flat_hash_map<std::string, StoredDevice>;

// Thread-compatible (guarded by the manager's mutex).
class DeviceSets {
 public:
  struct Resource {
    DeviceMap all;
    bool has_all = false;        // allDevices has the key
    bool has_healthy = false;    // healthyDevices has the key
    bool has_unhealthy = false;  // unhealthyDevices has the key
    size_t healthy_count = 0;
    size_t unhealthy_count = 0;
    // Changed by every call that may change this resource's sets (the
    // checkpoint writer re-renders a healthy list only when it changed).
    uint64_t version = 0;
  };

  // genericDeviceUpdateCallback's state change: the resource's three maps
  // become the response's devices, in order. A duplicate ID: the last
  // occurrence wins in allDevices, and an ID sent once "Healthy" and once
  // otherwise is in both sets, as in the kubelet. Only the exact string
  // "Healthy" is healthy.
  void Replace(const std::string& resource_name,
               const google::protobuf::RepeatedPtrField<v1beta1::Device>& devices);

  // markResourceUnhealthy: every healthy ID becomes unhealthy. A resource
  // with no healthy key keeps none; the unhealthy key is created if missing.
  void MarkResourceUnhealthy(const std::string& resource_name);

  // A registered resource restored from the checkpoint: empty healthy and
  // unhealthy sets (allDevices untouched).
  void SetEmpty(const std::string& resource_name);

  // delete(healthyDevices, r) / delete(unhealthyDevices, r).
  void EraseHealthy(const std::string& resource_name);
  void EraseUnhealthy(const std::string& resource_name);

  // The resource's Resource::version (0 for an unknown resource).
  uint64_t Version(const std::string& resource_name) const;
  bool HasHealthy(const std::string& resource_name) const;
  bool HasUnhealthy(const std::string& resource_name) const;
  size_t HealthyCount(const std::string& resource_name) const;
  size_t UnhealthyCount(const std::string& resource_name) const;
  // Resources with a healthy (resp. unhealthy) key, sorted.
  std::vector<std::string> HealthyResources() const;
  std::vector<std::string> UnhealthyResources() const;
  bool IsHealthy(const std::string& resource_name, const std::string& id) const;
  // The sets' members, unordered.
  std::vector<std::string> HealthyIds(const std::string& resource_name) const;
  std::vector<std::string> UnhealthyIds(const std::string& resource_name) const;

  // allDevices[r], or nullptr.
  const DeviceMap* All(const std::string& resource_name) const;
  // The device, or nullptr when allDevices has no such device.
  const StoredDevice* Find(const std::string& resource_name, const std::string& id) const;
  // deviceHasTopologyAlignment: some device has >= 1 NUMA node.
  bool HasTopologyAlignment(const std::string& resource_name) const;

  const std::map<std::string, Resource>& resources() const { return resources_; }

 private:
  const Resource* Get(const std::string& resource_name) const;

  std::map<std::string, Resource> resources_;
  uint64_t epoch_ = 0;
  uint64_t last_version_ = 0;
};

}  // namespace devmgr::manager

#endif  // DEVMGR_MANAGER_DEVICE_SETS_H_
