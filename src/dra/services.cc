#include "dra/services.h"

#include <algorithm>
#include <cassert>

#include "common/go_format.h"
#include "fmt/format.h"

namespace devmgr::dra {

std::string_view ServiceName(DraService service) {
  return service == DraService::kV1 ? kV1DRAPlugin : kV1beta1DRAPlugin;
}

std::vector<std::string> KubeletServices(const Profile& profile) {
  assert(profile.minor >= kOldestDraMinor);
  // 1.34-1.37 support the same two (docs/profiles.md, "DRA": "Service picked
  // from the registration's list"); v1alpha4 is gone in 1.34.
  return {kV1DRAPlugin, kV1beta1DRAPlugin};
}

// Up to 1.33 the kubelet walked its own list instead (v1beta1, v1alpha4);
// those profiles are not emulated here (kOldestDraMinor).
absl::StatusOr<DraService> ChooseService(const Profile& profile, const std::string& driver,
                                         const std::string& endpoint,
                                         const std::vector<std::string>& versions) {
  const std::string prefix = fmt::format(
      "invalid supported gRPC versions of DRA driver plugin {} at endpoint {}: ", driver, endpoint);
  if (versions.empty()) {
    return absl::InvalidArgumentError(
        prefix + "empty list of supported gRPC services (aka supported versions)");
  }
  const std::vector<std::string> supported = KubeletServices(profile);
  for (const std::string& v : versions) {
    if (std::find(supported.begin(), supported.end(), v) == supported.end()) continue;
    return v == kV1DRAPlugin ? DraService::kV1 : DraService::kV1beta1;
  }
  return absl::InvalidArgumentError(
      prefix + fmt::format("none of services supported by the plugin ({}) are supported by the "
                           "kubelet ({})",
                           GoQuoteList(versions), GoQuoteList(supported)));
}

}  // namespace devmgr::dra
