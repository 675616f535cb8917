#include "common/profile.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace devmgr {
namespace {

Profile Make(int minor) {
  Profile p;
  p.minor = minor;
  p.name = minor >= 34 ? "1.34+" : absl::StrCat("1.", minor);
  p.v1_checkpoint_fallback = minor == 30;
  p.pending_admission_pod_active = minor <= 31;
  p.cleanup_sockets_only = minor >= 33;
  p.clients_per_socket = minor >= 34;
  p.registration_healthz = minor >= 32;
  p.cdi_feature_gate = minor == 30;
  p.max_allowable_numa_nodes_option = minor >= 31;
  p.prefer_closest_numa_ga = minor >= 32;
  return p;
}

}  // namespace

Profile DefaultProfile() { return Make(32); }

std::vector<std::string> ProfileNames() {
  return {"1.30", "1.31", "1.32", "1.33", "1.34+"};
}

absl::StatusOr<Profile> ProfileForVersion(std::string_view version) {
  std::string_view v = version;
  absl::ConsumePrefix(&v, "v");
  absl::ConsumeSuffix(&v, "+");
  std::vector<std::string_view> parts = absl::StrSplit(v, '.');
  int major = 0;
  int minor = 0;
  if (parts.size() < 2 || parts.size() > 3 || !absl::SimpleAtoi(parts[0], &major) ||
      !absl::SimpleAtoi(parts[1], &minor) || major != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown kubelet version \"", version, "\": want one of 1.30, 1.31, 1.32, 1.33, 1.34+"));
  }
  if (minor < 30) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kubelet version ", version, " is older than devmgr emulates (1.30 to 1.34+)"));
  }
  return Make(minor >= 34 ? 34 : minor);
}

}  // namespace devmgr
