#include "kubelet/profile.h"

#include <algorithm>
#include <charconv>

#include "fmt/format.h"

namespace devmgr {

Profile ProfileForMinor(int minor) {
  minor = std::clamp(minor, kOldestMinor, kNewestMinor);
  Profile p;
  p.minor = minor;
  p.name = fmt::format("1.{}", minor);
  p.gates = FeatureGates(minor);
  p.v1_checkpoint_fallback = minor == 30;
  p.pending_admission_pod_active = minor <= 31;
  p.cleanup_sockets_only = minor >= 33;
  p.endpoints_per_socket = minor >= 37;
  p.registration_healthz = minor >= 32;
  p.healthz_passes_before_start = minor >= 35;
  p.watcher_failure_deregisters = minor >= 36;
  p.capacity_out_of_sync_log = minor <= 34;
  p.topology_hints_device_numa_only = minor >= 36;
  p.dra_validates_utf8 = minor >= 35;
  p.health_update_per_resource = minor >= 37;
  p.cdi_feature_gate = minor == 30;
  p.max_allowable_numa_nodes_option = minor >= 31;
  p.max_allowable_numa_nodes_ga = minor >= 35;
  p.prefer_closest_numa_ga = minor >= 32;
  p.validates_utf8 = minor >= 34;
  p.pod_resources_pod_level_fields = minor >= 37;
  return p;
}

Profile DefaultProfile() { return ProfileForMinor(kDefaultMinor); }

std::vector<std::string> ProfileNames() {
  std::vector<std::string> out;
  for (int m = kOldestMinor; m <= kNewestMinor; ++m) out.push_back(fmt::format("1.{}", m));
  return out;
}

std::string ProfileNameList() {
  std::string out;
  for (const std::string& n : ProfileNames()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

namespace {

// MAJOR.MINOR[.PATCH] with an optional leading "v"; false when malformed.
bool ParseVersion(std::string_view v, int* major, int* minor, int* patch) {
  if (!v.empty() && v.front() == 'v') v.remove_prefix(1);
  const char* end = v.data() + v.size();
  *patch = 0;
  auto r = std::from_chars(v.data(), end, *major);
  if (r.ec != std::errc() || r.ptr == end || *r.ptr != '.') return false;
  r = std::from_chars(r.ptr + 1, end, *minor);
  if (r.ec != std::errc()) return false;
  if (r.ptr == end) return true;
  if (*r.ptr != '.') return false;
  r = std::from_chars(r.ptr + 1, end, *patch);
  return r.ec == std::errc() && r.ptr == end;
}

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

absl::StatusOr<Profile> ProfileForVersion(std::string_view version) {
  if (version == "1.34+" || version == "v1.34+") {
    Profile p = ProfileForMinor(34);
    p.notice = fmt::format(
        "kubelet version \"{}\" is deprecated: it selects the 1.34 profile (1.34 to 1.36 keep "
        "kubernetes#121994, fixed in 1.37); name a minor version ({}) or a list such as "
        "\"1.34-1.37\"",
        version, ProfileNameList());
    return p;
  }
  int major = 0, minor = 0, patch = 0;
  if (!ParseVersion(version, &major, &minor, &patch) || major != 1) {
    return absl::InvalidArgumentError(
        fmt::format("unknown kubelet version \"{}\": want one of {} (or v1.MINOR.PATCH)", version,
                    ProfileNameList()));
  }
  if (minor < kOldestMinor) {
    return absl::InvalidArgumentError(
        fmt::format("kubelet version {} is older than devmgr emulates (1.{} to 1.{})", version,
                    kOldestMinor, kNewestMinor));
  }
  Profile p = ProfileForMinor(minor);
  p.patch = patch;
  // #135153 was cherry-picked to three release branches: #135209 first
  // shipped in 1.32.11, #135208 in 1.33.7 and #135207 in 1.34.3 (their
  // CHANGELOGs; k8s.io/kubernetes v1.32.10, v1.33.6 and v1.34.2 still have the
  // serving flag, v1.32.13, v1.33.13 and v1.34.3 the last serving error:
  // pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go, Check).
  if ((minor == 32 && patch >= 11) || (minor == 33 && patch >= 7) || (minor == 34 && patch >= 3)) {
    p.healthz_passes_before_start = true;
  }
  if (minor > kNewestMinor) {
    p.notice = fmt::format(
        "kubelet version {} is newer than the newest profile; using {} (behaviour changed after "
        "1.{} is not emulated)",
        version, p.name, kNewestMinor);
  }
  return p;
}

absl::StatusOr<std::vector<std::string>> ExpandVersionList(std::string_view spec) {
  std::vector<int> minors;
  std::string_view rest = TrimSpace(spec);
  if (rest == "all") {
    for (int m = kOldestMinor; m <= kNewestMinor; ++m) minors.push_back(m);
  } else {
    if (rest.empty()) return absl::InvalidArgumentError("empty kubelet version list");
    while (true) {
      const size_t comma = rest.find(',');
      const std::string_view item = TrimSpace(rest.substr(0, comma));
      if (item.empty()) {
        return absl::InvalidArgumentError(
            fmt::format("kubelet version list \"{}\": empty entry", spec));
      }
      // A range "A-B" (never a valid single version).
      const size_t dash = item.find('-');
      if (dash != std::string_view::npos) {
        absl::StatusOr<Profile> a = ProfileForVersion(TrimSpace(item.substr(0, dash)));
        if (!a.ok()) return a.status();
        absl::StatusOr<Profile> b = ProfileForVersion(TrimSpace(item.substr(dash + 1)));
        if (!b.ok()) return b.status();
        if (a->minor > b->minor) {
          return absl::InvalidArgumentError(
              fmt::format("kubelet version range \"{}\": {} is after {}", item, a->name, b->name));
        }
        for (int m = a->minor; m <= b->minor; ++m) minors.push_back(m);
      } else {
        absl::StatusOr<Profile> p = ProfileForVersion(item);
        if (!p.ok()) return p.status();
        minors.push_back(p->minor);
      }
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  std::sort(minors.begin(), minors.end());
  minors.erase(std::unique(minors.begin(), minors.end()), minors.end());
  std::vector<std::string> out;
  for (int m : minors) out.push_back(fmt::format("1.{}", m));
  return out;
}

}  // namespace devmgr
