// The DRA manager's checkpointed claim state: the kubelet's
// pkg/kubelet/cm/dra/state types (ClaimInfoState, DriverState, Device) as
// plain data that keeps Go's nil-vs-empty distinction (json.Marshal writes
// nil as null and empty as [] or {}, and the checksum covers those bytes),
// and the struct layout of each kubelet release.
#ifndef DEVMGR_DRA_STATE_H_
#define DEVMGR_DRA_STATE_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace devmgr::dra {

// The layout of the state structs by kubelet release (checked against
// pkg/kubelet/cm/dra/state/state.go at v1.34.4, v1.35.4, v1.36.3, v1.37.2):
//   1.34:      Device{PoolName, DeviceName, RequestNames, CDIDeviceIDs}
//   1.35/1.36: Device gains ShareID (*types.UID) after DeviceName
//   1.37:      DriverState gains skipNodeOperations (omitempty) after Devices
enum class StateLayout { k134, k135, k137 };

// The layout of kubelet minor version `minor` (1.34 and older: k134; newer
// than 1.37: k137).
StateLayout LayoutForMinor(int minor);
// "1.34", "1.35" (also 1.36) or "1.37".
std::string_view LayoutName(StateLayout layout);

// std::nullopt is Go's nil; an engaged empty value is Go's empty slice/map.
using StringList = std::optional<std::vector<std::string>>;

// Go: state.Device.
struct Device {
  std::string pool_name;
  std::string device_name;
  // Go *types.UID (1.35+): nullopt is nil (written as null).
  std::optional<std::string> share_id;
  StringList request_names;
  StringList cdi_device_ids;

  bool operator==(const Device&) const = default;
};

// Go: state.DriverState.
struct DriverState {
  std::optional<std::vector<Device>> devices;
  // Go []resourceapi.SkipNodeOperation, JSON "skipNodeOperations" with
  // omitempty (1.37+): left out when nil or empty.
  StringList skip_node_operations;

  bool operator==(const DriverState&) const = default;
};

// Go: state.ClaimInfoState.
struct ClaimInfoState {
  std::string claim_uid;
  std::string claim_name;
  std::string namespace_;
  // Go sets.Set[string] (map[string]sets.Empty): written as
  // {"<uid>":{},...} in key order; nullopt is a nil set.
  std::optional<std::set<std::string>> pod_uids;
  // Go map[string]DriverState, keyed by driver name.
  std::optional<std::map<std::string, DriverState>> driver_state;

  bool operator==(const ClaimInfoState&) const = default;
};

// Go: state.ClaimInfoStateList (nullopt is a nil list, written as null).
using ClaimInfoStateList = std::optional<std::vector<ClaimInfoState>>;

// Go: state.CheckpointData, the JSON inside the file's "Data" string.
struct CheckpointData {
  // metav1.TypeMeta, inlined ("kind" and "apiVersion", both omitempty).
  std::string kind;
  std::string api_version;
  ClaimInfoStateList claim_info_state_list;

  bool operator==(const CheckpointData&) const = default;
};

// The values every kubelet release writes (state.CheckpointKind,
// state.CheckpointAPIVersion). Reading checks neither.
inline constexpr char kCheckpointKind[] = "DRACheckpoint";
inline constexpr char kCheckpointAPIVersion[] = "checkpoint.dra.kubelet.k8s.io/v1";
// The file name in the kubelet's root directory (dra.draManagerStateFileName).
inline constexpr char kCheckpointName[] = "dra_manager_state";

// CheckpointData with the kind and API version the kubelet writes.
CheckpointData NewCheckpointData(ClaimInfoStateList list);

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_STATE_H_
