// Kubelet behaviour profiles: one per kubelet minor version that devmgr
// emulates (1.30 to 1.37), each a set of switches for the behaviours that
// differ between versions, plus the version's feature gates.
// docs/profiles.md has the table with sources.
#ifndef DEVMGR_COMMON_PROFILE_H_
#define DEVMGR_COMMON_PROFILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kubelet/feature_gates.h"

namespace devmgr {

inline constexpr int kOldestMinor = 30;
inline constexpr int kNewestMinor = 37;
// The default profile (docs/profiles.md says why).
inline constexpr int kDefaultMinor = 36;

struct Profile {
  // "1.30" ... "1.37".
  std::string name;
  int minor = kDefaultMinor;
  // The patch version asked for (0 when none was given).
  int patch = 0;
  // A notice for the user when the version asked for is not exactly a
  // profile: the deprecated "1.34+" alias, or a version newer than the
  // newest profile. Empty otherwise.
  std::string notice;

  // The version's feature gates (defaults, then --feature-gates).
  FeatureGates gates{kDefaultMinor};

  // 1.30 only: a checkpoint that fails to parse as V2 is retried as V1
  // (pre-1.20, flat DeviceIDs), its devices landing on NUMA node 0.
  bool v1_checkpoint_fallback = false;
  // 1.30 and 1.31: the pod being admitted counts as active in the garbage
  // collection of UpdateAllocatedDevices.
  bool pending_admission_pod_active = false;
  // 1.33+: CleanupPluginDirectory removes only unix sockets; before, it
  // removes every non-directory entry except the checkpoint.
  bool cleanup_sockets_only = false;
  // 1.37+ (kubernetes PR #135437, fixing #121994): endpoints are kept per
  // (resource, socket path). Several plugins of one resource are connected
  // at once, the newest is the primary; the end of one stream disconnects
  // only its own endpoint; a second Register on a connected (resource,
  // socket) pair fails with "device plugin already connected: <path>".
  // Before (1.30-1.36) clients are tracked by resource name and the end of
  // an old plugin's stream disconnects the new plugin.
  bool endpoints_per_socket = false;
  // 1.32+: the registration server reports its health ("device-plugin").
  bool registration_healthz = false;
  // 1.35+, 1.34.3+, 1.33.7+ and 1.32.11+ (#135153, backports #135207,
  // #135208, #135209): the health check passes before the server has
  // started; before, it fails until Serve begins.
  bool healthz_passes_before_start = false;
  // 1.36+ (#133335): the plugin watcher deregisters a plugin whose handler
  // registration or NotifyRegistrationStatus failed and retries it with
  // exponential backoff; before, such a plugin stayed registered.
  bool watcher_failure_deregisters = false;
  // 1.30-1.34: GetCapacity logs "Unexpected: unhealthyDevices and endpoints
  // became out of sync" when a stopped endpoint's grace period expires
  // (#133702); fixed by #133724 (1.35).
  bool capacity_out_of_sync_log = false;
  // 1.36+ (#138244): device topology hints are enumerated only over NUMA
  // nodes that hold devices of the resource. Consumed by topology hints.
  bool topology_hints_device_numa_only = false;
  // 1.37+ (#140323): a health change is routed to the pod by (resource,
  // device ID) rather than by device ID alone.
  bool health_update_per_resource = false;
  // 1.30: CDI devices are passed on only while the DevicePluginCDIDevices
  // gate is on (beta, default on); 1.31+ always.
  bool cdi_feature_gate = false;
  // 1.31+: the topology manager accepts max-allowable-numa-nodes (beta;
  // GA from 1.35, #134614).
  bool max_allowable_numa_nodes_option = false;
  bool max_allowable_numa_nodes_ga = false;
  // 1.32+: prefer-closest-numa-nodes is GA (needs no beta gate).
  bool prefer_closest_numa_ga = false;
  // 1.34+: the device plugin API's Go types come from protoc-gen-go, whose
  // unmarshal rejects invalid UTF-8 in proto3 string fields (ListAndWatch
  // and other responses, Register requests); before, gogo accepts any bytes.
  bool validates_utf8 = false;
  // 1.35+ (#133026): the DRA plugin API's Go types come from protoc-gen-go
  // (gogo before), so a NodePrepareResources/NodeUnprepareResources response
  // with invalid UTF-8 in a `string` field fails to unmarshal; 1.34 accepts
  // any bytes there.
  bool dra_validates_utf8 = false;
  // 1.37+ (#138738): PodResources reports pod-level cpu_ids and memory.
  bool pod_resources_pod_level_fields = false;
};

// The default profile (kDefaultMinor).
Profile DefaultProfile();
// The profile of kubelet 1.<minor> (kOldestMinor..kNewestMinor).
Profile ProfileForMinor(int minor);

// Parses "1.30", "v1.31", "1.32.4", "1.35", ... A version below 1.30 is
// rejected; one above the newest profile selects the newest, with a
// notice. "1.34+" is a deprecated alias of "1.34" (with a notice).
absl::StatusOr<Profile> ProfileForVersion(std::string_view version);

// A version list as `--kubelet-version` and scenarios take it: "all", or
// comma-separated entries, each a version ("1.33") or an inclusive range
// ("1.34-1.36"). Returns profile names, ascending and without duplicates.
absl::StatusOr<std::vector<std::string>> ExpandVersionList(std::string_view spec);

// The names of all profiles, oldest first.
std::vector<std::string> ProfileNames();

// "1.30, 1.31, ..., 1.37": for --help and error texts.
std::string ProfileNameList();

}  // namespace devmgr

#endif  // DEVMGR_COMMON_PROFILE_H_
