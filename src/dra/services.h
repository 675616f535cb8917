// The DRAPlugin gRPC services a DRA driver can advertise at registration and
// the kubelet's choice among them. A DRA driver's PluginInfo.supported_versions
// lists gRPC services written "<short package>.<Service>" ("v1.DRAPlugin"), not
// API versions; the registration string is not the gRPC service name
// (/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/...).
#ifndef DEVMGR_DRA_SERVICES_H_
#define DEVMGR_DRA_SERVICES_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kubelet/profile.h"

namespace devmgr::dra {

// The DRAPlugin services devmgr can call.
enum class DraService { kV1, kV1beta1 };

inline constexpr char kV1DRAPlugin[] = "v1.DRAPlugin";
inline constexpr char kV1beta1DRAPlugin[] = "v1beta1.DRAPlugin";

// "v1.DRAPlugin" or "v1beta1.DRAPlugin".
std::string_view ServiceName(DraService service);

// The oldest kubelet minor version whose DRA registration devmgr emulates.
inline constexpr int kOldestDraMinor = 34;

// The services the kubelet of `profile` supports, in its own order:
// ["v1.DRAPlugin", "v1beta1.DRAPlugin"] for 1.34-1.37.
// REQUIRES: profile.minor >= kOldestDraMinor.
std::vector<std::string> KubeletServices(const Profile& profile);

// The kubelet's choice (1.34+): the first entry of `versions` (the plugin's
// list, in its order) that the kubelet supports. Fails (InvalidArgument) as
// the kubelet's ValidatePlugin does:
//   invalid supported gRPC versions of DRA driver plugin <driver> at endpoint
//   <endpoint>: empty list of supported gRPC services (aka supported versions)
// and, when no entry is supported,
//   ...: none of services supported by the plugin (["v1alpha4.DRAPlugin"]) are
//   supported by the kubelet (["v1.DRAPlugin" "v1beta1.DRAPlugin"])
absl::StatusOr<DraService> ChooseService(const Profile& profile, const std::string& driver,
                                         const std::string& endpoint,
                                         const std::vector<std::string>& versions);

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_SERVICES_H_
