#include "manager/pod_devices.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "common/logging.h"

namespace devmgr::manager {

std::vector<std::string> PodDevices::Pods() const {
  std::vector<std::string> out;
  out.reserve(devs_.size());
  for (const auto& [uid, containers] : devs_) out.push_back(uid);
  return out;
}

void PodDevices::Insert(const std::string& pod_uid, const std::string& container_name,
                        const std::string& resource_name, DevicesPerNUMA device_ids,
                        std::optional<v1beta1::ContainerAllocateResponse> alloc_resp) {
  DeviceAllocateInfo& info = devs_[pod_uid][container_name][resource_name];
  static std::atomic<uint64_t> last_version{0};
  info = DeviceAllocateInfo{std::move(device_ids), std::move(alloc_resp)};
  info.version = last_version.fetch_add(1, std::memory_order_relaxed) + 1;
  if (info.alloc_resp.has_value()) {
    info.marshal_failed = !info.alloc_resp->SerializeToString(&info.alloc_resp_bytes);
  }
}

void PodDevices::Delete(const std::vector<std::string>& pod_uids) {
  for (const std::string& uid : pod_uids) devs_.erase(uid);
}

DeviceSet PodDevices::PodDeviceSet(const std::string& pod_uid,
                                   const std::string& resource_name) const {
  DeviceSet out;
  auto p = devs_.find(pod_uid);
  if (p == devs_.end()) return out;
  for (const auto& [cname, resources] : p->second) {
    auto r = resources.find(resource_name);
    if (r == resources.end()) continue;
    DeviceSet s = DevicesOf(r->second.device_ids);
    out.insert(s.begin(), s.end());
  }
  return out;
}

std::optional<DeviceSet> PodDevices::ContainerDevices(const std::string& pod_uid,
                                                      const std::string& container_name,
                                                      const std::string& resource_name) const {
  auto p = devs_.find(pod_uid);
  if (p == devs_.end()) return std::nullopt;
  auto c = p->second.find(container_name);
  if (c == p->second.end()) return std::nullopt;
  auto r = c->second.find(resource_name);
  if (r == c->second.end()) return std::nullopt;
  return DevicesOf(r->second.device_ids);
}

void PodDevices::AddContainerAllocatedResources(const std::string& pod_uid,
                                                const std::string& container_name,
                                                std::map<std::string, DeviceSet>* allocated) const {
  auto p = devs_.find(pod_uid);
  if (p == devs_.end()) return;
  auto c = p->second.find(container_name);
  if (c == p->second.end()) return;
  for (const auto& [resource, info] : c->second) {
    DeviceSet s = DevicesOf(info.device_ids);
    (*allocated)[resource].insert(s.begin(), s.end());
  }
}

void PodDevices::RemoveContainerAllocatedResources(
    const std::string& pod_uid, const std::string& container_name,
    std::map<std::string, DeviceSet>* allocated) const {
  auto p = devs_.find(pod_uid);
  if (p == devs_.end()) return;
  auto c = p->second.find(container_name);
  if (c == p->second.end()) return;
  for (const auto& [resource, info] : c->second) {
    auto it = allocated->find(resource);
    if (it == allocated->end()) continue;
    for (const std::string& id : DevicesOf(info.device_ids)) it->second.erase(id);
  }
}

std::map<std::string, DeviceSet> PodDevices::Devices() const {
  std::map<std::string, DeviceSet> out;
  for (const auto& [uid, containers] : devs_) {
    for (const auto& [cname, resources] : containers) {
      for (const auto& [resource, info] : resources) {
        DeviceSet& set = out[resource];
        if (!info.alloc_resp.has_value()) continue;
        if (!info.device_ids.has_value()) continue;
        for (const auto& [node, ids] : *info.device_ids) {
          if (!ids.has_value()) continue;
          set.insert(ids->begin(), ids->end());
        }
      }
    }
  }
  return out;
}

namespace {

// Whether toCheckpointData takes the entry; logs why not, as the kubelet.
bool Checkpointable(const std::string& uid, const std::string& cname, const std::string& resource,
                    const DeviceAllocateInfo& info) {
  if (!info.alloc_resp.has_value()) {
    DM_ERROR("", "Can't marshal allocResp, allocation response is missing", {"podUID", uid},
             {"containerName", cname}, {"resourceName", resource});
    return false;
  }
  if (info.marshal_failed) {
    DM_ERROR("proto: Marshal failed", "Can't marshal allocResp", {"podUID", uid},
             {"containerName", cname}, {"resourceName", resource});
    return false;
  }
  return true;
}

}  // namespace

std::optional<std::vector<checkpoint::PodDevicesEntry>> PodDevices::ToCheckpointData() const {
  bool nil = false;
  const std::vector<checkpoint::IncrementalEncoder::EntryRef> refs = CheckpointEntryRefs(&nil);
  if (nil) return std::nullopt;
  std::vector<checkpoint::PodDevicesEntry> out;
  out.reserve(refs.size());
  for (const checkpoint::IncrementalEncoder::EntryRef& r : refs) {
    out.push_back({std::string(r.pod_uid), std::string(r.container_name),
                   std::string(r.resource_name), *r.device_ids, *r.alloc_resp});
  }
  return out;
}

std::vector<checkpoint::IncrementalEncoder::EntryRef> PodDevices::CheckpointEntryRefs(
    bool* nil) const {
  std::vector<checkpoint::IncrementalEncoder::EntryRef> out;
  for (const auto& [uid, containers] : devs_) {
    for (const auto& [cname, resources] : containers) {
      for (const auto& [resource, info] : resources) {
        if (!Checkpointable(uid, cname, resource, info)) continue;
        out.push_back(
            {uid, cname, resource, info.version, &info.device_ids, &info.alloc_resp_bytes});
      }
    }
  }
  *nil = out.empty();
  return out;
}

void PodDevices::FromCheckpointData(const std::vector<checkpoint::PodDevicesEntry>& entries) {
  for (const checkpoint::PodDevicesEntry& e : entries) {
    DM_VINFO(2, "Get checkpoint entry", {"podUID", e.pod_uid}, {"containerName", e.container_name},
             {"resourceName", e.resource_name});
    v1beta1::ContainerAllocateResponse resp;
    if (e.alloc_resp.has_value() && !resp.ParseFromString(*e.alloc_resp)) {
      DM_ERROR("proto: ContainerAllocateResponse: illegal wire data", "Can't unmarshal allocResp",
               {"podUID", e.pod_uid}, {"containerName", e.container_name},
               {"resourceName", e.resource_name});
      continue;
    }
    Insert(e.pod_uid, e.container_name, e.resource_name, e.device_ids, std::move(resp));
  }
}

std::optional<RunContainerOptions> PodDevices::DeviceRunContainerOptions(
    const std::string& pod_uid, const std::string& container_name, bool cdi_enabled,
    bool log_conflicts) const {
  auto p = devs_.find(pod_uid);
  if (p == devs_.end()) return std::nullopt;
  auto c = p->second.find(container_name);
  if (c == p->second.end()) return std::nullopt;
  RunContainerOptionsMerger merger(cdi_enabled, log_conflicts);
  for (const auto& [resource, info] : c->second) {
    // The kubelet dereferences a nil allocResp here (a panic that does not
    // happen in practice); devmgr skips it.
    if (!info.alloc_resp.has_value()) continue;
    merger.Add(*info.alloc_resp);
  }
  return merger.Take();
}

std::map<std::string, std::map<std::string, std::vector<int64_t>>> PodDevices::GetContainerDevices(
    const std::string& pod_uid, const std::string& container_name) const {
  std::map<std::string, std::map<std::string, std::vector<int64_t>>> out;
  auto p = devs_.find(pod_uid);
  if (p == devs_.end()) return out;
  auto c = p->second.find(container_name);
  if (c == p->second.end()) return out;
  for (const auto& [resource, info] : c->second) {
    if (!info.device_ids.has_value() || info.device_ids->empty()) continue;
    auto& devices = out[resource];
    for (const auto& [node, ids] : *info.device_ids) {
      if (!ids.has_value()) continue;
      for (const std::string& id : *ids) {
        std::vector<int64_t>& nodes = devices[id];
        if (node != kNodeWithoutTopology) nodes.push_back(node);
      }
    }
  }
  return out;
}

}  // namespace devmgr::manager
