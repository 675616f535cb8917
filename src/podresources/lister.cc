#include "podresources/lister.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "fmt/format.h"
#include "podresources/dynamic_resources.h"

namespace devmgr::podresources {
namespace {

using DeviceMap = std::map<std::string, std::vector<int64_t>>;  // id -> NUMA nodes

// One ContainerDevices per (device, NUMA node); none for the node list when
// the device has no topology.
void AppendFlattened(const std::string& resource, const std::string& id,
                     const std::vector<int64_t>& numa,
                     google::protobuf::RepeatedPtrField<v1::ContainerDevices>* out) {
  if (numa.empty()) {
    v1::ContainerDevices* d = out->Add();
    d->set_resource_name(resource);
    d->add_device_ids(id);
    return;
  }
  std::vector<int64_t> sorted = numa;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t n : sorted) {
    v1::ContainerDevices* d = out->Add();
    d->set_resource_name(resource);
    d->add_device_ids(id);
    d->mutable_topology()->add_nodes()->set_id(n);
  }
}

// The kubelet's GetDevices(podUID, containerName), flattened.
void FillContainer(const manager::PodAllocation* alloc, const std::string& name,
                   v1::ContainerResources* out) {
  out->set_name(name);
  if (alloc == nullptr) return;
  for (const manager::ContainerAllocation& c : alloc->containers) {
    if (c.container_name != name) continue;
    for (const auto& [resource, ids] : c.devices) {
      const auto topo = c.topology.find(resource);
      std::vector<std::string> sorted = ids;
      std::sort(sorted.begin(), sorted.end());
      for (const std::string& id : sorted) {
        std::vector<int64_t> numa;
        if (topo != c.topology.end()) {
          auto it = topo->second.find(id);
          if (it != topo->second.end()) numa = it->second;
        }
        // Recorded without topology: NUMA -1 in podDevices.
        numa.erase(std::remove(numa.begin(), numa.end(), -1), numa.end());
        AppendFlattened(resource, id, numa, out->mutable_devices());
      }
    }
  }
}

// The kubelet's GetDynamicResources: a container's claims could not be read
// (a claim not in the DRA manager's cache) gives it none, with the error
// logged.
void FillDynamicResources(node::Node* node, const std::string& pod_uid, v1::ContainerResources* c) {
  absl::StatusOr<std::vector<dra::ClaimInfoState>> claims = node->DraClaimInfos(pod_uid, c->name());
  if (!claims.ok()) {
    DM_ERROR(std::string(claims.status().message()), "Unable to get container claim info state",
             {"podUID", pod_uid}, {"containerName", c->name()});
    return;
  }
  AppendDynamicResources(*claims, c->mutable_dynamic_resources());
}

// One pod's answer: the kubelet's getContainerResources per listed container.
void FillPod(node::Node* node, const Options& opts, const pod::Pod& p,
             const manager::PodAllocation* alloc, v1::PodResources* out) {
  out->set_name(p.name);
  out->set_namespace_(p.namespace_);
  auto fill = [&](const pod::Container& c) {
    v1::ContainerResources* cr = out->add_containers();
    FillContainer(alloc, c.name, cr);
    if (opts.dynamic_resources) FillDynamicResources(node, p.uid, cr);
  };
  if (opts.sidecar_containers) {
    for (const pod::Container& c : p.init_containers) {
      if (c.restartable) fill(c);
    }
  }
  for (const pod::Container& c : p.containers) fill(c);
}

const manager::PodAllocation* FindAlloc(const std::vector<manager::PodAllocation>& all,
                                        const std::string& uid) {
  for (const auto& a : all) {
    if (a.pod_uid == uid) return &a;
  }
  return nullptr;
}

}  // namespace

Lister::Lister(node::Node* node, node::PodManager* pods, Options opts)
    : node_(node), pods_(pods), opts_(opts) {}

v1::ListPodResourcesResponse Lister::List() {
  node_->manager().UpdateAllocatedDevices();
  const std::vector<node::PodRecord> records = pods_->Pods();
  std::set<std::string> active;
  if (opts_.list_active_pods_only) {
    for (std::string& uid : pods_->ActivePodUids()) active.insert(std::move(uid));
  }
  const std::vector<manager::PodAllocation> allocs = node_->manager().Allocations();
  v1::ListPodResourcesResponse resp;
  for (const node::PodRecord& r : records) {
    if (r.deleted) continue;
    if (opts_.list_active_pods_only && active.count(r.pod.uid) == 0) continue;
    FillPod(node_, opts_, r.pod, FindAlloc(allocs, r.pod.uid), resp.add_pod_resources());
  }
  return resp;
}

v1::AllocatableResourcesResponse Lister::GetAllocatableResources() {
  v1::AllocatableResourcesResponse resp;
  for (const manager::ResourceStatus& r : node_->manager().Snapshot()) {
    const std::set<std::string> healthy(r.healthy.begin(), r.healthy.end());
    for (const manager::DeviceInfo& d : r.devices) {
      if (healthy.count(d.id) == 0) continue;
      AppendFlattened(r.resource_name, d.id, d.numa_nodes.value_or(std::vector<int64_t>{}),
                      resp.mutable_devices());
    }
  }
  return resp;
}

absl::StatusOr<v1::GetPodResourcesResponse> Lister::Get(const std::string& pod_namespace,
                                                        const std::string& pod_name) {
  if (!opts_.get_enabled) return absl::UnknownError(kGetDisabled);
  // The pod manager's GetPodByName: the newest pod with that name that has
  // not been deleted.
  const std::vector<node::PodRecord> records = pods_->Pods();
  const node::PodRecord* found = nullptr;
  for (const node::PodRecord& r : records) {
    if (!r.deleted && r.pod.namespace_ == pod_namespace && r.pod.name == pod_name) found = &r;
  }
  if (found == nullptr) {
    return absl::UnknownError(
        fmt::format("pod {} in namespace {} not found", pod_name, pod_namespace));
  }
  const std::vector<manager::PodAllocation> allocs = node_->manager().Allocations();
  v1::GetPodResourcesResponse resp;
  FillPod(node_, opts_, found->pod, FindAlloc(allocs, found->pod.uid),
          resp.mutable_pod_resources());
  return resp;
}

}  // namespace devmgr::podresources
