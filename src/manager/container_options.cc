// ManagerImpl: GetDeviceRunContainerOptions and PreStartContainer
// (devicemanager manager.go and pod_devices.go).
#include <utility>

#include "common/logging.h"
#include "fmt/format.h"
#include "manager/manager_impl.h"

namespace devmgr::manager {

bool ManagerImpl::CdiEnabled() const {
  // 1.30: behind the DevicePluginCDIDevices gate (beta, default on); 1.31+:
  // GA and always on.
  return !opts_.profile.cdi_feature_gate ||
         (opts_.cdi_devices_gate && opts_.profile.gates.Enabled(kGateDevicePluginCDIDevices));
}

absl::StatusOr<std::optional<RunContainerOptions>> ManagerImpl::GetDeviceRunContainerOptions(
    const pod::Pod& pod, const pod::Container& container) {
  bool needs_re_allocate = false;
  for (const auto& [resource, quantity] : container.limits) {
    if (!IsDevicePluginResource(resource) || quantity == 0) continue;
    // PreStartContainer comes before the re-allocation check: a container
    // with no cached devices and a PreStart-required plugin fails with "no
    // devices found ..." rather than being re-allocated.
    absl::Status s = CallPreStartContainerIfNeeded(pod.uid, container.name, resource);
    if (!s.ok()) return s;
    if (!CheckPodActive(pod.uid)) {
      DM_VINFO(5, "Pod deleted from activePods, skip to reAllocate", {"podUID", pod.uid},
               {"containerName", container.name});
      continue;
    }
    // A device-plugin resource with no cached state: likely a race during a
    // node restart; allocate again.
    bool cached;
    {
      absl::MutexLock l(&mu_);
      cached = pod_devices_.ContainerDevices(pod.uid, container.name, resource).has_value();
    }
    if (!cached) needs_re_allocate = true;
  }
  if (needs_re_allocate) {
    DM_VINFO(2, "Needs to re-allocate device plugin resources for pod", {"podUID", pod.uid},
             {"containerName", container.name});
    absl::Status s = Allocate(pod, container);
    if (!s.ok()) return s;
  }
  absl::MutexLock l(&mu_);
  return pod_devices_.DeviceRunContainerOptions(pod.uid, container.name, CdiEnabled());
}

absl::Status ManagerImpl::CallPreStartContainerIfNeeded(const std::string& pod_uid,
                                                        const std::string& container_name,
                                                        const std::string& resource_name) {
  std::shared_ptr<Endpoint> endpoint;
  std::vector<std::string> devs;
  {
    absl::MutexLock l(&mu_);
    auto it = endpoints_.find(resource_name);
    // Possible after the grace-period removal while allocations remain: the
    // container then fails to start.
    if (it == endpoints_.end()) {
      return absl::NotFoundError(
          fmt::format("endpoint not found in cache for a registered resource: {}", resource_name));
    }
    if (!it->second.opts.has_value() || !it->second.opts->pre_start_required()) {
      DM_VINFO(5, "Plugin options indicate to skip PreStartContainer for resource",
               {"podUID", pod_uid}, {"resourceName", resource_name},
               {"containerName", container_name});
      return absl::OkStatus();
    }
    std::optional<DeviceSet> devices =
        pod_devices_.ContainerDevices(pod_uid, container_name, resource_name);
    if (!devices.has_value()) {
      return absl::NotFoundError(fmt::format(
          "no devices found allocated in local cache for pod {}, container {}, resource {}",
          pod_uid, container_name, resource_name));
    }
    endpoint = it->second.e;
    devs = UnsortedList(*devices);
  }
  DM_VINFO(4, "Issuing a PreStartContainer call for container", {"containerName", container_name},
           {"podUID", pod_uid});
  absl::StatusOr<v1beta1::PreStartContainerResponse> resp = endpoint->PreStartContainer(devs);
  if (!resp.ok()) {
    return absl::Status(resp.status().code(),
                        fmt::format("device plugin PreStartContainer rpc failed with err: {}",
                                    std::string(resp.status().message())));
  }
  return absl::OkStatus();
}

}  // namespace devmgr::manager
