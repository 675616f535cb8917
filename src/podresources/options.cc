#include "podresources/options.h"

#include "fmt/format.h"

namespace devmgr::podresources {
namespace {

// Go's strconv.ParseBool.
bool ParseGoBool(const std::string& v, bool* out) {
  for (const char* t : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (v == t) return *out = true, true;
  }
  for (const char* f : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (v == f) return *out = false, true;
  }
  return false;
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

}  // namespace

Options OptionsForProfile(const Profile& profile) {
  Options o;
  o.get_enabled = profile.minor >= 34;
  o.list_active_pods_only = profile.minor >= 34;
  o.sidecar_containers = true;
  return o;
}

absl::Status ApplyFeatureGates(const std::string& spec, Options* opts) {
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    const std::string item = Trim(spec.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(fmt::format("missing bool value for {}", item));
    }
    const std::string key = Trim(item.substr(0, eq));
    const std::string value = Trim(item.substr(eq + 1));
    bool* target = nullptr;
    if (key == kGetGate) target = &opts->get_enabled;
    if (key == kListActivePodsGate) target = &opts->list_active_pods_only;
    if (key == kSidecarGate) target = &opts->sidecar_containers;
    if (target == nullptr) {
      return absl::InvalidArgumentError(fmt::format("unrecognized feature gate: {}", key));
    }
    bool b = false;
    if (!ParseGoBool(value, &b)) {
      return absl::InvalidArgumentError(fmt::format(
          "invalid value of {}={}, err: strconv.ParseBool: parsing \"{}\": invalid syntax", key,
          value, value));
    }
    *target = b;
  }
  return absl::OkStatus();
}

}  // namespace devmgr::podresources
