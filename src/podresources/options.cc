#include "podresources/options.h"

#include "kubelet/feature_gates.h"

namespace devmgr::podresources {

Options OptionsForProfile(const Profile& profile) {
  Options o;
  o.get_enabled = profile.gates.Enabled(kGetGate);
  o.list_active_pods_only = profile.gates.Enabled(kListActivePodsGate);
  o.sidecar_containers = profile.gates.Enabled(kSidecarGate);
  o.dynamic_resources = profile.gates.Enabled(kDynamicResourcesGate);
  return o;
}

absl::Status ApplyFeatureGates(const std::string& spec, Options* opts) {
  if (absl::Status s = ValidateFeatureGateSpec(spec); !s.ok()) return s;
  const absl::StatusOr<std::vector<std::pair<std::string, bool>>> kv = ParseFeatureGateSpec(spec);
  for (const auto& [key, value] : *kv) {
    if (key == kGetGate) opts->get_enabled = value;
    if (key == kListActivePodsGate) opts->list_active_pods_only = value;
    if (key == kSidecarGate) opts->sidecar_containers = value;
    if (key == kDynamicResourcesGate) opts->dynamic_resources = value;
  }
  return absl::OkStatus();
}

}  // namespace devmgr::podresources
