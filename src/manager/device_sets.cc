#include "manager/device_sets.h"

#include <utility>

namespace devmgr::manager {

namespace {
constexpr char kHealthy[] = "Healthy";
}  // namespace

// The result is the kubelet's full replacement (fresh maps filled from the
// list). It is computed in place because plugins re-send their full list
// every few seconds with few changes: entries that stay are updated without
// reallocation.
void DeviceSets::Replace(const std::string& resource_name,
                         const google::protobuf::RepeatedPtrField<v1beta1::Device>& devices) {
  const uint64_t epoch = ++epoch_;
  Resource& r = resources_[resource_name];
  // The version (what the checkpoint's cached rendering of the healthy IDs
  // is keyed on) moves only when the healthy set, or the map's iteration
  // order, may have changed: a re-sent identical list keeps it.
  bool changed = !r.has_healthy;
  r.has_all = r.has_healthy = r.has_unhealthy = true;
  if (r.all.size() < static_cast<size_t>(devices.size())) {
    r.all.reserve(devices.size());  // may rehash
    changed = true;
  }
  for (const v1beta1::Device& d : devices) {
    auto [it, inserted] = r.all.try_emplace(d.id());
    changed |= inserted;
    StoredDevice& sd = it->second;
    if (sd.epoch != epoch) {
      sd.epoch = epoch;
      sd.was_healthy = !inserted && sd.healthy;
      sd.healthy = false;
      sd.unhealthy = false;
    }
    // A duplicate ID: the last occurrence wins in allDevices, but every
    // occurrence adds the ID to the set of its health.
    sd.health = d.health();
    sd.numa_nodes.clear();
    sd.has_topology = d.has_topology();
    if (d.has_topology()) {
      for (const v1beta1::NUMANode& n : d.topology().nodes()) sd.numa_nodes.push_back(n.id());
    }
    if (d.health() == kHealthy) {
      sd.healthy = true;
    } else {
      sd.unhealthy = true;
    }
  }
  r.healthy_count = 0;
  r.unhealthy_count = 0;
  for (auto it = r.all.begin(); it != r.all.end();) {
    if (it->second.epoch != epoch) {
      r.all.erase(it++);  // vanished from the list
      changed = true;
      continue;
    }
    changed |= it->second.healthy != it->second.was_healthy;
    r.healthy_count += it->second.healthy;
    r.unhealthy_count += it->second.unhealthy;
    ++it;
  }
  if (changed) r.version = ++last_version_;
}

void DeviceSets::MarkResourceUnhealthy(const std::string& resource_name) {
  Resource& r = resources_[resource_name];
  r.version = ++last_version_;
  r.has_unhealthy = true;
  if (!r.has_healthy) return;
  for (auto& [id, d] : r.all) {
    if (!d.healthy) continue;
    d.healthy = false;
    if (!d.unhealthy) {
      d.unhealthy = true;
      ++r.unhealthy_count;
    }
  }
  r.healthy_count = 0;
}

void DeviceSets::SetEmpty(const std::string& resource_name) {
  Resource& r = resources_[resource_name];
  r.version = ++last_version_;
  r.has_healthy = r.has_unhealthy = true;
  for (auto& [id, d] : r.all) d.healthy = d.unhealthy = false;
  r.healthy_count = r.unhealthy_count = 0;
}

void DeviceSets::EraseHealthy(const std::string& resource_name) {
  auto it = resources_.find(resource_name);
  if (it == resources_.end()) return;
  it->second.version = ++last_version_;
  it->second.has_healthy = false;
  for (auto& [id, d] : it->second.all) d.healthy = false;
  it->second.healthy_count = 0;
}

void DeviceSets::EraseUnhealthy(const std::string& resource_name) {
  auto it = resources_.find(resource_name);
  if (it == resources_.end()) return;
  it->second.version = ++last_version_;
  it->second.has_unhealthy = false;
  for (auto& [id, d] : it->second.all) d.unhealthy = false;
  it->second.unhealthy_count = 0;
}

const DeviceSets::Resource* DeviceSets::Get(const std::string& resource_name) const {
  auto it = resources_.find(resource_name);
  return it == resources_.end() ? nullptr : &it->second;
}

uint64_t DeviceSets::Version(const std::string& resource_name) const {
  const Resource* r = Get(resource_name);
  return r == nullptr ? 0 : r->version;
}

bool DeviceSets::HasHealthy(const std::string& resource_name) const {
  const Resource* r = Get(resource_name);
  return r != nullptr && r->has_healthy;
}

bool DeviceSets::HasUnhealthy(const std::string& resource_name) const {
  const Resource* r = Get(resource_name);
  return r != nullptr && r->has_unhealthy;
}

size_t DeviceSets::HealthyCount(const std::string& resource_name) const {
  const Resource* r = Get(resource_name);
  return r == nullptr ? 0 : r->healthy_count;
}

size_t DeviceSets::UnhealthyCount(const std::string& resource_name) const {
  const Resource* r = Get(resource_name);
  return r == nullptr ? 0 : r->unhealthy_count;
}

std::vector<std::string> DeviceSets::HealthyResources() const {
  std::vector<std::string> out;
  for (const auto& [name, r] : resources_) {
    if (r.has_healthy) out.push_back(name);
  }
  return out;
}

std::vector<std::string> DeviceSets::UnhealthyResources() const {
  std::vector<std::string> out;
  for (const auto& [name, r] : resources_) {
    if (r.has_unhealthy) out.push_back(name);
  }
  return out;
}

bool DeviceSets::IsHealthy(const std::string& resource_name, const std::string& id) const {
  const StoredDevice* d = Find(resource_name, id);
  return d != nullptr && d->healthy;
}

std::vector<std::string> DeviceSets::HealthyIds(const std::string& resource_name) const {
  std::vector<std::string> out;
  const Resource* r = Get(resource_name);
  if (r == nullptr) return out;
  out.reserve(r->healthy_count);
  for (const auto& [id, d] : r->all) {
    if (d.healthy) out.push_back(id);
  }
  return out;
}

std::vector<std::string> DeviceSets::UnhealthyIds(const std::string& resource_name) const {
  std::vector<std::string> out;
  const Resource* r = Get(resource_name);
  if (r == nullptr) return out;
  out.reserve(r->unhealthy_count);
  for (const auto& [id, d] : r->all) {
    if (d.unhealthy) out.push_back(id);
  }
  return out;
}

const DeviceMap* DeviceSets::All(const std::string& resource_name) const {
  const Resource* r = Get(resource_name);
  return r == nullptr || !r->has_all ? nullptr : &r->all;
}

const StoredDevice* DeviceSets::Find(const std::string& resource_name,
                                     const std::string& id) const {
  const DeviceMap* all = All(resource_name);
  if (all == nullptr) return nullptr;
  auto d = all->find(id);
  return d == all->end() ? nullptr : &d->second;
}

bool DeviceSets::HasTopologyAlignment(const std::string& resource_name) const {
  const DeviceMap* all = All(resource_name);
  if (all == nullptr) return false;
  for (const auto& [id, d] : *all) {
    if (!d.numa_nodes.empty()) return true;
  }
  return false;
}

}  // namespace devmgr::manager
