#include "manager/resource_health.h"

#include <algorithm>
#include <map>
#include <utility>

#include "common/logging.h"
#include "fmt/format.h"
#include "manager/manager_impl.h"

namespace devmgr::manager {
namespace {

std::string Joined(const std::set<std::string>& s) {
  std::string out = "[";
  for (const std::string& x : s) out += (out.size() > 1 ? " " : "") + x;
  return out + "]";
}

}  // namespace

bool ResourceHealthStatusDefault(const Profile& profile) {
  // The profile's gate table (defaults per version, plus any --feature-gates).
  return profile.gates.Enabled(kGateResourceHealthStatus);
}

bool DeviceUpdateChannel::TrySend(std::vector<std::string> pod_uids) {
  {
    absl::MutexLock l(&mu_);
    if (queue_.size() < capacity_) {
      queue_.push_back(std::move(pod_uids));
      return true;
    }
  }
  std::set<std::string> s(pod_uids.begin(), pod_uids.end());
  DM_ERROR("device update channel is full", "discard pods info", {"podsToUpdate", Joined(s)});
  return false;
}

std::optional<std::vector<std::string>> DeviceUpdateChannel::Receive(absl::Duration timeout) {
  absl::MutexLock l(&mu_);
  const uint64_t wakes = wakes_;
  auto ready = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !queue_.empty() || wakes_ != wakes; };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  if (queue_.empty()) return std::nullopt;
  std::vector<std::string> out = std::move(queue_.front());
  queue_.pop_front();
  return out;
}

void DeviceUpdateChannel::Wake() {
  absl::MutexLock l(&mu_);
  ++wakes_;
}

size_t DeviceUpdateChannel::size() const {
  absl::MutexLock l(&mu_);
  return queue_.size();
}

std::optional<std::pair<std::string, std::string>> PodAndContainerForDevice(
    const PodDevices& pod_devices, const std::string* resource, const std::string& device_id) {
  for (const auto& [uid, containers] : pod_devices.entries()) {
    for (const auto& [cname, resources] : containers) {
      for (const auto& [rname, info] : resources) {
        if (resource != nullptr && rname != *resource) continue;
        if (DevicesOf(info.device_ids).contains(device_id)) return std::make_pair(uid, cname);
      }
    }
  }
  return std::nullopt;
}

std::set<std::string> PodsToUpdate(
    const DeviceMap* old_devices,
    const google::protobuf::RepeatedPtrField<v1beta1::Device>& devices,
    const PodDevices& pod_devices, const std::string& resource, bool per_resource_lookup) {
  std::set<std::string> out;
  for (const v1beta1::Device& d : devices) {
    if (old_devices != nullptr) {
      auto it = old_devices->find(d.id());
      // Known with the same health: nothing to tell. (A device that comes
      // back after missing from a list counts as new.)
      if (it != old_devices->end() && it->second.health == d.health()) continue;
    }
    auto owner =
        PodAndContainerForDevice(pod_devices, per_resource_lookup ? &resource : nullptr, d.id());
    if (owner) out.insert(owner->first);
  }
  return out;
}

void UpdateContainerStatuses(const std::string& pod_uid, const PodDevices& pod_devices,
                             const DeviceSets& devices,
                             std::vector<ContainerResourceStatus>* statuses) {
  for (ContainerResourceStatus& cs : *statuses) {
    const auto held = pod_devices.GetContainerDevices(pod_uid, cs.name);
    for (const auto& [resource, ids] : held) {
      ResourceHealthStatus rs;
      rs.name = resource;
      for (const auto& [id, numa] : ids) {
        const StoredDevice* d = devices.Find(resource, id);
        const bool healthy = d == nullptr || d->health == kHealthHealthy;
        rs.resources.push_back({id, healthy ? kHealthHealthy : kHealthUnhealthy});
      }
      if (!cs.allocated_resources_status) cs.allocated_resources_status.emplace();
      auto& list = *cs.allocated_resources_status;
      auto same = std::find_if(list.begin(), list.end(),
                               [&](const ResourceHealthStatus& x) { return x.name == rs.name; });
      if (same != list.end()) {
        *same = std::move(rs);
      } else {
        list.push_back(std::move(rs));
      }
    }
  }
}

// ---- ManagerImpl ----

void ManagerImpl::UpdateAllocatedResourcesStatus(const std::string& pod_uid,
                                                 std::vector<ContainerResourceStatus>* statuses) {
  absl::MutexLock l(&mu_);
  UpdateContainerStatuses(pod_uid, pod_devices_, devices_, statuses);
}

void ManagerImpl::SendPodUpdates(const std::set<std::string>& pods) {
  if (pods.empty()) return;
  DM_VINFO(3, "Device health changed; queueing pods to resync", {"podsToUpdate", Joined(pods)});
  updates_.TrySend(std::vector<std::string>(pods.begin(), pods.end()));
}

}  // namespace devmgr::manager
