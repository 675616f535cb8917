#include "kubelet/feature_gates.h"

#include "fmt/format.h"

namespace devmgr {
namespace {

constexpr GateState Alpha(bool on = false) { return {"ALPHA", on, false}; }
constexpr GateState Beta(bool on = true) { return {"BETA", on, false}; }
constexpr GateState GA() { return {"GA", true, true}; }
constexpr GateState Deprecated(bool on = true) { return {"DEPRECATED", on, false}; }

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

const GateSpec* Find(std::string_view name) {
  for (const GateSpec& g : FeatureGateTable()) {
    if (name == g.name) return &g;
  }
  return nullptr;
}

}  // namespace

const std::vector<GateSpec>& FeatureGateTable() {
  static const std::vector<GateSpec> table = {
      {kGateDevicePluginCDIDevices,
       {{28, Beta()}, {31, GA()}},
       34,
       "beta 1.29-1.30, GA 1.31 (KEP-4009), removed 1.34"},
      {kGateKubeletPodResourcesGet,
       {{27, Alpha()}, {34, Beta()}, {36, GA()}},
       0,
       "beta 1.34 (#132940), GA 1.36 (#136728)"},
      {kGateKubeletPodResourcesDynamicResources,
       {{27, Alpha()}, {34, Beta()}, {36, GA()}},
       0,
       "beta 1.34 (#132940), GA 1.36 (#136728)"},
      // Added (deprecated, default on) by #132028 in 1.34 as the way back to
      // the old List. No 1.30-1.33 release has it (absent from
      // pkg/features/kube_features.go of k8s.io/kubernetes v1.30.14, v1.31.14,
      // v1.32.13, v1.33.13), so those versions refuse it as unknown.
      {kGateKubeletPodResourcesListUseActivePods,
       {{34, Deprecated()}},
       0,
       "#132028 (1.34; added deprecated, default on: the release tables of 1.34.4-1.37.2)"},
      {kGateSidecarContainers,
       {{29, Beta()}, {33, GA()}},
       37,
       "beta 1.29, GA 1.33 (KEP-753), removed in 1.37 (absent from the 1.37.2 gate table)"},
      {kGateResourceHealthStatus,
       {{31, Alpha()}, {36, Beta()}},
       0,
       "alpha 1.31, beta 1.36 (enhancements#5689)"},
      {kGateResourceHealthStatusMessage,
       {{36, Beta()}},
       0,
       "beta 1.36, on (kube_features.go v1.36.3, v1.37.2); DRA health messages in pod status"},
      {kGateDRAExtendedResource,
       {{34, Alpha()}, {36, Beta()}, {37, GA()}},
       0,
       "alpha 1.34, beta 1.36 (#135048), GA 1.37 (#138488)"},
  };
  return table;
}

std::optional<GateState> GateAt(std::string_view name, int minor) {
  const GateSpec* g = Find(name);
  if (g == nullptr) return std::nullopt;
  if (g->removed_in != 0 && minor >= g->removed_in) return std::nullopt;
  std::optional<GateState> out;
  for (const auto& [from, st] : g->since) {
    if (minor >= from) out = st;
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<std::string, bool>>> ParseFeatureGateSpec(
    const std::string& spec) {
  std::vector<std::pair<std::string, bool>> out;
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
    bool b = false;
    if (!ParseGoBool(value, &b)) {
      return absl::InvalidArgumentError(fmt::format(
          "invalid value of {}={}, err: strconv.ParseBool: parsing \"{}\": invalid syntax", key,
          value, value));
    }
    out.emplace_back(key, b);
  }
  return out;
}

absl::Status ValidateFeatureGateSpec(const std::string& spec) {
  absl::StatusOr<std::vector<std::pair<std::string, bool>>> kv = ParseFeatureGateSpec(spec);
  if (!kv.ok()) return kv.status();
  for (const auto& [k, v] : *kv) {
    if (Find(k) == nullptr) {
      return absl::InvalidArgumentError(fmt::format("unrecognized feature gate: {}", k));
    }
  }
  return absl::OkStatus();
}

FeatureGates::FeatureGates(int minor) : minor_(minor) {
  for (const GateSpec& g : FeatureGateTable()) {
    if (std::optional<GateState> st = GateAt(g.name, minor)) values_[g.name] = st->default_value;
  }
}

bool FeatureGates::Enabled(std::string_view name) const {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  const GateSpec* g = Find(name);
  // Removed after GA: the behaviour stays, unconditionally.
  return g != nullptr && g->removed_in != 0 && minor_ >= g->removed_in;
}

absl::Status FeatureGates::Set(const std::string& spec) {
  absl::StatusOr<std::vector<std::pair<std::string, bool>>> kv = ParseFeatureGateSpec(spec);
  if (!kv.ok()) return kv.status();
  std::map<std::string, bool, std::less<>> values = values_;
  std::map<std::string, bool, std::less<>> overrides = overrides_;
  for (const auto& [k, v] : *kv) {
    std::optional<GateState> st = GateAt(k, minor_);
    if (!st.has_value()) {
      return absl::InvalidArgumentError(fmt::format("unrecognized feature gate: {}", k));
    }
    if (st->locked && v != st->default_value) {
      return absl::InvalidArgumentError(fmt::format(
          "cannot set feature gate {} to {}, feature is locked to {}", k, v, st->default_value));
    }
    values[k] = v;
    overrides[k] = v;
  }
  values_ = std::move(values);
  overrides_ = std::move(overrides);
  return absl::OkStatus();
}

std::string FeatureGates::Overrides() const {
  std::string out;
  for (const auto& [k, v] : overrides_) {
    if (!out.empty()) out += ",";
    out += fmt::format("{}={}", k, v);
  }
  return out;
}

}  // namespace devmgr
