// Kubelet feature gates that change what devmgr emulates: one table, with
// each gate's default, pre-release stage and lock per kubelet minor version,
// and a kubelet `--feature-gates` parser ("A=true,B=false") with
// component-base's error texts. Used by `serve`, `run` (and scenarios'
// node.feature_gates) and `conformance`. docs/profiles.md lists the table.
#ifndef DEVMGR_COMMON_FEATURE_GATES_H_
#define DEVMGR_COMMON_FEATURE_GATES_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace devmgr {

inline constexpr char kGateDevicePluginCDIDevices[] = "DevicePluginCDIDevices";
inline constexpr char kGateKubeletPodResourcesGet[] = "KubeletPodResourcesGet";
inline constexpr char kGateKubeletPodResourcesDynamicResources[] =
    "KubeletPodResourcesDynamicResources";
inline constexpr char kGateKubeletPodResourcesListUseActivePods[] =
    "KubeletPodResourcesListUseActivePods";
inline constexpr char kGateSidecarContainers[] = "SidecarContainers";
inline constexpr char kGateResourceHealthStatus[] = "ResourceHealthStatus";
inline constexpr char kGateResourceHealthStatusMessage[] = "ResourceHealthStatusMessage";
inline constexpr char kGateDRAExtendedResource[] = "DRAExtendedResource";

// A gate as a given kubelet minor version has it.
struct GateState {
  const char* stage = "";  // "ALPHA", "BETA", "GA", "DEPRECATED"
  bool default_value = false;
  bool locked = false;  // LockToDefault: setting the other value is an error
};

// One row of the table: the gate's state from `since` on (ascending), and
// the first minor version without the gate (0: still present).
struct GateSpec {
  const char* name;
  std::vector<std::pair<int, GateState>> since;
  int removed_in = 0;
  const char* source;  // PR / KEP numbers, for docs and --help
};

// Every gate devmgr knows, in a stable order.
const std::vector<GateSpec>& FeatureGateTable();

// The state of `name` in kubelet 1.<minor>; nullopt when that version has
// no such gate (not yet added, or removed).
std::optional<GateState> GateAt(std::string_view name, int minor);

// Splits a --feature-gates value into (name, value) pairs, in order.
// Errors: "missing bool value for X", "invalid value of X=Y, err:
// strconv.ParseBool: parsing \"Y\": invalid syntax". Names are not checked.
absl::StatusOr<std::vector<std::pair<std::string, bool>>> ParseFeatureGateSpec(
    const std::string& spec);

// Checks a spec against every version's gates ("unrecognized feature gate:
// X" when no version has X); for parsers that do not know the version yet.
absl::Status ValidateFeatureGateSpec(const std::string& spec);

// The effective gates of one kubelet minor version.
class FeatureGates {
 public:
  FeatureGates() : FeatureGates(32) {}
  explicit FeatureGates(int minor);

  // True when the gate is on. A gate this version does not have is off,
  // except one removed after GA (its behaviour is then always on).
  bool Enabled(std::string_view name) const;
  // Applies a --feature-gates value as the kubelet does: "unrecognized
  // feature gate: X" for a gate this version lacks, "cannot set feature gate
  // X to V, feature is locked to D" for a locked one. On error nothing is
  // changed.
  absl::Status Set(const std::string& spec);
  // The gates set explicitly, "A=true,B=false" (sorted); "" when none.
  std::string Overrides() const;

 private:
  int minor_;
  std::map<std::string, bool, std::less<>> values_;
  std::map<std::string, bool, std::less<>> overrides_;
};

}  // namespace devmgr

#endif  // DEVMGR_COMMON_FEATURE_GATES_H_
