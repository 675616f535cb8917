#include "common/profile.h"

#include <charconv>

#include "fmt/format.h"

namespace devmgr {
namespace {

Profile Make(int minor) {
  Profile p;
  p.minor = minor;
  p.name = minor >= 34 ? "1.34+" : fmt::format("1.{}", minor);
  p.v1_checkpoint_fallback = minor == 30;
  p.pending_admission_pod_active = minor <= 31;
  p.cleanup_sockets_only = minor >= 33;
  p.clients_per_socket = minor >= 34;
  p.registration_healthz = minor >= 32;
  p.cdi_feature_gate = minor == 30;
  p.max_allowable_numa_nodes_option = minor >= 31;
  p.prefer_closest_numa_ga = minor >= 32;
  p.validates_utf8 = minor >= 34;
  p.topology_hints_device_numa_only = minor >= 36;
  return p;
}

}  // namespace

Profile DefaultProfile() { return Make(32); }

std::vector<std::string> ProfileNames() {
  return {"1.30", "1.31", "1.32", "1.33", "1.34+"};
}

absl::StatusOr<Profile> ProfileForVersion(std::string_view version) {
  std::string_view v = version;
  if (!v.empty() && v.front() == 'v') v.remove_prefix(1);
  if (!v.empty() && v.back() == '+') v.remove_suffix(1);
  // MAJOR.MINOR[.PATCH]
  int major = 0;
  int minor = 0;
  int patch = 0;
  const char* p = v.data();
  const char* end = v.data() + v.size();
  bool ok = false;
  auto r = std::from_chars(p, end, major);
  if (r.ec == std::errc() && r.ptr != end && *r.ptr == '.') {
    r = std::from_chars(r.ptr + 1, end, minor);
    if (r.ec == std::errc()) {
      if (r.ptr == end) {
        ok = true;
      } else if (*r.ptr == '.') {
        r = std::from_chars(r.ptr + 1, end, patch);
        ok = r.ec == std::errc() && r.ptr == end;
      }
    }
  }
  if (!ok || major != 1) {
    return absl::InvalidArgumentError(fmt::format(
        "unknown kubelet version \"{}\": want one of 1.30, 1.31, 1.32, 1.33, 1.34+", version));
  }
  if (minor < 30) {
    return absl::InvalidArgumentError(fmt::format(
        "kubelet version {} is older than devmgr emulates (1.30 to 1.34+)", version));
  }
  return Make(minor >= 34 ? 34 : minor);
}

}  // namespace devmgr
