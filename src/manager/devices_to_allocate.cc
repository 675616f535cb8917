// ManagerImpl: devicesToAllocate and callGetPreferredAllocationIfAvailable
// (devicemanager manager.go, with filterByAffinity).
#include <utility>

#include "common/go_format.h"
#include "common/logging.h"
#include "fmt/format.h"
#include "manager/manager_impl.h"
#include "manager/topology_filter.h"

namespace devmgr::manager {
namespace {

DeviceSet Union(const DeviceSet& a, const DeviceSet& b) {
  DeviceSet out = a;
  out.insert(b.begin(), b.end());
  return out;
}

DeviceSet Intersection(const DeviceSet& a, const DeviceSet& b) {
  const DeviceSet& small = a.size() <= b.size() ? a : b;
  const DeviceSet& large = a.size() <= b.size() ? b : a;
  DeviceSet out;
  for (const std::string& d : small) {
    if (large.contains(d)) out.insert(d);
  }
  return out;
}

}  // namespace

bool ManagerImpl::IsContainerAlreadyRunningLocked(const std::string& pod_uid,
                                                  const std::string& container_name) const {
  auto it = start_opts_.container_map.find({pod_uid, container_name});
  if (it == start_opts_.container_map.end()) return false;
  return start_opts_.running_container_ids.count(it->second) != 0;
}

// Three scenarios reach here (as the kubelet's comment on devicesToAllocate
// lists them): a first allocation; a container restart or a re-admission
// with its devices already cached (needed drops to 0); and a kubelet restart
// before the sources are ready, where a container already running keeps what
// it has without any check.
absl::StatusOr<DeviceSet> ManagerImpl::DevicesToAllocate(const std::string& pod_uid,
                                                         const std::string& container_name,
                                                         const std::string& resource_name,
                                                         int required, const DeviceSet& reusable) {
  absl::MutexLock l(&mu_);
  int needed = required;
  // A container may have been allocated already (restart, re-admission).
  std::optional<DeviceSet> devices =
      pod_devices_.ContainerDevices(pod_uid, container_name, resource_name);
  if (devices.has_value()) {
    DM_VINFO(3, "Found pre-allocated devices for resource on pod", {"resourceName", resource_name},
             {"containerName", container_name}, {"podUID", pod_uid},
             {"devices", GoList(SortedList(*devices))});
    needed -= static_cast<int>(devices->size());
    if (needed != 0) {
      return absl::FailedPreconditionError(fmt::format(
          "pod {} container {} changed request for resource {} from {} to {}", GoQuote(pod_uid),
          GoQuote(container_name), GoQuote(resource_name), devices->size(), required));
    }
  }

  // Kubelet restart: until the sources are ready, a container the runtime
  // reports running keeps its devices, with no further checks.
  if (!SourcesReadyLocked() && IsContainerAlreadyRunningLocked(pod_uid, container_name)) {
    DM_VINFO(3, "Container detected running, nothing to do", {"deviceNumber", needed},
             {"resourceName", resource_name}, {"podUID", pod_uid},
             {"containerName", container_name});
    return DeviceSet{};
  }

  // These checks apply even when nothing more is needed (quantity 0, or a
  // restart with the allocation cached).
  if (!devices_.HasHealthy(resource_name)) {
    return absl::FailedPreconditionError(
        fmt::format("cannot allocate unregistered device {}", resource_name));
  }
  if (devices_.HealthyCount(resource_name) == 0) {
    return absl::FailedPreconditionError(fmt::format(
        "no healthy devices present; cannot allocate unhealthy devices {}", resource_name));
  }
  if (devices.has_value()) {
    for (const std::string& d : *devices) {
      if (!devices_.IsHealthy(resource_name, d)) {
        return absl::FailedPreconditionError(fmt::format(
            "previously allocated devices are no longer healthy; cannot allocate unhealthy "
            "devices {}",
            resource_name));
      }
    }
  }
  if (needed == 0) return DeviceSet{};

  DeviceSet allocated;
  // allocateRemainingFrom: takes devices of `s` not yet taken, recording
  // them in allocatedDevices at once (no rollback on a later error, section
  // 6.9). The map entry is re-created because the lock was released during
  // GetPreferredAllocation and a concurrent GC may have rebuilt the map.
  auto allocate_remaining_from = [&](const DeviceSet& s) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    DeviceSet& in_use = allocated_devices_[resource_name];
    for (const std::string& d : s) {
      if (allocated.contains(d)) continue;
      in_use.insert(d);
      allocated.insert(d);
      --needed;
      if (needed == 0) return true;
    }
    return false;
  };
  auto less_than_required = [&] {
    return absl::ResourceExhaustedError(
        fmt::format("unexpectedly allocated less resources than required. Requested: {}, Got: {}",
                    required, required - needed));
  };

  // Reusable devices (from init containers) first, with no health check.
  if (allocate_remaining_from(reusable)) return allocated;

  // Fast path, with the result of the general one below, when neither
  // topology nor the plugin has a say (no affinity or no device with a NUMA
  // node, no GetPreferredAllocation): the devices are then any `needed`
  // healthy ones not in use, in the set's unspecified order, as with the
  // kubelet's available.UnsortedList(). It costs O(needed + in use) rather
  // than O(pool): no copy of the available set (1M-device pools).
  if (auto ep = endpoints_.find(resource_name);
      ep != endpoints_.end() &&
      (!ep->second.opts.has_value() || !ep->second.opts->get_preferred_allocation_available())) {
    const std::optional<topology::BitMask> affinity =
        affinity_->GetAffinity(pod_uid, container_name);
    const DeviceMap* all = devices_.All(resource_name);
    if (all != nullptr &&
        (!affinity.has_value() || !devices_.HasTopologyAlignment(resource_name))) {
      DeviceSet& in_use = allocated_devices_[resource_name];
      size_t available = devices_.HealthyCount(resource_name);
      for (const std::string& d : in_use) available -= devices_.IsHealthy(resource_name, d);
      if (static_cast<int>(available) < needed) {
        return absl::ResourceExhaustedError(fmt::format(
            "requested number of devices unavailable for {}. Requested: {}, Available: {}",
            resource_name, needed, available));
      }
      for (const auto& [id, d] : *all) {
        if (!d.healthy || in_use.contains(id)) continue;
        in_use.insert(id);
        allocated.insert(id);
        if (--needed == 0) return allocated;
      }
      return less_than_required();
    }
  }

  // available = healthy - in use.
  DeviceSet available;
  if (const DeviceMap* all = devices_.All(resource_name); all != nullptr) {
    const DeviceSet& in_use = allocated_devices_[resource_name];
    available.reserve(devices_.HealthyCount(resource_name));
    for (const auto& [id, d] : *all) {
      if (d.healthy && !in_use.contains(id)) available.insert(id);
    }
  }
  if (static_cast<int>(available.size()) < needed) {
    return absl::ResourceExhaustedError(
        fmt::format("requested number of devices unavailable for {}. Requested: {}, Available: {}",
                    resource_name, needed, available.size()));
  }

  AffinityBuckets buckets = FilterByAffinity(affinity_->GetAffinity(pod_uid, container_name),
                                             devices_.HasTopologyAlignment(resource_name),
                                             devices_.All(resource_name), available);

  if (needed < static_cast<int>(buckets.aligned.size())) {
    // More aligned devices than needed: let the plugin choose among them.
    absl::StatusOr<DeviceSet> preferred = CallGetPreferredAllocationIfAvailableLocked(
        pod_uid, container_name, resource_name, Union(buckets.aligned, allocated), allocated,
        required);
    if (!preferred.ok()) return preferred.status();
    if (allocate_remaining_from(Intersection(*preferred, buckets.aligned))) return allocated;
    if (allocate_remaining_from(buckets.aligned)) return allocated;
    return less_than_required();
  }

  // Aligned devices alone are not more than enough: take them all first.
  if (allocate_remaining_from(buckets.aligned)) return allocated;
  // Then the plugin's preference among the rest, then whatever is left.
  absl::StatusOr<DeviceSet> preferred = CallGetPreferredAllocationIfAvailableLocked(
      pod_uid, container_name, resource_name, Union(available, allocated), allocated, required);
  if (!preferred.ok()) return preferred.status();
  if (allocate_remaining_from(Intersection(*preferred, available))) return allocated;
  if (allocate_remaining_from(buckets.unaligned)) return allocated;
  if (allocate_remaining_from(buckets.no_affinity)) return allocated;
  return less_than_required();
}

absl::StatusOr<DeviceSet> ManagerImpl::CallGetPreferredAllocationIfAvailableLocked(
    const std::string& pod_uid, const std::string& container_name, const std::string& resource_name,
    const DeviceSet& available, const DeviceSet& must_include, int size) {
  auto it = endpoints_.find(resource_name);
  if (it == endpoints_.end()) {
    return absl::NotFoundError(
        fmt::format("endpoint not found in cache for a registered resource: {}", resource_name));
  }
  if (!it->second.opts.has_value() || !it->second.opts->get_preferred_allocation_available()) {
    DM_VINFO(5, "Plugin options indicate to skip GetPreferredAllocation for resource",
             {"resourceName", resource_name}, {"podUID", pod_uid},
             {"containerName", container_name});
    return DeviceSet{};
  }
  std::shared_ptr<Endpoint> endpoint = it->second.e;
  std::vector<std::string> avail = UnsortedList(available);
  std::vector<std::string> must = UnsortedList(must_include);
  // The kubelet releases m.mutex for the RPC (no deadline) and takes it back
  // afterwards; state may change meanwhile.
  mu_.Unlock();
  DM_VINFO(4, "Issuing a GetPreferredAllocation call for container",
           {"resourceName", resource_name}, {"containerName", container_name}, {"podUID", pod_uid});
  absl::StatusOr<v1beta1::PreferredAllocationResponse> resp =
      endpoint->GetPreferredAllocation(avail, must, size);
  mu_.Lock();
  if (!resp.ok()) {
    return absl::Status(resp.status().code(),
                        fmt::format("device plugin GetPreferredAllocation rpc failed with err: {}",
                                    std::string(resp.status().message())));
  }
  DeviceSet out;
  // No validation: unknown or unavailable IDs are dropped by the caller's
  // intersection, duplicates collapse here.
  if (resp->container_responses_size() > 0) {
    for (const std::string& d : resp->container_responses(0).deviceids()) out.insert(d);
  }
  return out;
}

}  // namespace devmgr::manager
