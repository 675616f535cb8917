// Manager: the kubelet's device manager (pkg/kubelet/cm/devicemanager
// ManagerImpl) without the kubelet around it: device sets per resource,
// endpoints, podDevices, allocation and the checkpoint.
// As the kubelet's pkg/kubelet/cm/devicemanager.
#ifndef DEVMGR_MANAGER_MANAGER_H_
#define DEVMGR_MANAGER_MANAGER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/fs.h"
#include "kubelet/profile.h"
#include "manager/plugin_client.h"
#include "manager/resource_health.h"
#include "manager/run_container_options.h"
#include "pod/pod.h"
#include "topology/affinity_store.h"
#include "topology/hint_provider.h"
#include "topology/topology_hint.h"

namespace devmgr::manager {

// One device as last reported by ListAndWatch.
struct DeviceInfo {
  std::string id;
  std::string health;  // as sent; only "Healthy" counts as healthy
  // nullopt: no topology (nil or no nodes), the kubelet's NUMA -1.
  std::optional<std::vector<int64_t>> numa_nodes;
};

// A snapshot of one resource, for the status file and tests.
struct ResourceStatus {
  std::string resource_name;
  int64_t capacity = 0;
  // nullopt when the kubelet would report no allocatable entry (only an
  // unhealthy set exists; node status then copies capacity).
  std::optional<int64_t> allocatable;
  std::vector<DeviceInfo> devices;     // allDevices[r], sorted by id
  std::vector<std::string> healthy;    // sorted
  std::vector<std::string> unhealthy;  // sorted
  std::vector<std::string> allocated;  // sorted
  bool has_endpoint = false;
  std::string endpoint_socket;  // empty for a checkpoint placeholder
  bool stopped = false;
  absl::Time connected_since = absl::InfinitePast();
  absl::Time stopped_since = absl::InfinitePast();
  // ListAndWatch responses applied since the current endpoint connected
  // (0: its first device list has not arrived yet).
  int64_t lists_applied = 0;
};

// GetCapacity's three results.
struct CapacityResult {
  std::map<std::string, int64_t> capacity;
  std::map<std::string, int64_t> allocatable;
  std::vector<std::string> removed;
};

struct ManagerOptions {
  // The device-plugin directory (kubelet.sock and the checkpoint live here).
  std::string plugin_dir;
  Profile profile = DefaultProfile();
  // Must outlive the manager. nullptr: the real clock.
  Clock* clock = nullptr;
  // Passed to the checkpoint store.
  bool fsync = true;
  // The checkpoint store's filesystem (common/fs.h); must outlive the
  // manager. nullptr: the real one. Tests inject failures through it.
  fs::Filesystem* filesystem = nullptr;
  // cadvisor's NUMA node ids, in order (topology hints use them).
  std::vector<int> numa_nodes = {0};
  // The topology manager's affinity store; must outlive the manager.
  // nullptr: the "none" policy (never an affinity).
  const topology::TopologyAffinityStore* affinity_store = nullptr;
  // The DevicePluginCDIDevices feature gate; only consulted in profiles
  // where it still exists (1.30, default on). 1.31+ always pass CDI devices.
  bool cdi_devices_gate = true;
  // Called after every Allocate RPC, failed ones included, with the resource
  // and the RPC's wall-clock duration: the kubelet's
  // kubelet_device_plugin_alloc_duration_seconds observation. Empty: none.
  std::function<void(const std::string& resource, absl::Duration)> on_allocate_rpc;
  // The ResourceHealthStatus feature gate as the kubelet has it (see
  // ResourceHealthStatusDefault): off, no pod is ever queued for a resync.
  bool resource_health_status = false;
};

// One container's allocation, for the status file.
struct ContainerAllocation {
  std::string container_name;
  // resource -> device IDs (sorted).
  std::map<std::string, std::vector<std::string>> devices;
  // resource -> device ID -> NUMA nodes it is recorded under (empty: none).
  std::map<std::string, std::map<std::string, std::vector<int64_t>>> topology;
  // The merged runtime options (nullopt: no entry, the kubelet's nil).
  std::optional<RunContainerOptions> options;
};

struct PodAllocation {
  std::string pod_uid;
  std::vector<ContainerAllocation> containers;  // sorted by name
};

// What the kubelet hands Start (active pods, readiness, the runtime's
// containers at start-up).
struct StartOptions {
  // UIDs of the pods the kubelet considers active. Empty function: none.
  // Called without the manager's lock; must not call into the manager.
  std::function<std::vector<std::string>()> active_pod_uids;
  // sourcesReady.AllReady(). Empty function: always ready. May be called
  // with the manager's lock held; must not call into the manager.
  std::function<bool()> sources_ready;
  // (pod UID, container name) -> container ID, and the running container IDs.
  std::map<std::pair<std::string, std::string>, std::string> container_map;
  std::set<std::string> running_container_ids;
};

// Thread-safe. The device manager is a topology hint provider itself (the
// kubelet's ManagerImpl implements topologymanager.HintProvider): the
// topology manager asks it for hints and calls Allocate once the
// container's affinity is stored. Pods are admitted only through
// topology::TopologyManager::Admit.
class Manager : public ClientHandler, public topology::HintProvider {
 public:
  // Reads the checkpoint (errors are logged and ignored, as the kubelet
  // does) and restores podDevices, allocated devices and registered
  // resources (with stopped placeholder endpoints).
  virtual absl::Status Start(StartOptions opts) = 0;
  // Idempotent; safe without Start. Marks every resource's devices
  // unhealthy as PluginDisconnected does.
  virtual void Stop() = 0;

  // The kubelet's GetCapacity, including the endpointStopGracePeriod (5 min)
  // expiry and its checkpoint write.
  virtual CapacityResult GetCapacity() = 0;
  // Every resource the manager knows, sorted by name. Does not expire
  // anything (call GetCapacity for that).
  virtual std::vector<ResourceStatus> Snapshot() const = 0;

  // Called (without locks held) after every state change worth showing:
  // device list received, plugin connected or disconnected, allocation.
  virtual void SetChangeCallback(std::function<void()> cb) = 0;

  // ---- Allocation (section 6) ----

  // The kubelet's Allocate(pod, container): allocates the container's
  // device-plugin resources (calling GetPreferredAllocation and Allocate on
  // the plugins), keeps devicesToReuse for init containers, and writes the
  // checkpoint when an Allocate RPC was made. Errors carry the kubelet's
  // exact texts. Nothing is rolled back on error (section 6.9).
  // (HintProvider::Allocate.)
  absl::Status Allocate(const pod::Pod& pod, const pod::Container& container) override = 0;
  // GetDeviceRunContainerOptions (section 7): PreStartContainer where the
  // plugin requires it (30 s deadline), re-allocation of an active pod's
  // container with no cached devices, then the merged options (nullopt when
  // the container has no entry).
  virtual absl::StatusOr<std::optional<RunContainerOptions>> GetDeviceRunContainerOptions(
      const pod::Pod& pod, const pod::Container& container) = 0;
  // Garbage collection (section 6.7): drops the entries of pods not in
  // active_pod_uids() (only when sources are ready). No checkpoint write.
  virtual void UpdateAllocatedDevices() = 0;
  // Every pod's allocations, sorted by pod UID.
  virtual std::vector<PodAllocation> Allocations() const = 0;

  // ---- Topology hints (section 9.1): HintProvider ----

  std::string Name() const override { return "devicemanager"; }

  // The container's hints per device-plugin resource in its limits (after a
  // garbage collection): nil for a resource without NUMA-tagged devices, the
  // hints regenerated from the devices already allocated to the container,
  // or the hints of the free and reusable devices (empty when too few).
  topology::ProviderHints GetTopologyHints(const pod::Pod& pod,
                                           const pod::Container& container) override = 0;
  // The same for the whole pod (pod::PodLimits), from the pod's allocated
  // devices or the free ones; reusable devices play no part.
  topology::ProviderHints GetPodTopologyHints(const pod::Pod& pod) override = 0;

  // ---- Device health in pod status (KEP-4680, resource_health.h) ----

  // UpdateAllocatedResourcesStatus: fills the allocatedResourcesStatus of
  // the pod's (regular) container statuses from the devices they hold.
  virtual void UpdateAllocatedResourcesStatus(const std::string& pod_uid,
                                              std::vector<ContainerResourceStatus>* statuses) = 0;
  // The pods to resync, queued by ListAndWatch updates while the gate is on.
  virtual DeviceUpdateChannel& Updates() = 0;
};

std::unique_ptr<Manager> NewManager(ManagerOptions opts);

}  // namespace devmgr::manager

#endif  // DEVMGR_MANAGER_MANAGER_H_
