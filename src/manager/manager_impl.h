// ManagerImpl: the device manager proper (the kubelet's devicemanager
// ManagerImpl): endpoints, device sets, podDevices, allocation and the
// checkpoint. The methods live in several files by concept:
//   manager_impl.cc          connect / ListAndWatch / disconnect / capacity / snapshot
//   manager_checkpoint.cc    Start, Stop, readCheckpoint, writeCheckpoint
//   allocation.cc            Allocate, allocateContainerResources, GC
//   devices_to_allocate.cc   devicesToAllocate, callGetPreferredAllocationIfAvailable
//   container_options.cc     GetDeviceRunContainerOptions, PreStartContainer
//   topology_hints.cc        GetTopologyHints, GetPodTopologyHints
//   resource_health.cc       UpdateAllocatedResourcesStatus, the pods-to-resync channel
#ifndef DEVMGR_MANAGER_MANAGER_IMPL_H_
#define DEVMGR_MANAGER_MANAGER_IMPL_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "checkpoint/file_store.h"
#include "checkpoint/incremental_encoder.h"
#include "manager/device_set.h"
#include "manager/device_sets.h"
#include "manager/endpoint.h"
#include "manager/manager.h"
#include "manager/pod_devices.h"

namespace devmgr::manager {

// Thread-safe. One mutex (mu_) guards all state; it is never held across an
// RPC, a file write or a callback. A second mutex (checkpoint_mu_, always
// taken before mu_) serialises checkpoint writes so that the file always
// ends with the latest state.
class ManagerImpl final : public Manager {
 public:
  explicit ManagerImpl(ManagerOptions opts);
  ~ManagerImpl() override;
  ManagerImpl(const ManagerImpl&) = delete;
  ManagerImpl& operator=(const ManagerImpl&) = delete;

  // ClientHandler.
  absl::Status PluginConnected(const std::string& resource_name,
                               std::shared_ptr<PluginClient> client) override;
  void PluginDisconnected(const std::string& resource_name, PluginClient* client) override;
  void PluginListAndWatchReceiver(const std::string& resource_name, PluginClient* client,
                                  const v1beta1::ListAndWatchResponse& resp) override;

  // Manager.
  absl::Status Start(StartOptions opts) override;
  void Stop() override;
  CapacityResult GetCapacity() override;
  std::vector<ResourceStatus> Snapshot() const override;
  void SetChangeCallback(std::function<void()> cb) override;
  absl::Status Allocate(const pod::Pod& pod, const pod::Container& container) override;
  absl::StatusOr<std::optional<RunContainerOptions>> GetDeviceRunContainerOptions(
      const pod::Pod& pod, const pod::Container& container) override;
  void UpdateAllocatedDevices() override;
  std::vector<PodAllocation> Allocations() const override;
  topology::ProviderHints GetTopologyHints(const pod::Pod& pod,
                                           const pod::Container& container) override;
  topology::ProviderHints GetPodTopologyHints(const pod::Pod& pod) override;
  void UpdateAllocatedResourcesStatus(const std::string& pod_uid,
                                      std::vector<ContainerResourceStatus>* statuses) override;
  DeviceUpdateChannel& Updates() override { return updates_; }

  // ---- Test hooks ----
  std::map<std::string, DeviceSet> AllocatedDevicesForTest() const;
  PodDevices PodDevicesForTest() const;
  // The options the endpoint of `resource_name` was registered with.
  std::optional<v1beta1::DevicePluginOptions> EndpointOptionsForTest(
      const std::string& resource_name) const;
  // Writes the checkpoint now (what every trigger of section 8.2 does).
  absl::Status WriteCheckpointForTest() { return WriteCheckpoint(); }

 private:
  struct EndpointInfo {
    std::shared_ptr<Endpoint> e;
    // nullopt for a checkpoint placeholder (the kubelet's nil opts).
    std::optional<v1beta1::DevicePluginOptions> opts;
    // ListAndWatch responses applied from this endpoint's client.
    int64_t lists_applied = 0;
  };

  // ---- manager_checkpoint.cc ----
  // writeCheckpoint: snapshot under mu_, encode and write without it.
  // Returns the kubelet's "failed to write checkpoint file %q: %v".
  absl::Status WriteCheckpoint() ABSL_LOCKS_EXCLUDED(mu_, checkpoint_mu_);
  absl::Status ReadCheckpoint() ABSL_LOCKS_EXCLUDED(mu_);

  // ---- allocation.cc ----
  absl::Status AllocateContainerResources(const pod::Pod& pod, const pod::Container& container,
                                          const std::map<std::string, DeviceSet>& reuse)
      ABSL_LOCKS_EXCLUDED(mu_);
  bool IsDevicePluginResource(const std::string& resource_name) const ABSL_LOCKS_EXCLUDED(mu_);
  bool SourcesReadyLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Calls active_pod_uids() without mu_ held.
  std::vector<std::string> ActivePodUids() const ABSL_LOCKS_EXCLUDED(mu_);
  bool CheckPodActive(const std::string& pod_uid) const ABSL_LOCKS_EXCLUDED(mu_);

  // ---- devices_to_allocate.cc ----
  absl::StatusOr<DeviceSet> DevicesToAllocate(const std::string& pod_uid,
                                              const std::string& container_name,
                                              const std::string& resource_name, int required,
                                              const DeviceSet& reusable) ABSL_LOCKS_EXCLUDED(mu_);
  // REQUIRES: mu_ held. Releases mu_ during the RPC, as the kubelet does.
  absl::StatusOr<DeviceSet> CallGetPreferredAllocationIfAvailableLocked(
      const std::string& pod_uid, const std::string& container_name,
      const std::string& resource_name, const DeviceSet& available, const DeviceSet& must_include,
      int size) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool IsContainerAlreadyRunningLocked(const std::string& pod_uid,
                                       const std::string& container_name) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // ---- topology_hints.cc ----
  // setPodPendingAdmission (1.30/1.31 profiles only).
  void MarkPendingAdmission(const std::string& pod_uid) ABSL_LOCKS_EXCLUDED(mu_);
  // generateDeviceTopologyHints.
  std::vector<topology::TopologyHint> GenerateDeviceTopologyHintsLocked(
      const std::string& resource_name, const DeviceSet& available, const DeviceSet& reusable,
      int request) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // ---- container_options.cc ----
  absl::Status CallPreStartContainerIfNeeded(const std::string& pod_uid,
                                             const std::string& container_name,
                                             const std::string& resource_name)
      ABSL_LOCKS_EXCLUDED(mu_);
  bool CdiEnabled() const;

  void NotifyChange() ABSL_LOCKS_EXCLUDED(mu_, callback_mu_);
  // 1.37 PluginDisconnected for the endpoint at client's socket: true when
  // it was the resource's last endpoint (the caller marks the devices
  // unhealthy); false when unknown or when another endpoint remains (then
  // promoted to primary).
  bool DisconnectPerSocketLocked(const std::string& resource_name, PluginClient* client)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // ---- resource_health.cc ----
  // Queues the pods (non-blocking; logs when the channel is full).
  void SendPodUpdates(const std::set<std::string>& pods) ABSL_LOCKS_EXCLUDED(mu_);

  // Constant after construction.
  const ManagerOptions opts_;
  const Clock* const clock_;
  const topology::TopologyAffinityStore* const affinity_;
  const checkpoint::FileStore store_;

  absl::Mutex checkpoint_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // The checkpoint's renderings kept between writes (manager_checkpoint.cc).
  checkpoint::IncrementalEncoder encoder_ ABSL_GUARDED_BY(checkpoint_mu_);
  mutable absl::Mutex mu_;
  // The primary endpoint of each resource (the kubelet's m.endpoints).
  std::map<std::string, EndpointInfo> endpoints_ ABSL_GUARDED_BY(mu_);
  // 1.37 only: resource -> socket path -> connected endpoint (the kubelet's
  // m.endpointStore); an entry goes when its stream ends.
  std::map<std::string, std::map<std::string, EndpointInfo>> endpoint_store_ ABSL_GUARDED_BY(mu_);
  DeviceSets devices_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, DeviceSet> allocated_devices_ ABSL_GUARDED_BY(mu_);
  PodDevices pod_devices_ ABSL_GUARDED_BY(mu_);
  // podUID -> resource -> devices reusable by the pod's next containers.
  // Only the pod being allocated keeps an entry.
  std::map<std::string, std::map<std::string, DeviceSet>> devices_to_reuse_ ABSL_GUARDED_BY(mu_);
  // 1.30/1.31: the pod being admitted counts as active in GC.
  std::optional<std::string> pending_admission_pod_ ABSL_GUARDED_BY(mu_);
  StartOptions start_opts_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;

  DeviceUpdateChannel updates_;

  absl::Mutex callback_mu_;
  std::function<void()> change_cb_ ABSL_GUARDED_BY(callback_mu_);
};

}  // namespace devmgr::manager

#endif  // DEVMGR_MANAGER_MANAGER_IMPL_H_
