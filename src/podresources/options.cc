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

}  // namespace devmgr::podresources
