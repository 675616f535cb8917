// What the kubelet's PodResources v1 server does differently per version and
// feature gate (pkg/kubelet/apis/podresources server_v1.go).
#ifndef DEVMGR_PODRESOURCES_OPTIONS_H_
#define DEVMGR_PODRESOURCES_OPTIONS_H_

#include <string>

#include "absl/status/status.h"
#include "kubelet/profile.h"

namespace devmgr::podresources {

inline constexpr const char* kGetGate = kGateKubeletPodResourcesGet;
inline constexpr const char* kListActivePodsGate = kGateKubeletPodResourcesListUseActivePods;
inline constexpr const char* kSidecarGate = kGateSidecarContainers;
inline constexpr const char* kDynamicResourcesGate = kGateKubeletPodResourcesDynamicResources;

// The kubelet's socket name under <root-dir>/pod-resources.
inline constexpr char kSocketName[] = "kubelet.sock";

struct Options {
  // KubeletPodResourcesGet: alpha (default off) 1.27-1.33, beta (on) 1.34+.
  // Off: Get fails with "PodResources API Get method disabled", and the
  // kubelet does not even register the Get metrics.
  bool get_enabled = false;
  // KubeletPodResourcesListUseActivePods: off before 1.34 (List returns
  // every pod the pod manager knows, terminated ones included, until they
  // are deleted), on (deprecated gate) in 1.34+: active pods only.
  bool list_active_pods_only = false;
  // SidecarContainers (beta, on since 1.29): restartable init containers
  // are listed before the regular ones.
  bool sidecar_containers = true;
  // KubeletPodResourcesDynamicResources: alpha (default off) 1.27-1.33, beta
  // (on) 1.34-1.35, GA (locked on) 1.36+. On: List and Get give each
  // container its DRA claims (dynamic_resources, dynamic_resources.h); off:
  // the field stays empty. GetAllocatableResources never lists DRA devices.
  bool dynamic_resources = false;
};

// The gates of a kubelet version (profile.gates: its defaults and any
// --feature-gates applied to it).
Options OptionsForProfile(const Profile& profile);

}  // namespace devmgr::podresources

#endif  // DEVMGR_PODRESOURCES_OPTIONS_H_
