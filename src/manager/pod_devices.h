// PodDevices: which devices each (pod, container, resource) holds and the
// plugin's Allocate response for it (the kubelet's podDevices), with the
// conversions to and from checkpoint entries.
// As devicemanager pod_devices.go.
#ifndef DEVMGR_MANAGER_POD_DEVICES_H_
#define DEVMGR_MANAGER_POD_DEVICES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/incremental_encoder.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "manager/device_set.h"
#include "manager/run_container_options.h"

namespace devmgr::manager {

// One (pod, container, resource) allocation.
struct DeviceAllocateInfo {
  DevicesPerNUMA device_ids;
  // nullopt is Go's nil *ContainerAllocateResponse (never produced by
  // allocation or a checkpoint read; such entries are not checkpointed).
  std::optional<v1beta1::ContainerAllocateResponse> alloc_resp;
  // alloc_resp marshalled once, when inserted (the message never changes
  // after): what every checkpoint write puts in the entry's AllocResp, as
  // the kubelet's toCheckpointData marshals it at each write.
  std::string alloc_resp_bytes;
  bool marshal_failed = false;
  // Set by every Insert from one counter for the whole process, so that a
  // version never stands for two different allocations (the checkpoint
  // encoder keeps renderings by it).
  uint64_t version = 0;
};

// resource -> allocation, for one container.
using ResourceAllocations = std::map<std::string, DeviceAllocateInfo>;

// Thread-compatible: the manager guards it with its mutex. (The kubelet's
// podDevices has its own RW lock; one lock is enough here because the
// manager never calls out while holding it.)
// Maps are ordered by key: one instance of Go's unspecified map order.
class PodDevices {
 public:
  // UIDs of the pods that have an entry.
  std::vector<std::string> Pods() const;
  size_t size() const { return devs_.size(); }
  bool HasPod(const std::string& pod_uid) const { return devs_.count(pod_uid) != 0; }

  // Replaces the entry for (pod, container, resource).
  void Insert(const std::string& pod_uid, const std::string& container_name,
              const std::string& resource_name, DevicesPerNUMA device_ids,
              std::optional<v1beta1::ContainerAllocateResponse> alloc_resp);
  // Deletes every entry of the given pods.
  void Delete(const std::vector<std::string>& pod_uids);

  // Union over the pod's containers of the devices of `resource_name`.
  DeviceSet PodDeviceSet(const std::string& pod_uid, const std::string& resource_name) const;
  // nullopt when there is no entry for the triple (Go's nil set); an entry
  // with no device IDs gives an empty set.
  std::optional<DeviceSet> ContainerDevices(const std::string& pod_uid,
                                            const std::string& container_name,
                                            const std::string& resource_name) const;
  // Adds / removes the container's devices, per resource, to / from
  // `allocated` (the devicesToReuse bookkeeping of Allocate).
  void AddContainerAllocatedResources(const std::string& pod_uid, const std::string& container_name,
                                      std::map<std::string, DeviceSet>* allocated) const;
  void RemoveContainerAllocatedResources(const std::string& pod_uid,
                                         const std::string& container_name,
                                         std::map<std::string, DeviceSet>* allocated) const;

  // resource -> in-use devices. Every resource present in any entry gets a
  // key; only entries with an Allocate response contribute IDs.
  std::map<std::string, DeviceSet> Devices() const;

  // Checkpoint entries by reference with their versions, for
  // IncrementalEncoder::SetEntryRefs: one per triple with an Allocate
  // response (others are skipped and logged); `nil` (JSON null) when there
  // are none. The references are valid until the next Insert or Delete.
  std::vector<checkpoint::IncrementalEncoder::EntryRef> CheckpointEntryRefs(bool* nil) const;
  // The same entries copied; nullopt (JSON null) when there are none.
  std::optional<std::vector<checkpoint::PodDevicesEntry>> ToCheckpointData() const;
  // Inserts every entry whose AllocResp decodes (others are logged and
  // skipped). A null AllocResp decodes to an empty response, as in Go.
  void FromCheckpointData(const std::vector<checkpoint::PodDevicesEntry>& entries);

  // The merged runtime options of the container's resources; nullopt when
  // the pod or the container has no entry.
  std::optional<RunContainerOptions> DeviceRunContainerOptions(const std::string& pod_uid,
                                                               const std::string& container_name,
                                                               bool cdi_enabled,
                                                               bool log_conflicts = true) const;

  // getContainerDevices: resource -> device ID -> NUMA node ids the device
  // is recorded under (empty when it is only under -1, i.e. no topology).
  // Resources with no devices are left out.
  std::map<std::string, std::map<std::string, std::vector<int64_t>>> GetContainerDevices(
      const std::string& pod_uid, const std::string& container_name) const;

  // The raw entries: pod -> container -> resource -> allocation.
  const std::map<std::string, std::map<std::string, ResourceAllocations>>& entries() const {
    return devs_;
  }

 private:
  std::map<std::string, std::map<std::string, ResourceAllocations>> devs_;
};

}  // namespace devmgr::manager

#endif  // DEVMGR_MANAGER_POD_DEVICES_H_
