// Kubelet behaviour profiles: one per kubelet minor version that devmgr
// emulates, each a set of switches for the behaviours that differ between
// versions (shared/kubelet-device-manager.md section 0).
#ifndef DEVMGR_COMMON_PROFILE_H_
#define DEVMGR_COMMON_PROFILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace devmgr {

struct Profile {
  // "1.30", "1.31", "1.32", "1.33" or "1.34+".
  std::string name;
  int minor = 32;

  // 1.30 only: a checkpoint that fails to parse as V2 is retried as V1
  // (pre-1.20, flat DeviceIDs), its devices landing on NUMA node 0.
  bool v1_checkpoint_fallback = false;
  // 1.30 and 1.31: the pod being admitted counts as active in the garbage
  // collection of UpdateAllocatedDevices.
  bool pending_admission_pod_active = false;
  // 1.33+: CleanupPluginDirectory removes only unix sockets; before, it
  // removes every non-directory entry except the checkpoint.
  bool cleanup_sockets_only = false;
  // 1.34+: clients are tracked per socket path, fixing kubernetes#121994
  // (the end of an old plugin's stream disconnects the new plugin). Before,
  // they are tracked by resource name and the bug is reproduced.
  bool clients_per_socket = false;
  // 1.32+: the registration server reports its health ("device-plugin").
  bool registration_healthz = false;
  // 1.30: CDI devices are passed on only while the DevicePluginCDIDevices
  // gate is on (beta, default on); 1.31+ always.
  bool cdi_feature_gate = false;
  // 1.31+: the topology manager accepts max-allowable-numa-nodes.
  bool max_allowable_numa_nodes_option = false;
  // 1.32+: prefer-closest-numa-nodes is GA (needs no beta gate).
  bool prefer_closest_numa_ga = false;
  // 1.34+: the device plugin API's Go types come from protoc-gen-go, whose
  // unmarshal rejects invalid UTF-8 in proto3 string fields (ListAndWatch
  // and other responses, Register requests); before, gogo accepts any bytes.
  bool validates_utf8 = false;
  // 1.36+ (kubernetes#138244): the device manager enumerates topology hints
  // only over the NUMA nodes that hold a device of the resource (any health,
  // allocated or not; ids cAdvisor does not know are dropped), falling back
  // to every NUMA node when none does. Before, over every NUMA node, so
  // masks with device-less nodes were hints too.
  bool topology_hints_device_numa_only = false;
};

// The default profile, 1.32.
Profile DefaultProfile();

// Parses "1.30", "v1.31", "1.32.4", "1.34+", "1.35", ... Versions below 1.30
// are rejected; 1.34 and later map to the "1.34+" profile.
absl::StatusOr<Profile> ProfileForVersion(std::string_view version);

// The names accepted by ProfileForVersion, for --help texts.
std::vector<std::string> ProfileNames();

}  // namespace devmgr

#endif  // DEVMGR_COMMON_PROFILE_H_
