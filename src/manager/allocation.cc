// ManagerImpl: Allocate, allocateContainerResources, UpdateAllocatedDevices
// (GC) and the "none"-policy admission, as the kubelet's
// pkg/kubelet/cm/devicemanager/manager.go.
#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/time/clock.h"
#include "common/go_format.h"
#include "common/logging.h"
#include "fmt/format.h"
#include "manager/manager_impl.h"

namespace devmgr::manager {

absl::Status ManagerImpl::Allocate(const pod::Pod& pod, const pod::Container& container) {
  const std::string& uid = pod.uid;
  std::map<std::string, DeviceSet> reuse;
  {
    absl::MutexLock l(&mu_);
    // Only the pod being allocated keeps reuse knowledge: allocating for
    // another pod between two containers forgets it (section 6.9).
    devices_to_reuse_[uid];
    for (auto it = devices_to_reuse_.begin(); it != devices_to_reuse_.end();) {
      it = it->first == uid ? std::next(it) : devices_to_reuse_.erase(it);
    }
    if (opts_.profile.pending_admission_pod_active) pending_admission_pod_ = uid;
    reuse = devices_to_reuse_[uid];
  }

  const pod::Container* init = nullptr;
  for (const pod::Container& c : pod.init_containers) {
    if (c.name == container.name) {
      init = &c;
      break;
    }
  }
  absl::Status s = AllocateContainerResources(pod, container, reuse);
  if (!s.ok()) {
    NotifyChange();
    return s;
  }
  {
    absl::MutexLock l(&mu_);
    std::map<std::string, DeviceSet>& pool = devices_to_reuse_[uid];
    if (init != nullptr && !init->restartable) {
      // A regular init container's devices can be reused by the containers
      // that run after it.
      pod_devices_.AddContainerAllocatedResources(uid, container.name, &pool);
    } else {
      // A sidecar (restartable init container) or an app container keeps its
      // devices for itself, including any it took from the reuse pool.
      pod_devices_.RemoveContainerAllocatedResources(uid, container.name, &pool);
    }
  }
  NotifyChange();
  return absl::OkStatus();
}

absl::Status ManagerImpl::AllocateContainerResources(
    const pod::Pod& pod, const pod::Container& container,
    const std::map<std::string, DeviceSet>& reuse) {
  const std::string& uid = pod.uid;
  const std::string& cname = container.name;
  const std::string pod_ref = fmt::format("{}/{}", pod.namespace_, pod.name);
  bool allocated_devices_updated = false;
  bool needs_checkpoint = false;
  static const DeviceSet kEmpty;
  // Limits only: requests equal limits for extended resources. Resources are
  // visited in name order (Go: map order).
  for (const auto& [resource, quantity] : container.limits) {
    const int needed = static_cast<int>(quantity);
    DM_VINFO(3, "Looking for needed resources", {"resourceName", resource}, {"pod", pod_ref},
             {"containerName", cname}, {"needed", needed});
    if (!IsDevicePluginResource(resource)) continue;
    // DRAExtendedResource (gate from 1.34, default off until 1.36): a limit
    // the pod's status.extendedResourceClaimStatus maps to a claim is served
    // by DRA; the device manager neither allocates nor checkpoints it. The
    // device manager checks it from 1.35 (1.34.4's has no such code: the
    // kubelet oracle allocates the limit there with the gate on).
    if (opts_.profile.minor >= 35 && opts_.profile.gates.Enabled(kGateDRAExtendedResource) &&
        pod::IsDraBackedResource(pod, cname, resource)) {
      DM_VINFO(3, "Skipping DRA-backed extended resource", {"resourceName", resource},
               {"pod", pod_ref}, {"containerName", cname});
      continue;
    }
    // Garbage-collect stranded allocations once per call, before the first
    // device-plugin resource.
    if (!allocated_devices_updated) {
      UpdateAllocatedDevices();
      allocated_devices_updated = true;
    }
    auto r = reuse.find(resource);
    absl::StatusOr<DeviceSet> alloc =
        DevicesToAllocate(uid, cname, resource, needed, r == reuse.end() ? kEmpty : r->second);
    // Quirk (section 6.9): devices chosen before this error stay in
    // allocatedDevices; earlier resources' podDevices entries stay too, and
    // no checkpoint is written.
    if (!alloc.ok()) return alloc.status();
    if (alloc->empty()) continue;

    needs_checkpoint = true;
    std::shared_ptr<Endpoint> endpoint;
    {
      absl::MutexLock l(&mu_);
      auto it = endpoints_.find(resource);
      if (it == endpoints_.end()) {
        allocated_devices_ = pod_devices_.Devices();
        return absl::NotFoundError(fmt::format("unknown Device Plugin {}", resource));
      }
      endpoint = it->second.e;
    }
    std::vector<std::string> devs = UnsortedList(*alloc);
    DM_VINFO(4, "Making allocation request for device plugin", {"devices", GoList(devs)},
             {"resourceName", resource}, {"pod", pod_ref}, {"containerName", cname});
    const absl::Time rpc_start = absl::Now();
    absl::StatusOr<v1beta1::AllocateResponse> resp = endpoint->Allocate(devs);
    if (opts_.on_allocate_rpc) opts_.on_allocate_rpc(resource, absl::Now() - rpc_start);
    if (!resp.ok()) {
      // Restore allocatedDevices from podDevices: the devices just chosen
      // are released.
      absl::MutexLock l(&mu_);
      allocated_devices_ = pod_devices_.Devices();
      return resp.status();
    }
    if (resp->container_responses_size() == 0) {
      // Quirk: unlike an RPC error, allocatedDevices is not rebuilt here, so
      // the chosen devices stay "in use" until a later rebuild. Go prints the
      // empty response with %v: gogo's String() up to 1.33, and from 1.34
      // (protoc-gen-go types) nothing at all (checked with the kubelet's own
      // code, docs/oracle.md).
      return absl::InternalError(
          opts_.profile.validates_utf8
              ? "no containers return in allocation response "
              : "no containers return in allocation response "
                "&AllocateResponse{ContainerResponses:[]*ContainerAllocateResponse{},}");
    }
    // Extra container responses are ignored; only the first is used.
    {
      absl::MutexLock l(&mu_);
      DevicesPerNUMA per_numa;
      auto& m = per_numa.emplace();
      for (const std::string& dev : *alloc) {
        const StoredDevice* d = devices_.Find(resource, dev);
        if (d == nullptr || d->numa_nodes.empty()) {
          auto& ids = m[kNodeWithoutTopology];
          if (!ids.has_value()) ids.emplace();
          ids->push_back(dev);
          continue;
        }
        for (int64_t node : d->numa_nodes) {
          auto& ids = m[node];
          if (!ids.has_value()) ids.emplace();
          ids->push_back(dev);
        }
      }
      pod_devices_.Insert(uid, cname, resource, std::move(per_numa),
                          std::move(*resp->mutable_container_responses(0)));
    }
  }
  // Written only when an Allocate RPC was made. A write failure fails the
  // allocation after podDevices has been updated.
  if (needs_checkpoint) return WriteCheckpoint();
  return absl::OkStatus();
}

bool ManagerImpl::IsDevicePluginResource(const std::string& resource_name) const {
  absl::MutexLock l(&mu_);
  return devices_.HasHealthy(resource_name) || allocated_devices_.count(resource_name) != 0;
}

bool ManagerImpl::SourcesReadyLocked() const {
  return !start_opts_.sources_ready || start_opts_.sources_ready();
}

std::vector<std::string> ManagerImpl::ActivePodUids() const {
  std::function<std::vector<std::string>()> fn;
  {
    absl::MutexLock l(&mu_);
    fn = start_opts_.active_pod_uids;
  }
  if (!fn) return {};
  return fn();
}

bool ManagerImpl::CheckPodActive(const std::string& pod_uid) const {
  std::vector<std::string> active = ActivePodUids();
  return std::find(active.begin(), active.end(), pod_uid) != active.end();
}

void ManagerImpl::UpdateAllocatedDevices() {
  std::vector<std::string> active = ActivePodUids();
  absl::MutexLock l(&mu_);
  if (!SourcesReadyLocked()) return;
  absl::flat_hash_set<std::string_view> active_set(active.begin(), active.end());
  // 1.30/1.31: the pod being admitted counts as active, so that a pod
  // admitted before it appears in activePods keeps its devices.
  if (opts_.profile.pending_admission_pod_active && pending_admission_pod_.has_value()) {
    active_set.insert(*pending_admission_pod_);
  }
  std::vector<std::string> to_remove;  // in podDevices' (UID) order
  for (const auto& [uid, containers] : pod_devices_.entries()) {
    if (!active_set.contains(uid)) to_remove.push_back(uid);
  }
  if (to_remove.empty()) return;  // no rebuild
  DM_VINFO(3, "Pods to be removed", {"podUIDs", GoList(to_remove)});
  pod_devices_.Delete(to_remove);
  // No checkpoint write: the next write drops the removed pods.
  allocated_devices_ = pod_devices_.Devices();
}

std::vector<PodAllocation> ManagerImpl::Allocations() const {
  absl::MutexLock l(&mu_);
  std::vector<PodAllocation> out;
  const bool cdi = CdiEnabled();
  for (const auto& [uid, containers] : pod_devices_.entries()) {
    PodAllocation p;
    p.pod_uid = uid;
    for (const auto& [cname, resources] : containers) {
      ContainerAllocation c;
      c.container_name = cname;
      for (const auto& [resource, info] : resources) {
        c.devices[resource] = SortedList(DevicesOf(info.device_ids));
      }
      c.topology = pod_devices_.GetContainerDevices(uid, cname);
      c.options = pod_devices_.DeviceRunContainerOptions(uid, cname, cdi, /*log_conflicts=*/false);
      p.containers.push_back(std::move(c));
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace devmgr::manager
