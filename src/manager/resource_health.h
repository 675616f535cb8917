// Device health in pod status (KEP-4680, feature gate ResourceHealthStatus):
// the device manager's half. It remembers each device's last reported
// health (allDevices), works out which pods to resync when a ListAndWatch
// response changes the health of an allocated device, queues their UIDs on a
// bounded, non-blocking channel, and computes each container's
// allocatedResourcesStatus. Facts and sources: docs/resource-health.md.
#ifndef DEVMGR_MANAGER_RESOURCE_HEALTH_H_
#define DEVMGR_MANAGER_RESOURCE_HEALTH_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "kubelet/profile.h"
#include "manager/device_sets.h"
#include "manager/pod_devices.h"

namespace devmgr::manager {

inline constexpr char kResourceHealthStatusGate[] = "ResourceHealthStatus";
// The API's two values for device-plugin resources (Unknown is never
// produced for them).
inline constexpr char kHealthHealthy[] = "Healthy";
inline constexpr char kHealthUnhealthy[] = "Unhealthy";
// The device manager's update channel: make(chan resourceupdates.Update, 100).
inline constexpr size_t kDeviceUpdateChannelCapacity = 100;

// Whether the ResourceHealthStatus gate is on for `profile`: its gate table
// (alpha, off, 1.31-1.35; beta, on, from 1.36; absent in 1.30) with any
// --feature-gates or node.feature_gates already applied.
bool ResourceHealthStatusDefault(const Profile& profile);

// v1.ResourceHealth.
struct ResourceHealth {
  std::string resource_id;
  // kHealthHealthy or kHealthUnhealthy; DRA devices also "Unknown".
  std::string health;
  // DRA only (1.36+, gate ResourceHealthStatusMessage): the driver's message.
  std::optional<std::string> message;
  bool operator==(const ResourceHealth&) const = default;
};

// v1.ResourceStatus: one resource's allocated devices and their health.
struct ResourceHealthStatus {
  std::string name;
  std::vector<ResourceHealth> resources;
  bool operator==(const ResourceHealthStatus&) const = default;
};

// The part of a v1.ContainerStatus this feature writes. nullopt is Go's nil
// slice (the field is absent from the status).
struct ContainerResourceStatus {
  std::string name;
  std::optional<std::vector<ResourceHealthStatus>> allocated_resources_status;
  bool operator==(const ContainerResourceStatus&) const = default;
};

// The channel of pod UIDs to resync (one element per ListAndWatch response
// that had some). Sending never blocks: a full channel drops the element
// and logs "device update channel is full", as the kubelet does.
// Thread-safe.
class DeviceUpdateChannel {
 public:
  explicit DeviceUpdateChannel(size_t capacity = kDeviceUpdateChannelCapacity)
      : capacity_(capacity) {}

  // Queues the UIDs; false (and the error logged) when the channel is full.
  bool TrySend(std::vector<std::string> pod_uids);
  // The next element, waiting up to `timeout`; nullopt on timeout or when
  // Wake() was called meanwhile.
  std::optional<std::vector<std::string>> Receive(absl::Duration timeout);
  // Makes a pending Receive return now.
  void Wake();
  size_t size() const;
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::deque<std::vector<std::string>> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t wakes_ ABSL_GUARDED_BY(mu_) = 0;
};

// getPodAndContainerForDevice: the first (pod, container) in podDevices'
// order holding `device_id`. With `resource` (1.37, kubernetes#140323) only
// allocations of that resource count; without it (1.31-1.36) the ID is
// matched under any resource, so with identical IDs under two resources the
// answer can be the other resource's pod. nullopt: nobody holds it.
std::optional<std::pair<std::string, std::string>> PodAndContainerForDevice(
    const PodDevices& pod_devices, const std::string* resource, const std::string& device_id);

// The pods a ListAndWatch response of `resource` makes the kubelet resync:
// for each listed device whose health differs from the previous list's
// (`old_devices`: allDevices[resource] before the update, nullptr when
// none) or that the previous list did not have, the pod holding it.
std::set<std::string> PodsToUpdate(
    const DeviceMap* old_devices,
    const google::protobuf::RepeatedPtrField<v1beta1::Device>& devices,
    const PodDevices& pod_devices, const std::string& resource, bool per_resource_lookup);

// UpdateAllocatedResourcesStatus for the container statuses of one pod
// (regular containers only; the kubelet never passes init containers): for
// every resource with devices allocated to the container, a ResourceStatus
// whose devices carry the health last reported in ListAndWatch ("Healthy"
// when the device is not, or no longer, known; any value other than
// "Healthy" is "Unhealthy"). It replaces an entry of the same resource name
// and is appended otherwise; entries are never removed. A container without
// devices is left as it is. Resources and devices come in sorted order (one
// instance of Go's map order; compare them order-free).
void UpdateContainerStatuses(const std::string& pod_uid, const PodDevices& pod_devices,
                             const DeviceSets& devices,
                             std::vector<ContainerResourceStatus>* statuses);

}  // namespace devmgr::manager

#endif  // DEVMGR_MANAGER_RESOURCE_HEALTH_H_
