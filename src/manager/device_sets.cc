#include "manager/device_sets.h"

#include <utility>

namespace devmgr::manager {

namespace {
constexpr char kHealthy[] = "Healthy";
}  // namespace

void DeviceSets::Replace(const std::string& resource_name,
                         const google::protobuf::RepeatedPtrField<v1beta1::Device>& devices) {
  DeviceMap new_all;
  DeviceSet new_healthy;
  DeviceSet new_unhealthy;
  new_all.reserve(devices.size());
  for (const v1beta1::Device& d : devices) {
    StoredDevice& sd = new_all[d.id()];
    sd.health = d.health();
    sd.numa_nodes.clear();
    if (d.has_topology()) {
      sd.numa_nodes.reserve(d.topology().nodes_size());
      for (const v1beta1::NUMANode& n : d.topology().nodes()) sd.numa_nodes.push_back(n.id());
    }
    if (d.health() == kHealthy) {
      new_healthy.insert(d.id());
    } else {
      new_unhealthy.insert(d.id());
    }
  }
  all[resource_name] = std::move(new_all);
  healthy[resource_name] = std::move(new_healthy);
  unhealthy[resource_name] = std::move(new_unhealthy);
}

void DeviceSets::MarkResourceUnhealthy(const std::string& resource_name) {
  DeviceSet& u = unhealthy[resource_name];
  auto h = healthy.find(resource_name);
  if (h == healthy.end()) return;
  u.insert(h->second.begin(), h->second.end());
  h->second.clear();
}

bool DeviceSets::HasTopologyAlignment(const std::string& resource_name) const {
  auto it = all.find(resource_name);
  if (it == all.end()) return false;
  for (const auto& [id, d] : it->second) {
    if (!d.numa_nodes.empty()) return true;
  }
  return false;
}

const StoredDevice* DeviceSets::Find(const std::string& resource_name,
                                     const std::string& id) const {
  auto it = all.find(resource_name);
  if (it == all.end()) return nullptr;
  auto d = it->second.find(id);
  return d == it->second.end() ? nullptr : &d->second;
}

}  // namespace devmgr::manager
