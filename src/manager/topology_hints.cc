// ManagerImpl: the device manager's topology hints, GetTopologyHints and
// GetPodTopologyHints (devicemanager topology_hints.go).
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "fmt/format.h"
#include "manager/manager_impl.h"
#include "topology/bitmask.h"

namespace devmgr::manager {

using topology::BitMask;
using topology::ProviderHints;
using topology::TopologyHint;

namespace {

// The mask of a device's NUMA ids; ids outside 0..63 can never be set in a
// mask (bitMask.IsSet is false for them), so they are dropped.
uint64_t MaskOf(const NumaNodes& nodes) {
  uint64_t m = 0;
  for (int64_t n : nodes) {
    if (n >= 0 && n < 64) m |= uint64_t{1} << n;
  }
  return m;
}

// The NUMA nodes hints are enumerated over: cAdvisor's, or under
// topology_hints_device_numa_only (1.36+) those of them on which some device
// of the resource (in allDevices, whatever its health or allocation) sits,
// in cAdvisor's order; every node when no device names a known one.
std::vector<int> HintNumaNodes(const std::string& resource, const DeviceMap* all,
                               const std::vector<int>& machine, bool device_numa_only) {
  if (!device_numa_only || all == nullptr) return machine;
  std::set<int64_t> with_devices;
  for (const auto& [id, d] : *all) with_devices.insert(d.numa_nodes.begin(), d.numa_nodes.end());
  std::vector<int> nodes;
  for (int n : machine) {
    if (with_devices.erase(n) > 0) nodes.push_back(n);
  }
  for (int64_t unknown : with_devices) {
    DM_VINFO(4, "Device NUMA node not in the machine topology; ignored for topology hints",
             {"resource", resource}, {"numaNode", unknown});
  }
  return nodes.empty() ? machine : nodes;
}

std::string PodRef(const pod::Pod& pod) { return fmt::format("{}/{}", pod.namespace_, pod.name); }

}  // namespace

void ManagerImpl::MarkPendingAdmission(const std::string& pod_uid) {
  // 1.30/1.31: like Allocate, the hint calls record the pod being admitted
  // so that the garbage collection below does not drop it.
  absl::MutexLock l(&mu_);
  if (opts_.profile.pending_admission_pod_active) pending_admission_pod_ = pod_uid;
}

std::vector<TopologyHint> ManagerImpl::GenerateDeviceTopologyHintsLocked(
    const std::string& resource_name, const DeviceSet& available, const DeviceSet& reusable,
    int request) const {
  // Devices are grouped by their NUMA mask once, so that each candidate mask
  // costs one step per distinct device mask rather than one per device.
  std::map<uint64_t, int> all_by_mask;  // allDevices[r], unhealthy and in use included
  if (const DeviceMap* all = devices_.All(resource_name); all != nullptr) {
    for (const auto& [id, d] : *all) ++all_by_mask[MaskOf(d.numa_nodes)];
  }
  std::map<uint64_t, int> available_by_mask;
  for (const std::string& id : available) {
    const StoredDevice* d = devices_.Find(resource_name, id);
    ++available_by_mask[d == nullptr ? 0 : MaskOf(d->numa_nodes)];
  }
  // Reusable devices that take part: those with a Topology message (an
  // absent device is Go's zero Device, with a nil topology: skipped).
  std::vector<uint64_t> reusable_masks;
  for (const std::string& id : reusable) {
    const StoredDevice* d = devices_.Find(resource_name, id);
    if (d == nullptr || !d->has_topology) continue;
    reusable_masks.push_back(MaskOf(d->numa_nodes));
  }

  const std::vector<int> nodes =
      HintNumaNodes(resource_name, devices_.All(resource_name), opts_.numa_nodes,
                    opts_.profile.topology_hints_device_numa_only);
  int min_affinity_size = static_cast<int>(nodes.size());
  std::vector<TopologyHint> hints;
  topology::IterateBitMasks(nodes, [&](BitMask numa_mask) {
    const uint64_t mask = numa_mask.bits();
    const int count = numa_mask.Count();
    int in_mask = 0;
    for (const auto& [m, n] : all_by_mask) {
      if ((m & mask) != 0) in_mask += n;
    }
    if (in_mask >= request && count < min_affinity_size) min_affinity_size = count;

    // Every reusable device with topology must be on the mask's nodes.
    int matching = 0;
    for (uint64_t m : reusable_masks) {
      if ((m & mask) == 0) return;
      ++matching;
    }
    for (const auto& [m, n] : available_by_mask) {
      if ((m & mask) != 0) matching += n;
    }
    if (matching < request) return;
    hints.push_back(TopologyHint{numa_mask, false});
  });
  // Preferred: the hints as narrow as the whole inventory would allow.
  for (TopologyHint& h : hints) {
    if (h.numa_node_affinity->Count() == min_affinity_size) h.preferred = true;
  }
  return hints;
}

ProviderHints ManagerImpl::GetTopologyHints(const pod::Pod& pod, const pod::Container& container) {
  MarkPendingAdmission(pod.uid);
  // Garbage-collect stranded devices first.
  UpdateAllocatedDevices();
  std::map<std::string, int> requests;
  for (const auto& [resource, quantity] : container.limits) {
    if (IsDevicePluginResource(resource)) requests[resource] = static_cast<int>(quantity);
  }

  ProviderHints out;
  absl::MutexLock l(&mu_);
  for (const auto& [resource, requested] : requests) {
    if (!devices_.HasTopologyAlignment(resource)) {
      DM_INFO("Resource does not have a topology preference", {"resource", resource});
      out[resource] = std::nullopt;
      continue;
    }
    // Already allocated (e.g. a re-admission after a kubelet restart):
    // regenerate the hints of what the container holds.
    std::optional<DeviceSet> allocated =
        pod_devices_.ContainerDevices(pod.uid, container.name, resource);
    if (allocated.has_value() && !allocated->empty()) {
      if (static_cast<int>(allocated->size()) != requested) {
        DM_ERROR("", "Resource already allocated to pod with different number than request",
                 {"resource", resource}, {"pod", PodRef(pod)}, {"containerName", container.name},
                 {"request", requested}, {"allocated", allocated->size()});
        out[resource] = std::vector<TopologyHint>{};
        continue;
      }
      DM_INFO("Regenerating TopologyHints for resource already allocated to pod",
              {"resource", resource}, {"pod", PodRef(pod)}, {"containerName", container.name});
      out[resource] = GenerateDeviceTopologyHintsLocked(resource, *allocated, {}, requested);
      continue;
    }

    DeviceSet available;
    if (const DeviceMap* all = devices_.All(resource); all != nullptr) {
      auto in_use = allocated_devices_.find(resource);
      for (const auto& [id, d] : *all) {
        if (!d.healthy) continue;
        if (in_use != allocated_devices_.end() && in_use->second.contains(id)) continue;
        available.insert(id);
      }
    }
    static const DeviceSet kNone;
    const DeviceSet* reusable = &kNone;
    if (auto p = devices_to_reuse_.find(pod.uid); p != devices_to_reuse_.end()) {
      if (auto r = p->second.find(resource); r != p->second.end()) reusable = &r->second;
    }
    size_t total = available.size();
    for (const std::string& d : *reusable) total += available.contains(d) ? 0 : 1;
    if (static_cast<int>(total) < requested) {
      DM_ERROR("", "Unable to generate topology hints: requested number of devices unavailable",
               {"resource", resource}, {"request", requested}, {"available", total});
      out[resource] = std::vector<TopologyHint>{};
      continue;
    }
    out[resource] = GenerateDeviceTopologyHintsLocked(resource, available, *reusable, requested);
  }
  return out;
}

ProviderHints ManagerImpl::GetPodTopologyHints(const pod::Pod& pod) {
  MarkPendingAdmission(pod.uid);
  UpdateAllocatedDevices();
  std::map<std::string, int> requests;
  for (const auto& [resource, quantity] : pod::PodLimits(pod)) {
    if (IsDevicePluginResource(resource)) requests[resource] = static_cast<int>(quantity);
  }

  ProviderHints out;
  absl::MutexLock l(&mu_);
  for (const auto& [resource, requested] : requests) {
    if (!devices_.HasTopologyAlignment(resource)) {
      DM_INFO("Resource does not have a topology preference", {"resource", resource});
      out[resource] = std::nullopt;
      continue;
    }
    DeviceSet allocated = pod_devices_.PodDeviceSet(pod.uid, resource);
    if (!allocated.empty()) {
      if (static_cast<int>(allocated.size()) != requested) {
        DM_ERROR("", "Resource already allocated to pod with different number than request",
                 {"resource", resource}, {"pod", PodRef(pod)}, {"request", requested},
                 {"allocated", allocated.size()});
        out[resource] = std::vector<TopologyHint>{};
        continue;
      }
      DM_INFO("Regenerating TopologyHints for resource already allocated to pod",
              {"resource", resource}, {"pod", PodRef(pod)});
      out[resource] = GenerateDeviceTopologyHintsLocked(resource, allocated, {}, requested);
      continue;
    }
    DeviceSet available;
    if (const DeviceMap* all = devices_.All(resource); all != nullptr) {
      auto in_use = allocated_devices_.find(resource);
      for (const auto& [id, d] : *all) {
        if (!d.healthy) continue;
        if (in_use != allocated_devices_.end() && in_use->second.contains(id)) continue;
        available.insert(id);
      }
    }
    if (static_cast<int>(available.size()) < requested) {
      DM_ERROR("", "Unable to generate topology hints: requested number of devices unavailable",
               {"resource", resource}, {"request", requested}, {"available", available.size()});
      out[resource] = std::vector<TopologyHint>{};
      continue;
    }
    // Pod scope: no reusable devices.
    out[resource] = GenerateDeviceTopologyHintsLocked(resource, available, {}, requested);
  }
  return out;
}

}  // namespace devmgr::manager
