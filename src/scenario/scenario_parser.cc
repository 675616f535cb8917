// The only file of the scenario module that includes yaml-cpp; every YAML
// exception is caught here and turned into "file:line:col: ...".
#include "scenario/scenario_parser.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "common/profile.h"
#include "common/spellcheck.h"
#include "common/status_util.h"
#include "fmt/format.h"
#include "plugin/config.h"
#include "pod/manifest_parser.h"
#include "podresources/options.h"
#include "yaml-cpp/yaml.h"

namespace devmgr::scenario {
namespace {

using Keys = std::vector<std::string>;

const Keys kTopKeys = {"name", "description", "node", "timeouts", "plugins", "steps"};
const Keys kNodeKeys = {"kubelet_version", "kubelet_versions", "dir",        "plugins_registry",
                        "fsync",           "max_recv_msg_size", "numa_nodes", "dial_timeout",
                        "numa_distances",  "topology_manager",  "hint_providers",
                        "feature_gates"};
const Keys kTimeoutKeys = {"step", "wait", "expect"};
const Keys kPluginKeys = {"name",     "command",     "args",        "sample_plugin",
                          "external", "env",         "working_dir", "private_mount",
                          "binds",    "start",       "resource",    "socket",
                          "wait_for_registration",   "call_log",    "control"};
const Keys kStepCommonKeys = {"name", "versions", "timeout", "expect"};
const Keys kStepActions = {
    "admit",         "delete_pod",        "set_phase",         "restart_container",
    "restart_kubelet", "reboot_node",     "start_plugin",      "stop_plugin",
    "kill_plugin",   "pause_plugin",      "resume_plugin",     "restart_plugin",
    "advance_clock", "node_status",       "wait_registration", "wait_devices",
    "set_health",    "control",           "delete_checkpoint", "truncate_checkpoint",
    "corrupt_checkpoint", "write_checkpoint", "run",           "check"};
const StepKind kStepKinds[] = {
    StepKind::kAdmit,          StepKind::kDeletePod,        StepKind::kSetPhase,
    StepKind::kRestartContainer, StepKind::kRestartKubelet, StepKind::kRebootNode,
    StepKind::kStartPlugin,    StepKind::kStopPlugin,       StepKind::kKillPlugin,
    StepKind::kPausePlugin,    StepKind::kResumePlugin,     StepKind::kRestartPlugin,
    StepKind::kAdvanceClock,   StepKind::kNodeStatus,       StepKind::kWaitRegistration,
    StepKind::kWaitDevices,    StepKind::kSetHealth,        StepKind::kControl,
    StepKind::kDeleteCheckpoint, StepKind::kTruncateCheckpoint, StepKind::kCorruptCheckpoint,
    StepKind::kWriteCheckpoint, StepKind::kRun,             StepKind::kCheck};
const Keys kExpectKeys = {"within", "resources",     "pods", "disjoint",
                          "checkpoint", "calls", "pod_resources", "log"};
const Keys kPodResourcesKeys = {"allocatable", "pod_count", "pods", "get"};
const Keys kResourceKeys = {"capacity",      "allocatable",     "healthy",    "unhealthy",
                            "allocated",     "healthy_count",   "unhealthy_count",
                            "registered",    "connected"};
const Keys kPodKeys = {"exists",  "admitted",   "phase",
                       "reason",  "message",    "containers", "topology_hints"};
const Keys kContainerKeys = {"devices",      "envs",          "envs_exact",  "annotations",
                             "annotations_exact", "mounts",   "mounts_exact", "device_specs",
                             "device_specs_exact", "cdi_devices", "cdi_devices_exact",
                             "options",      "running",       "restart_count", "start_error",
                             "numa_affinity", "topology_hints"};
const Keys kDeviceKeys = {"count", "ids", "subset_of", "numa"};
const Keys kCheckpointKeys = {"exists", "valid", "entry_count", "entries", "entries_exact",
                              "registered"};
const Keys kEntryKeys = {"pod", "container", "resource", "devices"};
const Keys kCallsKeys = {"since", "exact", "methods", "sequence", "counts"};
const Keys kMethods = {"GetDevicePluginOptions", "ListAndWatch", "GetPreferredAllocation",
                       "Allocate", "PreStartContainer", "Register", "GetInfo",
                       "NotifyRegistrationStatus"};

bool Contains(const Keys& keys, const std::string& k) {
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string BaseNameNoExt(const std::string& path) {
  const size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  for (const char* ext : {".yaml", ".yml"}) {
    const size_t n = std::strlen(ext);
    if (base.size() > n && base.compare(base.size() - n, n, ext) == 0) {
      base.resize(base.size() - n);
      break;
    }
  }
  return base;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::string cur;
  for (char c : text) {
    if (c == '\n') {
      lines.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  lines.push_back(cur);
  return lines;
}

class Parser {
 public:
  Parser(std::string text, std::string file)
      : text_(std::move(text)), file_(std::move(file)), lines_(SplitLines(text_)) {}

  absl::StatusOr<Scenario> Parse() {
    YAML::Node root;
    try {
      root = YAML::Load(text_);
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(
          fmt::format("{}:{}:{}: {}", file_, e.mark.line + 1, e.mark.column + 1, e.msg));
    }
    Scenario sc;
    sc.file = file_;
    sc.dir = DirName(file_);
    sc.name = BaseNameNoExt(file_);
    if (!root.IsMap()) return Error(root, "a scenario must be a mapping (with steps:)");
    DEVMGR_RETURN_IF_ERROR(CheckKeys(root, kTopKeys, "a scenario"));
    if (root["name"]) DEVMGR_RETURN_IF_ERROR(String(root["name"], "name", &sc.name));
    if (root["description"]) {
      DEVMGR_RETURN_IF_ERROR(String(root["description"], "description", &sc.description));
    }
    if (root["node"]) DEVMGR_RETURN_IF_ERROR(ParseNode(root["node"], &sc.node));
    if (root["timeouts"]) DEVMGR_RETURN_IF_ERROR(ParseTimeouts(root["timeouts"], &sc.timeouts));
    if (root["plugins"]) DEVMGR_RETURN_IF_ERROR(ParsePlugins(root["plugins"], sc));
    if (!root["steps"]) return Error(root, "a scenario needs steps:");
    DEVMGR_RETURN_IF_ERROR(ExpectSeq(root["steps"], "steps"));
    for (const YAML::Node& s : root["steps"]) {
      Step step;
      DEVMGR_RETURN_IF_ERROR(ParseStep(s, sc, &step));
      sc.steps.push_back(std::move(step));
    }
    return sc;
  }

 private:
  // ---- helpers ----

  Location Loc(const YAML::Node& n) const {
    Location l;
    l.file = file_;
    const YAML::Mark m = n.Mark();
    if (!m.is_null()) {
      l.line = m.line + 1;
      l.column = m.column + 1;
    }
    return l;
  }

  absl::Status Error(const YAML::Node& n, const std::string& what) const {
    return absl::InvalidArgumentError(fmt::format("{}: {}", Loc(n).ToString(), what));
  }

  absl::Status CheckKeys(const YAML::Node& n, const Keys& allowed, const std::string& where,
                         const Keys& more = {}) const {
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->first.IsScalar()) return Error(it->first, "keys must be strings");
      const std::string key = it->first.Scalar();
      if (Contains(allowed, key) || Contains(more, key)) continue;
      Keys all = allowed;
      all.insert(all.end(), more.begin(), more.end());
      std::string msg = fmt::format("unknown key '{}' in {}", key, where);
      const std::string guess = SpellCheck(key, all);
      if (!guess.empty()) msg += fmt::format(" (did you mean '{}'?)", guess);
      return Error(it->first, msg);
    }
    return absl::OkStatus();
  }

  absl::Status ExpectMap(const YAML::Node& n, const std::string& where) const {
    if (!n.IsMap()) return Error(n, fmt::format("{} must be a mapping", where));
    return absl::OkStatus();
  }
  absl::Status ExpectSeq(const YAML::Node& n, const std::string& where) const {
    if (!n.IsSequence()) return Error(n, fmt::format("{} must be a list", where));
    return absl::OkStatus();
  }
  // Null, or an empty/non-empty mapping checked against `allowed`.
  absl::Status OptionalMap(const YAML::Node& n, const Keys& allowed,
                           const std::string& where) const {
    if (n.IsNull()) return absl::OkStatus();
    if (!n.IsMap()) return Error(n, fmt::format("{} takes no value or a mapping", where));
    return CheckKeys(n, allowed, where);
  }

  absl::Status String(const YAML::Node& n, const std::string& where, std::string* out) const {
    if (!n.IsScalar()) return Error(n, fmt::format("{} must be a string", where));
    *out = n.Scalar();
    return absl::OkStatus();
  }
  absl::Status NonEmptyString(const YAML::Node& n, const std::string& where,
                              std::string* out) const {
    DEVMGR_RETURN_IF_ERROR(String(n, where, out));
    if (out->empty()) return Error(n, fmt::format("{} must not be empty", where));
    return absl::OkStatus();
  }

  absl::Status Bool(const YAML::Node& n, const std::string& where, bool* out) const {
    if (n.IsScalar() && n.Tag() != "!") {
      const std::string& s = n.Scalar();
      if (s == "true" || s == "True" || s == "TRUE") {
        *out = true;
        return absl::OkStatus();
      }
      if (s == "false" || s == "False" || s == "FALSE") {
        *out = false;
        return absl::OkStatus();
      }
    }
    return Error(n, fmt::format("{} must be true or false", where));
  }
  absl::Status OptBool(const YAML::Node& n, const std::string& where,
                       std::optional<bool>* out) const {
    bool b = false;
    DEVMGR_RETURN_IF_ERROR(Bool(n, where, &b));
    *out = b;
    return absl::OkStatus();
  }

  absl::Status Int(const YAML::Node& n, const std::string& where, int64_t min,
                   int64_t* out) const {
    if (n.IsScalar() && n.Tag() != "!") {
      const std::string& s = n.Scalar();
      size_t used = 0;
      long long v = 0;
      bool ok = !s.empty();
      try {
        v = std::stoll(s, &used, 10);
      } catch (...) {
        ok = false;
      }
      if (ok && used == s.size()) {
        if (v < min) return Error(n, fmt::format("{} must be at least {}", where, min));
        *out = v;
        return absl::OkStatus();
      }
    }
    return Error(n, fmt::format("{} must be an integer", where));
  }
  absl::Status OptInt(const YAML::Node& n, const std::string& where, int64_t min,
                      std::optional<int64_t>* out) const {
    int64_t v = 0;
    DEVMGR_RETURN_IF_ERROR(Int(n, where, min, &v));
    *out = v;
    return absl::OkStatus();
  }

  absl::Status Duration(const YAML::Node& n, const std::string& where,
                        absl::Duration* out) const {
    if (n.IsScalar()) {
      absl::Duration d;
      if (absl::ParseDuration(n.Scalar(), &d) && d >= absl::ZeroDuration()) {
        *out = d;
        return absl::OkStatus();
      }
    }
    return Error(n, fmt::format("{} must be a duration such as 500ms, 2s or 5m1s", where));
  }

  absl::Status StringList(const YAML::Node& n, const std::string& where,
                          std::vector<std::string>* out) const {
    DEVMGR_RETURN_IF_ERROR(ExpectSeq(n, where));
    out->clear();
    for (const YAML::Node& e : n) {
      std::string s;
      DEVMGR_RETURN_IF_ERROR(String(e, where + " entries", &s));
      out->push_back(std::move(s));
    }
    return absl::OkStatus();
  }
  absl::Status OptStringList(const YAML::Node& n, const std::string& where,
                             std::optional<std::vector<std::string>>* out) const {
    std::vector<std::string> v;
    DEVMGR_RETURN_IF_ERROR(StringList(n, where, &v));
    *out = std::move(v);
    return absl::OkStatus();
  }
  absl::Status IntList(const YAML::Node& n, const std::string& where,
                       std::vector<int64_t>* out) const {
    DEVMGR_RETURN_IF_ERROR(ExpectSeq(n, where));
    for (const YAML::Node& e : n) {
      int64_t v = 0;
      DEVMGR_RETURN_IF_ERROR(Int(e, where + " entries", INT64_MIN, &v));
      out->push_back(v);
    }
    return absl::OkStatus();
  }
  absl::Status StringMap(const YAML::Node& n, const std::string& where,
                         std::map<std::string, std::string>* out) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, where));
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string k, v;
      DEVMGR_RETURN_IF_ERROR(String(it->first, where + " keys", &k));
      DEVMGR_RETURN_IF_ERROR(String(it->second, where + " values", &v));
      (*out)[k] = v;
    }
    return absl::OkStatus();
  }

  // A string or {regex: RE}.
  absl::Status Matcher(const YAML::Node& n, const std::string& where,
                       StringMatcher* out) const {
    if (n.IsScalar()) {
      out->value = n.Scalar();
      out->regex = false;
      return absl::OkStatus();
    }
    if (n.IsMap()) {
      DEVMGR_RETURN_IF_ERROR(CheckKeys(n, {"regex"}, where));
      if (!n["regex"]) return Error(n, fmt::format("{} needs regex:", where));
      DEVMGR_RETURN_IF_ERROR(Regex(n["regex"], where + ".regex", &out->value));
      out->regex = true;
      return absl::OkStatus();
    }
    return Error(n, fmt::format("{} must be a string or {{regex: RE}}", where));
  }
  absl::Status OptMatcher(const YAML::Node& n, const std::string& where,
                          std::optional<StringMatcher>* out) const {
    StringMatcher m;
    DEVMGR_RETURN_IF_ERROR(Matcher(n, where, &m));
    *out = m;
    return absl::OkStatus();
  }
  absl::Status Regex(const YAML::Node& n, const std::string& where, std::string* out) const {
    DEVMGR_RETURN_IF_ERROR(String(n, where, out));
    try {
      std::regex re(*out, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Error(n, fmt::format("{}: invalid regular expression: {}", where, e.what()));
    }
    return absl::OkStatus();
  }

  absl::Status Version(const YAML::Node& n, const std::string& where, std::string* out) const {
    std::string v;
    DEVMGR_RETURN_IF_ERROR(String(n, where, &v));
    absl::StatusOr<Profile> p = ProfileForVersion(v);
    if (!p.ok()) return Error(n, fmt::format("{}: {}", where, std::string(std::string(p.status().message()))));
    *out = p->name;
    return absl::OkStatus();
  }
  absl::Status Versions(const YAML::Node& n, const std::string& where,
                        std::vector<std::string>* out) const {
    if (n.IsScalar()) {
      std::string v;
      DEVMGR_RETURN_IF_ERROR(Version(n, where, &v));
      out->push_back(v);
      return absl::OkStatus();
    }
    DEVMGR_RETURN_IF_ERROR(ExpectSeq(n, where));
    for (const YAML::Node& e : n) {
      std::string v;
      DEVMGR_RETURN_IF_ERROR(Version(e, where, &v));
      out->push_back(v);
    }
    return absl::OkStatus();
  }

  // The text of an inline block `value` (the value of key `key`), with every
  // other line blanked so that positions in it are positions in the file.
  std::string BlockText(const YAML::Node& key, const YAML::Node& value) const {
    const int vline = value.Mark().line;
    const int vcol = value.Mark().column;
    const int kcol = key.Mark().column;
    std::string out;
    for (int i = 0; i < vline && i < static_cast<int>(lines_.size()); ++i) out += "\n";
    if (vline >= static_cast<int>(lines_.size())) return out;
    const std::string& first = lines_[vline];
    out += std::string(std::min<size_t>(vcol, first.size()), ' ');
    if (static_cast<size_t>(vcol) < first.size()) out += first.substr(vcol);
    out += "\n";
    for (size_t i = vline + 1; i < lines_.size(); ++i) {
      const std::string& l = lines_[i];
      const size_t indent = l.find_first_not_of(' ');
      if (indent == std::string::npos || l[indent] == '#') {
        out += l + "\n";
        continue;
      }
      if (static_cast<int>(indent) <= kcol) break;
      out += l + "\n";
    }
    return out;
  }

  // YAML -> JSON for call arguments: plain scalars become numbers, booleans
  // or null when they read as such; quoted scalars stay strings.
  absl::Status ToJson(const YAML::Node& n, nlohmann::json* out) const {
    switch (n.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        *out = nullptr;
        return absl::OkStatus();
      case YAML::NodeType::Scalar: {
        const std::string& s = n.Scalar();
        if (n.Tag() == "!") {
          *out = s;
          return absl::OkStatus();
        }
        int64_t i = 0;
        if (Int(n, "", INT64_MIN, &i).ok()) {
          *out = i;
        } else if (s == "true" || s == "false") {
          *out = s == "true";
        } else if (s == "null" || s == "~") {
          *out = nullptr;
        } else {
          *out = s;
        }
        return absl::OkStatus();
      }
      case YAML::NodeType::Sequence: {
        *out = nlohmann::json::array();
        for (const YAML::Node& e : n) {
          nlohmann::json j;
          DEVMGR_RETURN_IF_ERROR(ToJson(e, &j));
          out->push_back(std::move(j));
        }
        return absl::OkStatus();
      }
      case YAML::NodeType::Map: {
        *out = nlohmann::json::object();
        for (auto it = n.begin(); it != n.end(); ++it) {
          std::string k;
          DEVMGR_RETURN_IF_ERROR(String(it->first, "argument keys", &k));
          if (k == "regex" && n.size() == 1) {
            std::string re;
            DEVMGR_RETURN_IF_ERROR(Regex(it->second, "regex", &re));
          }
          nlohmann::json j;
          DEVMGR_RETURN_IF_ERROR(ToJson(it->second, &j));
          (*out)[k] = std::move(j);
        }
        return absl::OkStatus();
      }
    }
    return absl::OkStatus();
  }

  // ---- node, timeouts, plugins ----

  absl::Status ParseNode(const YAML::Node& n, NodeSpec* node) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, "node"));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(n, kNodeKeys, "node"));
    if (n["kubelet_version"] && n["kubelet_versions"]) {
      return Error(n["kubelet_versions"], "give kubelet_version or kubelet_versions, not both");
    }
    if (n["kubelet_version"]) {
      DEVMGR_RETURN_IF_ERROR(
          Versions(n["kubelet_version"], "node.kubelet_version", &node->kubelet_versions));
    }
    if (n["kubelet_versions"]) {
      DEVMGR_RETURN_IF_ERROR(
          Versions(n["kubelet_versions"], "node.kubelet_versions", &node->kubelet_versions));
    }
    if (n["dir"]) DEVMGR_RETURN_IF_ERROR(NonEmptyString(n["dir"], "node.dir", &node->dir));
    if (n["plugins_registry"]) {
      DEVMGR_RETURN_IF_ERROR(
          Bool(n["plugins_registry"], "node.plugins_registry", &node->plugins_registry));
    }
    if (n["fsync"]) DEVMGR_RETURN_IF_ERROR(Bool(n["fsync"], "node.fsync", &node->fsync));
    if (n["max_recv_msg_size"]) {
      DEVMGR_RETURN_IF_ERROR(
          Int(n["max_recv_msg_size"], "node.max_recv_msg_size", 1024, &node->max_recv_msg_size));
      if (node->max_recv_msg_size > INT32_MAX) {
        return Error(n["max_recv_msg_size"], "node.max_recv_msg_size is too large");
      }
    }
    if (n["numa_nodes"]) {
      std::vector<int64_t> ids;
      DEVMGR_RETURN_IF_ERROR(IntList(n["numa_nodes"], "node.numa_nodes", &ids));
      if (ids.empty()) return Error(n["numa_nodes"], "node.numa_nodes must not be empty");
      node->numa_nodes.clear();
      for (int64_t id : ids) {
        if (id < 0 || id > 1023) return Error(n["numa_nodes"], "NUMA ids must be 0..1023");
        node->numa_nodes.push_back(static_cast<int>(id));
      }
    }
    if (n["dial_timeout"]) {
      DEVMGR_RETURN_IF_ERROR(Duration(n["dial_timeout"], "node.dial_timeout", &node->dial_timeout));
    }
    if (n["numa_distances"]) {
      const YAML::Node d = n["numa_distances"];
      DEVMGR_RETURN_IF_ERROR(ExpectSeq(d, "node.numa_distances"));
      for (const YAML::Node& row : d) {
        std::vector<int64_t> v;
        DEVMGR_RETURN_IF_ERROR(IntList(row, "node.numa_distances rows", &v));
        std::vector<uint64_t> r;
        for (int64_t x : v) {
          if (x < 0) return Error(row, "distances must not be negative");
          r.push_back(static_cast<uint64_t>(x));
        }
        node->numa_distances.push_back(std::move(r));
      }
    }
    if (n["topology_manager"]) {
      const YAML::Node t = n["topology_manager"];
      DEVMGR_RETURN_IF_ERROR(ExpectMap(t, "node.topology_manager"));
      DEVMGR_RETURN_IF_ERROR(
          CheckKeys(t, {"policy", "scope", "policy_options"}, "node.topology_manager"));
      if (t["policy"]) {
        DEVMGR_RETURN_IF_ERROR(String(t["policy"], "policy", &node->topology_policy));
        static const Keys kPolicies = {"none", "best-effort", "restricted", "single-numa-node"};
        if (!Contains(kPolicies, node->topology_policy)) {
          std::string msg = fmt::format("unknown topology manager policy '{}'", node->topology_policy);
          const std::string guess = SpellCheck(node->topology_policy, kPolicies);
          if (!guess.empty()) msg += fmt::format(" (did you mean '{}'?)", guess);
          return Error(t["policy"], msg);
        }
      }
      if (t["scope"]) {
        DEVMGR_RETURN_IF_ERROR(String(t["scope"], "scope", &node->topology_scope));
        if (node->topology_scope != "container" && node->topology_scope != "pod") {
          return Error(t["scope"], fmt::format("scope must be container or pod, not '{}'",
                                               node->topology_scope));
        }
      }
      if (t["policy_options"]) {
        DEVMGR_RETURN_IF_ERROR(
            StringMap(t["policy_options"], "policy_options", &node->topology_policy_options));
      }
    }
    if (n["feature_gates"]) {
      DEVMGR_RETURN_IF_ERROR(String(n["feature_gates"], "node.feature_gates", &node->feature_gates));
      podresources::Options api;
      if (absl::Status s = podresources::ApplyFeatureGates(node->feature_gates, &api); !s.ok()) {
        return Error(n["feature_gates"], "node.feature_gates: " + std::string(s.message()));
      }
    }
    if (n["hint_providers"]) {
      const YAML::Node hp = n["hint_providers"];
      DEVMGR_RETURN_IF_ERROR(ExpectSeq(hp, "node.hint_providers"));
      for (const YAML::Node& p : hp) {
        DEVMGR_RETURN_IF_ERROR(ExpectMap(p, "a hint provider"));
        DEVMGR_RETURN_IF_ERROR(CheckKeys(p, {"name", "hints", "containers", "pod"}, "a hint provider"));
        HintProviderSpec spec;
        if (!p["name"]) return Error(p, "a hint provider needs a name");
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(p["name"], "name", &spec.name));
        if (p["hints"]) DEVMGR_RETURN_IF_ERROR(ResHints(p["hints"], "hints", &spec.hints));
        if (p["containers"]) {
          DEVMGR_RETURN_IF_ERROR(ExpectMap(p["containers"], "containers"));
          for (auto it = p["containers"].begin(); it != p["containers"].end(); ++it) {
            std::string c;
            DEVMGR_RETURN_IF_ERROR(NonEmptyString(it->first, "container name", &c));
            DEVMGR_RETURN_IF_ERROR(ResHints(it->second, "container hints", &spec.containers[c]));
          }
        }
        if (p["pod"]) {
          ResourceHints pod;
          DEVMGR_RETURN_IF_ERROR(ResHints(p["pod"], "pod hints", &pod));
          spec.pod = std::move(pod);
        }
        node->hint_providers.push_back(std::move(spec));
      }
    }
    return absl::OkStatus();
  }

  // {numa: [ids] | null, preferred: bool}
  absl::Status Hint(const YAML::Node& n, HintSpec* h) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, "a hint ({numa: [...], preferred: bool})"));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(n, {"numa", "preferred"}, "a hint"));
    if (!n["numa"]) return Error(n, "a hint needs numa (a list of NUMA ids, or null)");
    if (!n["numa"].IsNull()) {
      std::vector<int64_t> ids;
      DEVMGR_RETURN_IF_ERROR(IntList(n["numa"], "numa", &ids));
      std::vector<int> v;
      for (int64_t x : ids) {
        if (x < 0 || x > 63) return Error(n["numa"], "NUMA ids in hints must be 0..63");
        v.push_back(static_cast<int>(x));
      }
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      h->numa = std::move(v);
    }
    if (n["preferred"]) DEVMGR_RETURN_IF_ERROR(Bool(n["preferred"], "preferred", &h->preferred));
    return absl::OkStatus();
  }

  // resource -> [hints] | null
  absl::Status ResHints(const YAML::Node& n, const std::string& where, ResourceHints* out) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, where + " (resource -> list of hints)"));
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string r;
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(it->first, "resource name", &r));
      if (it->second.IsNull()) {
        (*out)[r] = std::nullopt;
        continue;
      }
      DEVMGR_RETURN_IF_ERROR(ExpectSeq(it->second, "hints"));
      std::vector<HintSpec> hs;
      for (const YAML::Node& h : it->second) {
        HintSpec x;
        DEVMGR_RETURN_IF_ERROR(Hint(h, &x));
        hs.push_back(std::move(x));
      }
      (*out)[r] = std::move(hs);
    }
    return absl::OkStatus();
  }

  // provider -> resource -> hints
  absl::Status ProviderHintsExpect(const YAML::Node& n,
                                   std::optional<std::map<std::string, ResourceHints>>* out) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, "topology_hints (provider -> resource -> hints)"));
    std::map<std::string, ResourceHints> m;
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string p;
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(it->first, "provider name", &p));
      DEVMGR_RETURN_IF_ERROR(ResHints(it->second, "topology_hints", &m[p]));
    }
    *out = std::move(m);
    return absl::OkStatus();
  }

  absl::Status ParseTimeouts(const YAML::Node& n, Timeouts* t) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, "timeouts"));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(n, kTimeoutKeys, "timeouts"));
    if (n["step"]) DEVMGR_RETURN_IF_ERROR(Duration(n["step"], "timeouts.step", &t->step));
    if (n["wait"]) DEVMGR_RETURN_IF_ERROR(Duration(n["wait"], "timeouts.wait", &t->wait));
    if (n["expect"]) DEVMGR_RETURN_IF_ERROR(Duration(n["expect"], "timeouts.expect", &t->expect));
    return absl::OkStatus();
  }

  absl::Status ParsePlugins(const YAML::Node& n, Scenario& sc) const {
    DEVMGR_RETURN_IF_ERROR(ExpectSeq(n, "plugins"));
    std::set<std::string> names;
    for (const YAML::Node& p : n) {
      PluginSpec spec;
      DEVMGR_RETURN_IF_ERROR(ParsePlugin(p, &spec));
      if (!names.insert(spec.name).second) {
        return Error(p["name"], fmt::format("a plugin named '{}' is already declared", spec.name));
      }
      sc.plugins.push_back(std::move(spec));
    }
    return absl::OkStatus();
  }

  absl::Status ParsePlugin(const YAML::Node& p, PluginSpec* spec) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(p, "a plugin"));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(p, kPluginKeys, "a plugin"));
    spec->loc = Loc(p);
    if (!p["name"]) return Error(p, "a plugin needs a name");
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(p["name"], "plugin name", &spec->name));
    const int kinds = (p["command"] ? 1 : 0) + (p["sample_plugin"] ? 1 : 0) +
                      (p["external"] ? 1 : 0);
    if (kinds != 1) {
      return Error(p, fmt::format("plugin '{}' needs exactly one of command, sample_plugin or "
                                  "external",
                                  spec->name));
    }
    if (p["command"]) {
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(p["command"], "command", &spec->command));
    }
    if (p["args"]) {
      if (!p["command"]) return Error(p["args"], "args needs command");
      DEVMGR_RETURN_IF_ERROR(StringList(p["args"], "args", &spec->args));
    }
    if (p["external"]) {
      DEVMGR_RETURN_IF_ERROR(Bool(p["external"], "external", &spec->external));
      if (!spec->external) return Error(p["external"], "external must be true when given");
    }
    if (p["resource"]) {
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(p["resource"], "resource", &spec->resource));
    }
    if (p["sample_plugin"]) {
      YAML::Node key;
      for (auto it = p.begin(); it != p.end(); ++it) {
        if (it->first.Scalar() == "sample_plugin") key = it->first;
      }
      const YAML::Node v = p["sample_plugin"];
      DEVMGR_RETURN_IF_ERROR(ExpectMap(v, "sample_plugin"));
      spec->sample_plugin_config = BlockText(key, v);
      absl::StatusOr<plugin::Config> cfg =
          plugin::ParseConfig(spec->sample_plugin_config, file_);
      if (!cfg.ok()) return cfg.status();
      if (!spec->resource.empty() && spec->resource != cfg->resource) {
        return Error(p["resource"],
                     fmt::format("resource '{}' differs from the sample_plugin's '{}'",
                                 spec->resource, cfg->resource));
      }
      spec->resource = cfg->resource;
      spec->reregisters = cfg->registration.reregister && !cfg->register_overrides.skip;
      spec->initial_devices = static_cast<int64_t>(cfg->devices.size());
      if (cfg->register_overrides.skip) spec->wait_for_registration = false;
    }
    if (p["env"]) DEVMGR_RETURN_IF_ERROR(StringMap(p["env"], "env", &spec->env));
    if (p["working_dir"]) {
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(p["working_dir"], "working_dir", &spec->working_dir));
    }
    if (p["private_mount"]) {
      DEVMGR_RETURN_IF_ERROR(Bool(p["private_mount"], "private_mount", &spec->private_mount));
    }
    if (p["binds"]) {
      DEVMGR_RETURN_IF_ERROR(ExpectSeq(p["binds"], "binds"));
      for (const YAML::Node& b : p["binds"]) {
        DEVMGR_RETURN_IF_ERROR(ExpectMap(b, "a bind"));
        DEVMGR_RETURN_IF_ERROR(CheckKeys(b, {"host", "path"}, "a bind"));
        if (!b["host"] || !b["path"]) return Error(b, "a bind needs host and path");
        std::string host, path;
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(b["host"], "host", &host));
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(b["path"], "path", &path));
        spec->binds.emplace_back(host, path);
      }
      if (!spec->private_mount) return Error(p["binds"], "binds need private_mount: true");
    }
    if (p["start"]) {
      std::string s;
      DEVMGR_RETURN_IF_ERROR(String(p["start"], "start", &s));
      if (s == "after_kubelet") {
        spec->start = PluginStart::kAfterKubelet;
      } else if (s == "before_kubelet") {
        spec->start = PluginStart::kBeforeKubelet;
      } else if (s == "manual") {
        spec->start = PluginStart::kManual;
      } else {
        return Error(p["start"], fmt::format("start must be after_kubelet, before_kubelet or "
                                             "manual, not '{}'",
                                             s));
      }
    }
    if (p["socket"]) {
      if (!spec->external) return Error(p["socket"], "socket applies to external plugins only");
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(p["socket"], "socket", &spec->socket));
    }
    if (spec->external) {
      if (spec->resource.empty()) {
        return Error(p, fmt::format("external plugin '{}' needs resource", spec->name));
      }
      if (p["start"] || p["env"] || p["working_dir"] || p["private_mount"]) {
        return Error(p, "start, env, working_dir and private_mount do not apply to external "
                        "plugins");
      }
    }
    if (p["wait_for_registration"]) {
      DEVMGR_RETURN_IF_ERROR(Bool(p["wait_for_registration"], "wait_for_registration",
                                  &spec->wait_for_registration));
    }
    if (p["call_log"]) {
      if (p["sample_plugin"]) return Error(p["call_log"], "sample plugins get a call log already");
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(p["call_log"], "call_log", &spec->call_log));
    }
    if (p["control"]) {
      if (p["sample_plugin"]) {
        return Error(p["control"], "sample plugins get a control file already");
      }
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(p["control"], "control", &spec->control));
    }
    return absl::OkStatus();
  }

  // ---- steps ----

  const PluginSpec* FindPlugin(const Scenario& sc, const std::string& name) const {
    for (const PluginSpec& p : sc.plugins) {
      if (p.name == name) return &p;
    }
    return nullptr;
  }

  absl::Status PluginRef(const Scenario& sc, const YAML::Node& n, std::string* out) const {
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(n, "plugin", out));
    if (FindPlugin(sc, *out) != nullptr) return absl::OkStatus();
    std::vector<std::string> names;
    for (const PluginSpec& p : sc.plugins) names.push_back(p.name);
    std::string msg = fmt::format("unknown plugin '{}'", *out);
    const std::string guess = SpellCheck(*out, names);
    if (!guess.empty()) msg += fmt::format(" (did you mean '{}'?)", guess);
    return Error(n, msg);
  }

  absl::Status ParseStep(const YAML::Node& s, const Scenario& sc, Step* step) const {
    step->loc = Loc(s);
    if (!s.IsMap()) {
      return Error(s, "a step must be a mapping with one action, e.g. '- admit: pod.yaml'");
    }
    DEVMGR_RETURN_IF_ERROR(CheckKeys(s, kStepCommonKeys, "a step", kStepActions));
    YAML::Node action_key;
    std::string action;
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string k = it->first.Scalar();
      if (!Contains(kStepActions, k)) continue;
      if (!action.empty()) {
        return Error(it->first, fmt::format("a step has exactly one action; found '{}' and '{}'",
                                            action, k));
      }
      action = k;
      action_key = it->first;
    }
    if (s["name"]) DEVMGR_RETURN_IF_ERROR(String(s["name"], "step name", &step->name));
    if (s["versions"]) DEVMGR_RETURN_IF_ERROR(Versions(s["versions"], "versions", &step->versions));
    if (s["timeout"]) {
      absl::Duration d;
      DEVMGR_RETURN_IF_ERROR(Duration(s["timeout"], "timeout", &d));
      step->timeout = d;
    }
    if (s["expect"]) DEVMGR_RETURN_IF_ERROR(ParseExpect(s["expect"], sc, &step->expect));
    if (action.empty()) {
      if (!s["expect"]) {
        return Error(s, fmt::format("a step needs an action ({}) or expect:",
                                    "admit, delete_pod, restart_kubelet, ..."));
      }
      step->kind = StepKind::kCheck;
      return absl::OkStatus();
    }
    for (size_t i = 0; i < kStepActions.size(); ++i) {
      if (kStepActions[i] == action) step->kind = kStepKinds[i];
    }
    step->loc = Loc(action_key);
    return ParseAction(action_key, s[action], sc, step);
  }

  absl::Status PodRefOrMap(const YAML::Node& v, const std::string& where, const Keys& keys,
                           Step* step) const {
    if (v.IsScalar()) return NonEmptyString(v, "pod", &step->pod_ref);
    DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, keys, where));
    if (!v["pod"]) return Error(v, fmt::format("{} needs pod", where));
    return NonEmptyString(v["pod"], "pod", &step->pod_ref);
  }

  absl::Status PluginStep(const YAML::Node& v, const std::string& where, const Scenario& sc,
                          Step* step, bool allow_wait) const {
    if (v.IsScalar()) return PluginRef(sc, v, &step->plugin);
    DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
    Keys keys = {"plugin"};
    if (allow_wait) keys.push_back("wait_for_registration");
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, keys, where));
    if (!v["plugin"]) return Error(v, fmt::format("{} needs plugin", where));
    DEVMGR_RETURN_IF_ERROR(PluginRef(sc, v["plugin"], &step->plugin));
    if (v["wait_for_registration"]) {
      DEVMGR_RETURN_IF_ERROR(
          Bool(v["wait_for_registration"], "wait_for_registration", &step->wait_for_registration));
    }
    return absl::OkStatus();
  }

  absl::Status ParseAction(const YAML::Node& key, const YAML::Node& v, const Scenario& sc,
                           Step* step) const {
    const std::string where = key.Scalar();
    switch (step->kind) {
      case StepKind::kAdmit: {
        if (v.IsScalar()) {
          std::string path = v.Scalar();
          if (path.empty()) return Error(v, "admit needs a pod manifest or a file name");
          if (path[0] != '/') path = sc.dir + "/" + path;
          absl::StatusOr<pod::Pod> pod = pod::LoadPodManifest(path);
          if (!pod.ok()) {
            return Error(v, fmt::format("admit: {}", std::string(pod.status().message())));
          }
          step->pod = *std::move(pod);
          return absl::OkStatus();
        }
        if (!v.IsMap()) return Error(v, "admit takes an inline Pod manifest or a file name");
        absl::StatusOr<pod::Pod> pod = pod::ParsePodManifest(BlockText(key, v), file_);
        if (!pod.ok()) return pod.status();
        step->pod = *std::move(pod);
        return absl::OkStatus();
      }
      case StepKind::kDeletePod:
        return PodRefOrMap(v, where, {"pod"}, step);
      case StepKind::kSetPhase: {
        DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
        DEVMGR_RETURN_IF_ERROR(PodRefOrMap(v, where, {"pod", "phase"}, step));
        if (!v["phase"]) return Error(v, "set_phase needs phase (Succeeded or Failed)");
        std::string ph;
        DEVMGR_RETURN_IF_ERROR(String(v["phase"], "phase", &ph));
        if (ph == "Succeeded") {
          step->phase = pod::Phase::kSucceeded;
        } else if (ph == "Failed") {
          step->phase = pod::Phase::kFailed;
        } else {
          return Error(v["phase"], fmt::format("phase must be Succeeded or Failed, not '{}'", ph));
        }
        return absl::OkStatus();
      }
      case StepKind::kRestartContainer:
        DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
        DEVMGR_RETURN_IF_ERROR(PodRefOrMap(v, where, {"pod", "container"}, step));
        if (!v["container"]) return Error(v, "restart_container needs container");
        return NonEmptyString(v["container"], "container", &step->container);
      case StepKind::kRestartKubelet:
      case StepKind::kRebootNode:
        DEVMGR_RETURN_IF_ERROR(OptionalMap(v, {"wait_for_registration"}, where));
        if (v.IsMap() && v["wait_for_registration"]) {
          DEVMGR_RETURN_IF_ERROR(Bool(v["wait_for_registration"], "wait_for_registration",
                                      &step->wait_for_registration));
        }
        return absl::OkStatus();
      case StepKind::kStartPlugin:
      case StepKind::kRestartPlugin:
        return PluginStep(v, where, sc, step, /*allow_wait=*/true);
      case StepKind::kStopPlugin:
      case StepKind::kKillPlugin:
      case StepKind::kPausePlugin:
      case StepKind::kResumePlugin:
        return PluginStep(v, where, sc, step, /*allow_wait=*/false);
      case StepKind::kAdvanceClock:
        return Duration(v, "advance_clock", &step->advance);
      case StepKind::kNodeStatus:
      case StepKind::kDeleteCheckpoint:
      case StepKind::kCorruptCheckpoint:
      case StepKind::kCheck:
        if (!v.IsNull()) return Error(v, fmt::format("{} takes no value", where));
        return absl::OkStatus();
      case StepKind::kWaitRegistration: {
        if (v.IsScalar()) return NonEmptyString(v, "resource", &step->resource);
        DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
        DEVMGR_RETURN_IF_ERROR(CheckKeys(v, {"resource", "plugin", "count"}, where));
        if (v["plugin"]) DEVMGR_RETURN_IF_ERROR(PluginRef(sc, v["plugin"], &step->plugin));
        if (v["resource"]) {
          DEVMGR_RETURN_IF_ERROR(NonEmptyString(v["resource"], "resource", &step->resource));
        } else if (!step->plugin.empty()) {
          step->resource = FindPlugin(sc, step->plugin)->resource;
          if (step->resource.empty()) {
            return Error(v, fmt::format("plugin '{}' has no known resource; give resource:",
                                        step->plugin));
          }
        } else {
          return Error(v, "wait_registration needs resource or plugin");
        }
        if (v["count"]) DEVMGR_RETURN_IF_ERROR(OptInt(v["count"], "count", 1, &step->count));
        return absl::OkStatus();
      }
      case StepKind::kWaitDevices:
        DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
        DEVMGR_RETURN_IF_ERROR(
            CheckKeys(v, {"resource", "capacity", "allocatable", "healthy"}, where));
        if (!v["resource"]) return Error(v, "wait_devices needs resource");
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(v["resource"], "resource", &step->resource));
        if (v["capacity"]) DEVMGR_RETURN_IF_ERROR(OptInt(v["capacity"], "capacity", 0, &step->capacity));
        if (v["allocatable"]) {
          DEVMGR_RETURN_IF_ERROR(OptInt(v["allocatable"], "allocatable", 0, &step->allocatable));
        }
        if (v["healthy"]) DEVMGR_RETURN_IF_ERROR(OptInt(v["healthy"], "healthy", 0, &step->healthy));
        if (!step->capacity && !step->allocatable && !step->healthy) {
          return Error(v, "wait_devices needs capacity, allocatable or healthy");
        }
        return absl::OkStatus();
      case StepKind::kSetHealth: {
        DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
        DEVMGR_RETURN_IF_ERROR(CheckKeys(v, {"plugin", "device", "health", "wait"}, where));
        if (!v["plugin"] || !v["device"] || !v["health"]) {
          return Error(v, "set_health needs plugin, device and health");
        }
        DEVMGR_RETURN_IF_ERROR(PluginRef(sc, v["plugin"], &step->plugin));
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(v["device"], "device", &step->device));
        DEVMGR_RETURN_IF_ERROR(String(v["health"], "health", &step->health));
        if (v["wait"]) DEVMGR_RETURN_IF_ERROR(Bool(v["wait"], "wait", &step->wait));
        return ControlCapable(sc, v["plugin"], step->plugin);
      }
      case StepKind::kControl:
        DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
        DEVMGR_RETURN_IF_ERROR(CheckKeys(v, {"plugin", "command"}, where));
        if (!v["plugin"] || !v["command"]) return Error(v, "control needs plugin and command");
        DEVMGR_RETURN_IF_ERROR(PluginRef(sc, v["plugin"], &step->plugin));
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(v["command"], "command", &step->control_line));
        if (step->control_line.find('\n') != std::string::npos) {
          return Error(v["command"], "command must be one line");
        }
        return ControlCapable(sc, v["plugin"], step->plugin);
      case StepKind::kTruncateCheckpoint:
        if (v.IsNull()) return absl::OkStatus();
        return Int(v, "truncate_checkpoint (bytes to keep)", 0, &step->truncate_to);
      case StepKind::kWriteCheckpoint:
        return String(v, "write_checkpoint (the file's content)", &step->content);
      case StepKind::kRun:
        if (v.IsScalar()) return NonEmptyString(v, "run", &step->command);
        DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
        DEVMGR_RETURN_IF_ERROR(CheckKeys(v, {"command", "expect_exit"}, where));
        if (!v["command"]) return Error(v, "run needs command");
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(v["command"], "command", &step->command));
        if (v["expect_exit"]) {
          DEVMGR_RETURN_IF_ERROR(Int(v["expect_exit"], "expect_exit", 0, &step->expect_exit));
        }
        return absl::OkStatus();
    }
    return Error(key, "unhandled step");
  }

  absl::Status ControlCapable(const Scenario& sc, const YAML::Node& n,
                              const std::string& plugin) const {
    const PluginSpec* p = FindPlugin(sc, plugin);
    if (p->sample_plugin_config.empty() && p->control.empty()) {
      return Error(n, fmt::format("plugin '{}' has no control file (only sample_plugin plugins, "
                                  "or plugins with control:, take commands)",
                                  plugin));
    }
    return absl::OkStatus();
  }

  // ---- expectations ----

  absl::Status ParseExpect(const YAML::Node& n, const Scenario& sc, Expectations* e) const {
    e->loc = Loc(n);
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, "expect"));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(n, kExpectKeys, "expect"));
    if (n["within"]) {
      absl::Duration d;
      DEVMGR_RETURN_IF_ERROR(Duration(n["within"], "within", &d));
      e->within = d;
    }
    if (n["resources"]) {
      DEVMGR_RETURN_IF_ERROR(ExpectMap(n["resources"], "expect.resources"));
      for (auto it = n["resources"].begin(); it != n["resources"].end(); ++it) {
        ResourceExpect r;
        DEVMGR_RETURN_IF_ERROR(ParseResource(it->first, it->second, &r));
        e->resources.push_back(std::move(r));
      }
    }
    if (n["pods"]) {
      DEVMGR_RETURN_IF_ERROR(ExpectMap(n["pods"], "expect.pods"));
      for (auto it = n["pods"].begin(); it != n["pods"].end(); ++it) {
        PodExpect p;
        DEVMGR_RETURN_IF_ERROR(ParsePodExpect(it->first, it->second, &p));
        e->pods.push_back(std::move(p));
      }
    }
    if (n["disjoint"]) {
      const YAML::Node d = n["disjoint"];
      if (d.IsSequence()) {
        std::vector<std::string> rs;
        DEVMGR_RETURN_IF_ERROR(StringList(d, "disjoint", &rs));
        e->disjoint = rs;
      } else {
        bool b = false;
        DEVMGR_RETURN_IF_ERROR(Bool(d, "disjoint (true or a list of resources)", &b));
        if (b) e->disjoint = std::vector<std::string>{};
      }
    }
    if (n["checkpoint"]) {
      CheckpointExpect c;
      DEVMGR_RETURN_IF_ERROR(ParseCheckpointExpect(n["checkpoint"], &c));
      e->checkpoint = std::move(c);
    }
    if (n["calls"]) {
      DEVMGR_RETURN_IF_ERROR(ExpectMap(n["calls"], "expect.calls (plugin name -> calls)"));
      for (auto it = n["calls"].begin(); it != n["calls"].end(); ++it) {
        CallsExpect c;
        DEVMGR_RETURN_IF_ERROR(ParseCalls(sc, it->first, it->second, &c));
        e->calls.push_back(std::move(c));
      }
    }
    if (n["pod_resources"]) {
      PodResourcesExpect pr;
      DEVMGR_RETURN_IF_ERROR(ParsePodResourcesExpect(n["pod_resources"], &pr));
      e->pod_resources = std::move(pr);
    }
    if (n["log"]) {
      const YAML::Node l = n["log"];
      std::vector<YAML::Node> items;
      if (l.IsSequence()) {
        for (const YAML::Node& x : l) items.push_back(x);
      } else {
        items.push_back(l);
      }
      for (const YAML::Node& x : items) {
        std::string re;
        DEVMGR_RETURN_IF_ERROR(Regex(x, "log", &re));
        e->log.emplace_back(Loc(x), re);
      }
    }
    if (e->empty() && !n["within"]) return Error(n, "expect: has nothing to check");
    return absl::OkStatus();
  }

  absl::Status ParseResource(const YAML::Node& k, const YAML::Node& v, ResourceExpect* r) const {
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(k, "resource name", &r->resource));
    r->loc = Loc(k);
    const std::string where = fmt::format("expect.resources['{}']", r->resource);
    DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, kResourceKeys, where));
    if (v["capacity"]) DEVMGR_RETURN_IF_ERROR(OptInt(v["capacity"], "capacity", 0, &r->capacity));
    if (v["allocatable"]) {
      DEVMGR_RETURN_IF_ERROR(OptInt(v["allocatable"], "allocatable", 0, &r->allocatable));
    }
    if (v["healthy"]) DEVMGR_RETURN_IF_ERROR(OptStringList(v["healthy"], "healthy", &r->healthy));
    if (v["unhealthy"]) {
      DEVMGR_RETURN_IF_ERROR(OptStringList(v["unhealthy"], "unhealthy", &r->unhealthy));
    }
    if (v["allocated"]) {
      DEVMGR_RETURN_IF_ERROR(OptStringList(v["allocated"], "allocated", &r->allocated));
    }
    if (v["healthy_count"]) {
      DEVMGR_RETURN_IF_ERROR(OptInt(v["healthy_count"], "healthy_count", 0, &r->healthy_count));
    }
    if (v["unhealthy_count"]) {
      DEVMGR_RETURN_IF_ERROR(
          OptInt(v["unhealthy_count"], "unhealthy_count", 0, &r->unhealthy_count));
    }
    if (v["registered"]) DEVMGR_RETURN_IF_ERROR(OptBool(v["registered"], "registered", &r->registered));
    if (v["connected"]) DEVMGR_RETURN_IF_ERROR(OptBool(v["connected"], "connected", &r->connected));
    return absl::OkStatus();
  }

  absl::Status ParsePodExpect(const YAML::Node& k, const YAML::Node& v, PodExpect* p) const {
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(k, "pod name", &p->ref));
    p->loc = Loc(k);
    const std::string where = fmt::format("expect.pods['{}']", p->ref);
    DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, kPodKeys, where));
    if (v["exists"]) DEVMGR_RETURN_IF_ERROR(OptBool(v["exists"], "exists", &p->exists));
    if (v["admitted"]) DEVMGR_RETURN_IF_ERROR(OptBool(v["admitted"], "admitted", &p->admitted));
    if (v["phase"]) {
      std::string ph;
      DEVMGR_RETURN_IF_ERROR(String(v["phase"], "phase", &ph));
      if (ph != "Pending" && ph != "Running" && ph != "Succeeded" && ph != "Failed") {
        return Error(v["phase"], fmt::format("phase must be Pending, Running, Succeeded or "
                                             "Failed, not '{}'",
                                             ph));
      }
      p->phase = ph;
    }
    if (v["reason"]) DEVMGR_RETURN_IF_ERROR(OptMatcher(v["reason"], "reason", &p->reason));
    if (v["message"]) DEVMGR_RETURN_IF_ERROR(OptMatcher(v["message"], "message", &p->message));
    if (v["topology_hints"]) {
      DEVMGR_RETURN_IF_ERROR(ProviderHintsExpect(v["topology_hints"], &p->topology_hints));
    }
    if (v["containers"]) {
      DEVMGR_RETURN_IF_ERROR(ExpectMap(v["containers"], where + ".containers"));
      for (auto it = v["containers"].begin(); it != v["containers"].end(); ++it) {
        ContainerExpect c;
        DEVMGR_RETURN_IF_ERROR(ParseContainerExpect(it->first, it->second, &c));
        p->containers.push_back(std::move(c));
      }
    }
    return absl::OkStatus();
  }

  absl::Status KeyValues(const YAML::Node& n, const std::string& where, bool exact,
                         std::optional<KeyValueExpect>* out) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, where));
    KeyValueExpect kv;
    kv.exact = exact;
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string k;
      DEVMGR_RETURN_IF_ERROR(String(it->first, where + " keys", &k));
      StringMatcher m;
      DEVMGR_RETURN_IF_ERROR(Matcher(it->second, where + " values", &m));
      kv.entries.emplace_back(k, m);
    }
    *out = std::move(kv);
    return absl::OkStatus();
  }

  // Reads `name` or `name_exact` (not both).
  // Reads `name` or `name_exact` (not both); *found tells whether either is there.
  absl::Status Exactable(const YAML::Node& v, const std::string& name, YAML::Node* out,
                         bool* exact, bool* found) const {
    const std::string ex = name + "_exact";
    if (v[name] && v[ex]) return Error(v[ex], fmt::format("give {} or {}, not both", name, ex));
    *exact = static_cast<bool>(v[ex]);
    *found = v[ex] || v[name];
    if (v[ex]) {
      *out = v[ex];
    } else if (v[name]) {
      *out = v[name];
    }
    return absl::OkStatus();
  }

  absl::Status ParseContainerExpect(const YAML::Node& k, const YAML::Node& v,
                                    ContainerExpect* c) const {
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(k, "container name", &c->name));
    c->loc = Loc(k);
    const std::string where = fmt::format("container '{}'", c->name);
    DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, kContainerKeys, where));
    if (v["devices"]) {
      const YAML::Node d = v["devices"];
      if (d.IsScalar() && d.Scalar() == "none") {
        c->no_devices = true;
      } else {
        DEVMGR_RETURN_IF_ERROR(ExpectMap(d, "devices (resource -> count, ids or a mapping)"));
        for (auto it = d.begin(); it != d.end(); ++it) {
          DeviceExpect de;
          DEVMGR_RETURN_IF_ERROR(ParseDeviceExpect(it->first, it->second, &de));
          c->devices.push_back(std::move(de));
        }
      }
    }
    YAML::Node n1, n2, n3, n4, n5;  // distinct: assigning a bound YAML::Node rewrites it
    bool exact = false, found = false;
    DEVMGR_RETURN_IF_ERROR(Exactable(v, "envs", &n1, &exact, &found));
    if (found) DEVMGR_RETURN_IF_ERROR(KeyValues(n1, "envs", exact, &c->envs));
    DEVMGR_RETURN_IF_ERROR(Exactable(v, "annotations", &n2, &exact, &found));
    if (found) DEVMGR_RETURN_IF_ERROR(KeyValues(n2, "annotations", exact, &c->annotations));
    DEVMGR_RETURN_IF_ERROR(Exactable(v, "mounts", &n3, &c->mounts_exact, &found));
    if (found) {
      DEVMGR_RETURN_IF_ERROR(ExpectSeq(n3, "mounts"));
      std::vector<MountExpect> ms;
      for (const YAML::Node& m : n3) {
        DEVMGR_RETURN_IF_ERROR(ExpectMap(m, "a mount"));
        DEVMGR_RETURN_IF_ERROR(
            CheckKeys(m, {"container_path", "host_path", "read_only"}, "a mount"));
        MountExpect me;
        if (m["container_path"]) {
          DEVMGR_RETURN_IF_ERROR(OptMatcher(m["container_path"], "container_path", &me.container_path));
        }
        if (m["host_path"]) DEVMGR_RETURN_IF_ERROR(OptMatcher(m["host_path"], "host_path", &me.host_path));
        if (m["read_only"]) DEVMGR_RETURN_IF_ERROR(OptBool(m["read_only"], "read_only", &me.read_only));
        ms.push_back(std::move(me));
      }
      c->mounts = std::move(ms);
    }
    DEVMGR_RETURN_IF_ERROR(Exactable(v, "device_specs", &n4, &c->device_specs_exact, &found));
    if (found) {
      DEVMGR_RETURN_IF_ERROR(ExpectSeq(n4, "device_specs"));
      std::vector<DeviceSpecExpect> ds;
      for (const YAML::Node& m : n4) {
        DEVMGR_RETURN_IF_ERROR(ExpectMap(m, "a device spec"));
        DEVMGR_RETURN_IF_ERROR(
            CheckKeys(m, {"container_path", "host_path", "permissions"}, "a device spec"));
        DeviceSpecExpect de;
        if (m["container_path"]) {
          DEVMGR_RETURN_IF_ERROR(OptMatcher(m["container_path"], "container_path", &de.container_path));
        }
        if (m["host_path"]) DEVMGR_RETURN_IF_ERROR(OptMatcher(m["host_path"], "host_path", &de.host_path));
        if (m["permissions"]) {
          DEVMGR_RETURN_IF_ERROR(OptMatcher(m["permissions"], "permissions", &de.permissions));
        }
        ds.push_back(std::move(de));
      }
      c->device_specs = std::move(ds);
    }
    DEVMGR_RETURN_IF_ERROR(Exactable(v, "cdi_devices", &n5, &c->cdi_devices_exact, &found));
    if (found) {
      DEVMGR_RETURN_IF_ERROR(ExpectSeq(n5, "cdi_devices"));
      std::vector<StringMatcher> cd;
      for (const YAML::Node& m : n5) {
        StringMatcher sm;
        DEVMGR_RETURN_IF_ERROR(Matcher(m, "cdi_devices entries", &sm));
        cd.push_back(std::move(sm));
      }
      c->cdi_devices = std::move(cd);
    }
    if (v["options"]) {
      if (!v["options"].IsScalar() || v["options"].Scalar() != "none") {
        return Error(v["options"], "options only takes 'none' (no runtime options at all)");
      }
      c->no_options = true;
    }
    if (v["running"]) DEVMGR_RETURN_IF_ERROR(OptBool(v["running"], "running", &c->running));
    if (v["restart_count"]) {
      DEVMGR_RETURN_IF_ERROR(OptInt(v["restart_count"], "restart_count", 0, &c->restart_count));
    }
    if (v["start_error"]) {
      DEVMGR_RETURN_IF_ERROR(OptMatcher(v["start_error"], "start_error", &c->start_error));
    }
    if (v["numa_affinity"]) {
      c->has_numa_affinity = true;
      if (!v["numa_affinity"].IsNull()) {
        std::vector<int64_t> ids;
        DEVMGR_RETURN_IF_ERROR(IntList(v["numa_affinity"], "numa_affinity", &ids));
        c->numa_affinity = std::vector<int>(ids.begin(), ids.end());
      }
    }
    if (v["topology_hints"]) {
      DEVMGR_RETURN_IF_ERROR(ProviderHintsExpect(v["topology_hints"], &c->topology_hints));
    }
    return absl::OkStatus();
  }

  absl::Status ParseDeviceExpect(const YAML::Node& k, const YAML::Node& v,
                                 DeviceExpect* d) const {
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(k, "resource name", &d->resource));
    d->loc = Loc(k);
    if (v.IsScalar()) return OptInt(v, "device count", 0, &d->count);
    if (v.IsSequence()) return OptStringList(v, "device ids", &d->ids);
    const std::string where = fmt::format("devices['{}']", d->resource);
    if (!v.IsMap()) return Error(v, fmt::format("{} must be a count, a list of ids or a mapping", where));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, kDeviceKeys, where));
    if (v["count"]) DEVMGR_RETURN_IF_ERROR(OptInt(v["count"], "count", 0, &d->count));
    if (v["ids"]) DEVMGR_RETURN_IF_ERROR(OptStringList(v["ids"], "ids", &d->ids));
    if (v["subset_of"]) DEVMGR_RETURN_IF_ERROR(OptStringList(v["subset_of"], "subset_of", &d->subset_of));
    if (v["numa"]) {
      std::vector<int64_t> ids;
      DEVMGR_RETURN_IF_ERROR(IntList(v["numa"], "numa", &ids));
      d->numa = ids;
    }
    return absl::OkStatus();
  }

  absl::Status ParsePodResourcesExpect(const YAML::Node& n, PodResourcesExpect* e) const {
    e->loc = Loc(n);
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, "expect.pod_resources"));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(n, kPodResourcesKeys, "expect.pod_resources"));
    if (n["allocatable"]) {
      const YAML::Node a = n["allocatable"];
      DEVMGR_RETURN_IF_ERROR(
          ExpectMap(a, "pod_resources.allocatable (resource -> count, ids or a mapping)"));
      for (auto it = a.begin(); it != a.end(); ++it) {
        DeviceExpect d;
        DEVMGR_RETURN_IF_ERROR(ParseDeviceExpect(it->first, it->second, &d));
        e->allocatable.push_back(std::move(d));
      }
    }
    if (n["pod_count"]) DEVMGR_RETURN_IF_ERROR(OptInt(n["pod_count"], "pod_count", 0, &e->pod_count));
    for (const bool get : {false, true}) {
      const char* key = get ? "get" : "pods";
      if (!n[key]) continue;
      const YAML::Node ps = n[key];
      DEVMGR_RETURN_IF_ERROR(ExpectMap(ps, fmt::format("pod_resources.{} (pod -> expectations)", key)));
      for (auto it = ps.begin(); it != ps.end(); ++it) {
        PrPodExpect p;
        DEVMGR_RETURN_IF_ERROR(ParsePrPod(it->first, it->second, get, &p));
        (get ? e->get : e->pods).push_back(std::move(p));
      }
    }
    if (e->allocatable.empty() && !e->pod_count && e->pods.empty() && e->get.empty()) {
      return Error(n, "expect.pod_resources: has nothing to check");
    }
    return absl::OkStatus();
  }

  // List (`get` false): `absent`, or {containers}; Get: {containers} or {error}.
  absl::Status ParsePrPod(const YAML::Node& k, const YAML::Node& v, bool get, PrPodExpect* p) const {
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(k, "pod name", &p->ref));
    p->loc = Loc(k);
    const std::string where = fmt::format("pod_resources.{}['{}']", get ? "get" : "pods", p->ref);
    const size_t slash = p->ref.find('/');
    if (slash != std::string::npos &&
        (slash == 0 || slash + 1 == p->ref.size() || p->ref.find('/', slash + 1) != std::string::npos)) {
      return Error(k, fmt::format("{}: a pod is NAME or NAMESPACE/NAME", where));
    }
    if (!get && v.IsScalar() && v.Scalar() == "absent") {
      p->absent = true;
      return absl::OkStatus();
    }
    DEVMGR_RETURN_IF_ERROR(ExpectMap(
        v, get ? where + " ({containers: ...} or {error: ...})"
               : where + " ({containers: ...}, or absent: not listed)"));
    DEVMGR_RETURN_IF_ERROR(
        CheckKeys(v, get ? Keys{"containers", "error"} : Keys{"containers"}, where));
    if (v["error"]) {
      if (v["containers"]) return Error(v["error"], "give containers or error, not both");
      DEVMGR_RETURN_IF_ERROR(OptMatcher(v["error"], "error", &p->error));
    }
    if (v["containers"]) {
      const YAML::Node cs = v["containers"];
      DEVMGR_RETURN_IF_ERROR(ExpectMap(cs, where + ".containers"));
      for (auto it = cs.begin(); it != cs.end(); ++it) {
        PrContainerExpect c;
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(it->first, "container name", &c.name));
        c.loc = Loc(it->first);
        const YAML::Node d = it->second;
        if (d.IsScalar() && d.Scalar() == "none") {
          c.no_devices = true;
        } else if (!d.IsNull()) {
          DEVMGR_RETURN_IF_ERROR(ExpectMap(
              d, fmt::format("container '{}' (resource -> count, ids or a mapping; or none)", c.name)));
          for (auto dt = d.begin(); dt != d.end(); ++dt) {
            DeviceExpect de;
            DEVMGR_RETURN_IF_ERROR(ParseDeviceExpect(dt->first, dt->second, &de));
            c.devices.push_back(std::move(de));
          }
        }
        p->containers.push_back(std::move(c));
      }
    }
    return absl::OkStatus();
  }

  absl::Status ParseCheckpointExpect(const YAML::Node& n, CheckpointExpect* c) const {
    c->loc = Loc(n);
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, "expect.checkpoint"));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(n, kCheckpointKeys, "expect.checkpoint"));
    if (n["exists"]) DEVMGR_RETURN_IF_ERROR(OptBool(n["exists"], "exists", &c->exists));
    if (n["valid"]) DEVMGR_RETURN_IF_ERROR(OptBool(n["valid"], "valid", &c->valid));
    if (n["entry_count"]) {
      DEVMGR_RETURN_IF_ERROR(OptInt(n["entry_count"], "entry_count", 0, &c->entry_count));
    }
    if (n["entries"] && n["entries_exact"]) {
      return Error(n["entries_exact"], "give entries or entries_exact, not both");
    }
    const YAML::Node entries = n["entries_exact"] ? n["entries_exact"] : n["entries"];
    c->entries_exact = static_cast<bool>(n["entries_exact"]);
    if (entries) {
      DEVMGR_RETURN_IF_ERROR(ExpectSeq(entries, "checkpoint entries"));
      for (const YAML::Node& e : entries) {
        DEVMGR_RETURN_IF_ERROR(ExpectMap(e, "a checkpoint entry"));
        DEVMGR_RETURN_IF_ERROR(CheckKeys(e, kEntryKeys, "a checkpoint entry"));
        CheckpointEntryExpect ce;
        ce.loc = Loc(e);
        if (!e["pod"] || !e["container"] || !e["resource"]) {
          return Error(e, "a checkpoint entry needs pod, container and resource");
        }
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(e["pod"], "pod", &ce.pod));
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(e["container"], "container", &ce.container));
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(e["resource"], "resource", &ce.resource));
        if (e["devices"]) DEVMGR_RETURN_IF_ERROR(OptStringList(e["devices"], "devices", &ce.devices));
        c->entries.push_back(std::move(ce));
      }
    }
    if (n["registered"]) {
      DEVMGR_RETURN_IF_ERROR(ExpectMap(n["registered"], "checkpoint registered"));
      std::map<std::string, std::vector<std::string>> reg;
      for (auto it = n["registered"].begin(); it != n["registered"].end(); ++it) {
        std::string r;
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(it->first, "resource name", &r));
        DEVMGR_RETURN_IF_ERROR(StringList(it->second, "registered devices", &reg[r]));
      }
      c->registered = std::move(reg);
    }
    return absl::OkStatus();
  }

  absl::Status Method(const YAML::Node& n, std::string* out) const {
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(n, "method", out));
    if (Contains(kMethods, *out)) return absl::OkStatus();
    std::string msg = fmt::format("unknown method '{}'", *out);
    const std::string guess = SpellCheck(*out, kMethods);
    if (!guess.empty()) msg += fmt::format(" (did you mean '{}'?)", guess);
    return Error(n, msg);
  }

  absl::Status ParseCalls(const Scenario& sc, const YAML::Node& k, const YAML::Node& v,
                          CallsExpect* c) const {
    c->loc = Loc(k);
    DEVMGR_RETURN_IF_ERROR(PluginRef(sc, k, &c->plugin));
    const PluginSpec* p = FindPlugin(sc, c->plugin);
    if (p->sample_plugin_config.empty() && p->call_log.empty()) {
      return Error(k, fmt::format("plugin '{}' has no call log (only sample_plugin plugins, or "
                                  "plugins with call_log:, record calls)",
                                  c->plugin));
    }
    const std::string where = fmt::format("calls of '{}'", c->plugin);
    if (v.IsSequence()) return ParseSequence(v, c);
    DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where + " (a list of calls or a mapping)"));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, kCallsKeys, where));
    if (v["since"]) {
      std::string s;
      DEVMGR_RETURN_IF_ERROR(String(v["since"], "since", &s));
      if (s != "step" && s != "start") return Error(v["since"], "since must be step or start");
      c->since_start = s == "start";
    }
    if (v["exact"]) DEVMGR_RETURN_IF_ERROR(Bool(v["exact"], "exact", &c->exact));
    if (v["methods"]) {
      DEVMGR_RETURN_IF_ERROR(ExpectSeq(v["methods"], "methods"));
      for (const YAML::Node& m : v["methods"]) {
        std::string s;
        DEVMGR_RETURN_IF_ERROR(Method(m, &s));
        c->methods.push_back(s);
      }
    }
    if (v["sequence"]) DEVMGR_RETURN_IF_ERROR(ParseSequence(v["sequence"], c));
    if (v["counts"]) {
      DEVMGR_RETURN_IF_ERROR(ExpectMap(v["counts"], "counts"));
      for (auto it = v["counts"].begin(); it != v["counts"].end(); ++it) {
        std::string m;
        DEVMGR_RETURN_IF_ERROR(Method(it->first, &m));
        DEVMGR_RETURN_IF_ERROR(Int(it->second, "count", 0, &c->counts[m]));
      }
    }
    if (c->sequence.empty() && c->counts.empty()) {
      return Error(v, fmt::format("{} needs sequence or counts", where));
    }
    return absl::OkStatus();
  }

  absl::Status ParseSequence(const YAML::Node& v, CallsExpect* c) const {
    DEVMGR_RETURN_IF_ERROR(ExpectSeq(v, "sequence"));
    for (const YAML::Node& e : v) {
      CallExpect ce;
      ce.loc = Loc(e);
      if (e.IsScalar()) {
        DEVMGR_RETURN_IF_ERROR(Method(e, &ce.method));
      } else {
        DEVMGR_RETURN_IF_ERROR(ExpectMap(e, "a call (a method name or {method, args})"));
        DEVMGR_RETURN_IF_ERROR(CheckKeys(e, {"method", "args"}, "a call"));
        if (!e["method"]) return Error(e, "a call needs method");
        DEVMGR_RETURN_IF_ERROR(Method(e["method"], &ce.method));
        if (e["args"]) {
          nlohmann::json j;
          DEVMGR_RETURN_IF_ERROR(ToJson(e["args"], &j));
          ce.args = std::move(j);
        }
      }
      c->sequence.push_back(std::move(ce));
    }
    return absl::OkStatus();
  }

  const std::string text_;
  const std::string file_;
  const std::vector<std::string> lines_;
};

}  // namespace

absl::StatusOr<Scenario> ParseScenario(const std::string& text, const std::string& filename) {
  try {
    return Parser(text, filename).Parse();
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        fmt::format("{}:{}:{}: {}", filename, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

absl::StatusOr<Scenario> LoadScenario(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(fmt::format("{}: {}", path, std::strerror(errno)));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseScenario(ss.str(), path);
}

}  // namespace devmgr::scenario
