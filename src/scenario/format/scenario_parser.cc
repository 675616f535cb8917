// Scenarios: the top level, node, timeouts, plugins and steps (the `expect:`
// blocks are read by expect_parser.cc). Every YAML exception is caught here
// and turned into "file:line:col: ...".
#include "scenario/format/scenario_parser.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "apiserver/faults.h"
#include "common/status_util.h"
#include "fmt/format.h"
#include "kubelet/feature_gates.h"
#include "kubelet/profile.h"
#include "plugin/config.h"
#include "pod/manifest_parser.h"
#include "scenario/expect/expect_parser.h"
#include "scenario/format/scenario_reader.h"
#include "yaml-cpp/yaml.h"

namespace devmgr::scenario {
namespace {

using yaml::Contains;

const Keys kTopKeys = {"name",     "description", "applies_to", "node",
                       "timeouts", "plugins",     "api_faults", "steps"};
const Keys kNodeKeys = {
    "kubelet_version",   "kubelet_versions", "dir",          "plugins_registry", "fsync",
    "max_recv_msg_size", "numa_nodes",       "dial_timeout", "numa_distances",   "topology_manager",
    "hint_providers",    "feature_gates"};
const Keys kTimeoutKeys = {"step", "wait", "expect"};
const Keys kPluginKeys = {"name",
                          "command",
                          "args",
                          "sample_plugin",
                          "external",
                          "env",
                          "working_dir",
                          "private_mount",
                          "binds",
                          "start",
                          "resource",
                          "socket",
                          "wait_for_registration",
                          "call_log",
                          "control",
                          "dra_driver"};
const Keys kStepCommonKeys = {"name", "versions", "timeout", "expect", "expect_for", "capture"};
const Keys kStepActions = {"admit",
                           "delete_pod",
                           "set_phase",
                           "restart_container",
                           "restart_kubelet",
                           "reboot_node",
                           "stop_kubelet",
                           "start_kubelet",
                           "start_plugin",
                           "stop_plugin",
                           "kill_plugin",
                           "pause_plugin",
                           "resume_plugin",
                           "restart_plugin",
                           "advance_clock",
                           "node_status",
                           "wait_registration",
                           "wait_devices",
                           "set_health",
                           "control",
                           "delete_checkpoint",
                           "truncate_checkpoint",
                           "corrupt_checkpoint",
                           "write_checkpoint",
                           "run",
                           "apply",
                           "delete_object",
                           "wait_driver",
                           "api_fault",
                           "check"};
const StepKind kStepKinds[] = {StepKind::kAdmit,
                               StepKind::kDeletePod,
                               StepKind::kSetPhase,
                               StepKind::kRestartContainer,
                               StepKind::kRestartKubelet,
                               StepKind::kRebootNode,
                               StepKind::kStopKubelet,
                               StepKind::kStartKubelet,
                               StepKind::kStartPlugin,
                               StepKind::kStopPlugin,
                               StepKind::kKillPlugin,
                               StepKind::kPausePlugin,
                               StepKind::kResumePlugin,
                               StepKind::kRestartPlugin,
                               StepKind::kAdvanceClock,
                               StepKind::kNodeStatus,
                               StepKind::kWaitRegistration,
                               StepKind::kWaitDevices,
                               StepKind::kSetHealth,
                               StepKind::kControl,
                               StepKind::kDeleteCheckpoint,
                               StepKind::kTruncateCheckpoint,
                               StepKind::kCorruptCheckpoint,
                               StepKind::kWriteCheckpoint,
                               StepKind::kRun,
                               StepKind::kApply,
                               StepKind::kDeleteObject,
                               StepKind::kWaitDriver,
                               StepKind::kApiFault,
                               StepKind::kCheck};

Keys Concat(Keys a, const Keys& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
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

class Parser : public ScenarioReader {
 public:
  Parser(std::string text, std::string file)
      : ScenarioReader(std::move(file)), text_(std::move(text)), lines_(SplitLines(text_)) {}

  absl::StatusOr<Scenario> Parse() {
    YAML::Node root;
    try {
      root = YAML::Load(text_);
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(
          fmt::format("{}:{}:{}: {}", file(), e.mark.line + 1, e.mark.column + 1, e.msg));
    }
    Scenario sc;
    sc.file = file();
    sc.dir = DirName(file());
    sc.name = BaseNameNoExt(file());
    if (!root.IsMap()) return Error(root, "a scenario must be a mapping (with steps:)");
    DEVMGR_RETURN_IF_ERROR(CheckKeys(root, kTopKeys, "a scenario"));
    if (root["name"]) DEVMGR_RETURN_IF_ERROR(String(root["name"], "name", &sc.name));
    if (root["description"]) {
      DEVMGR_RETURN_IF_ERROR(String(root["description"], "description", &sc.description));
    }
    if (root["applies_to"]) {
      DEVMGR_RETURN_IF_ERROR(Versions(root["applies_to"], "applies_to", &sc.applies_to));
    }
    if (root["node"]) DEVMGR_RETURN_IF_ERROR(ParseNode(root["node"], &sc.node));
    if (root["timeouts"]) DEVMGR_RETURN_IF_ERROR(ParseTimeouts(root["timeouts"], &sc.timeouts));
    if (root["plugins"]) DEVMGR_RETURN_IF_ERROR(ParsePlugins(root["plugins"], sc));
    if (root["api_faults"]) {
      DEVMGR_RETURN_IF_ERROR(ApiFaults(root["api_faults"], "api_faults", &sc.api_faults));
    }
    if (!root["steps"]) return Error(root, "a scenario needs steps:");
    DEVMGR_RETURN_IF_ERROR(ExpectSeq(root["steps"], "steps"));
    for (const YAML::Node& s : root["steps"]) {
      Step step;
      DEVMGR_RETURN_IF_ERROR(ParseStep(s, sc, &step));
      sc.steps.push_back(std::move(step));
    }
    // DRA drivers register through the plugin watcher.
    if (sc.UsesDra()) sc.node.plugins_registry = true;
    return sc;
  }

 private:
  // ---- helpers ----
  absl::Status Version(const YAML::Node& n, const std::string& where, std::string* out) const {
    std::string v;
    DEVMGR_RETURN_IF_ERROR(String(n, where, &v));
    absl::StatusOr<Profile> p = ProfileForVersion(v);
    if (!p.ok())
      return Error(n, fmt::format("{}: {}", where, std::string(std::string(p.status().message()))));
    *out = p->name;
    return absl::OkStatus();
  }
  // A version list: a scalar or a sequence of entries, each a version, a
  // range ("1.34-1.36") or "all" (kubelet/profile.h ExpandVersionList).
  absl::Status Versions(const YAML::Node& n, const std::string& where,
                        std::vector<std::string>* out) const {
    auto one = [&](const YAML::Node& e) -> absl::Status {
      std::string v;
      DEVMGR_RETURN_IF_ERROR(String(e, where, &v));
      absl::StatusOr<std::vector<std::string>> vs = ExpandVersionList(v);
      if (!vs.ok())
        return Error(e, fmt::format("{}: {}", where, std::string(vs.status().message())));
      for (const std::string& x : *vs) {
        if (std::find(out->begin(), out->end(), x) == out->end()) out->push_back(x);
      }
      return absl::OkStatus();
    };
    if (n.IsScalar()) return one(n);
    DEVMGR_RETURN_IF_ERROR(ExpectSeq(n, where));
    for (const YAML::Node& e : n) DEVMGR_RETURN_IF_ERROR(one(e));
    return absl::OkStatus();
  }

  // The text of an inline block `value` (the value of key `key`), with every
  // other line blanked so that positions in it are positions in the file.
  std::string BlockText(const YAML::Node& key, const YAML::Node& value) const {
    if (value.Style() == YAML::EmitterStyle::Flow) return FlowText(value);
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

  // The text of a flow-style value (`{...}` or `[...]`, possibly over
  // several lines), positioned as in the file: up to its closing bracket.
  std::string FlowText(const YAML::Node& value) const {
    const int vline = value.Mark().line;
    const int vcol = value.Mark().column;
    std::string out;
    for (int i = 0; i < vline && i < static_cast<int>(lines_.size()); ++i) out += "\n";
    int depth = 0;
    char quote = 0;
    for (size_t i = vline; i < lines_.size(); ++i) {
      const std::string& l = lines_[i];
      size_t j = i == static_cast<size_t>(vline) ? std::min<size_t>(vcol, l.size()) : 0;
      out += std::string(j, ' ');
      for (; j < l.size(); ++j) {
        const char c = l[j];
        out += c;
        if (quote != 0) {
          if (c == quote) quote = 0;
          continue;
        }
        if (c == '"' || c == '\'') {
          quote = c;
        } else if (c == '#' && (j == 0 || l[j - 1] == ' ')) {
          out.pop_back();
          break;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if ((c == '}' || c == ']') && --depth == 0) {
          return out + "\n";
        }
      }
      out += "\n";
    }
    return out;
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
    if (n["dial_timeout"]) {
      DEVMGR_RETURN_IF_ERROR(Duration(n["dial_timeout"], "node.dial_timeout", &node->dial_timeout));
    }
    DEVMGR_RETURN_IF_ERROR(ParseNuma(n, node));
    if (n["topology_manager"]) {
      DEVMGR_RETURN_IF_ERROR(ParseTopologyManager(n["topology_manager"], node));
    }
    if (n["feature_gates"]) {
      DEVMGR_RETURN_IF_ERROR(
          String(n["feature_gates"], "node.feature_gates", &node->feature_gates));
      // The version is not known here (a scenario runs at several): each run
      // applies the spec to its version's gates (ScenarioProfile).
      if (absl::Status s = ValidateFeatureGateSpec(node->feature_gates); !s.ok()) {
        return Error(n["feature_gates"], "node.feature_gates: " + std::string(s.message()));
      }
    }
    if (n["hint_providers"]) {
      DEVMGR_RETURN_IF_ERROR(ExpectSeq(n["hint_providers"], "node.hint_providers"));
      for (const YAML::Node& p : n["hint_providers"]) {
        HintProviderSpec spec;
        DEVMGR_RETURN_IF_ERROR(ParseHintProvider(p, &spec));
        node->hint_providers.push_back(std::move(spec));
      }
    }
    return absl::OkStatus();
  }

  // node.numa_nodes and node.numa_distances.
  absl::Status ParseNuma(const YAML::Node& n, NodeSpec* node) const {
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
    return absl::OkStatus();
  }

  // node.topology_manager: {policy, scope, policy_options}.
  absl::Status ParseTopologyManager(const YAML::Node& t, NodeSpec* node) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(t, "node.topology_manager"));
    DEVMGR_RETURN_IF_ERROR(
        CheckKeys(t, {"policy", "scope", "policy_options"}, "node.topology_manager"));
    if (t["policy"]) {
      DEVMGR_RETURN_IF_ERROR(String(t["policy"], "policy", &node->topology_policy));
      static const Keys kPolicies = {"none", "best-effort", "restricted", "single-numa-node"};
      if (!Contains(kPolicies, node->topology_policy)) {
        return UnknownName(
            t["policy"], fmt::format("unknown topology manager policy '{}'", node->topology_policy),
            node->topology_policy, kPolicies);
      }
    }
    if (t["scope"]) {
      DEVMGR_RETURN_IF_ERROR(String(t["scope"], "scope", &node->topology_scope));
      if (node->topology_scope != "container" && node->topology_scope != "pod") {
        return Error(t["scope"],
                     fmt::format("scope must be container or pod, not '{}'", node->topology_scope));
      }
    }
    if (t["policy_options"]) {
      DEVMGR_RETURN_IF_ERROR(
          StringMap(t["policy_options"], "policy_options", &node->topology_policy_options));
    }
    return absl::OkStatus();
  }

  // One of node.hint_providers: {name, hints, containers, pod}.
  absl::Status ParseHintProvider(const YAML::Node& p, HintProviderSpec* out) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(p, "a hint provider"));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(p, {"name", "hints", "containers", "pod"}, "a hint provider"));
    HintProviderSpec& spec = *out;
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
    const int kinds =
        (p["command"] ? 1 : 0) + (p["sample_plugin"] ? 1 : 0) + (p["external"] ? 1 : 0);
    if (kinds != 1) {
      return Error(p, fmt::format("plugin '{}' needs exactly one of command, sample_plugin or "
                                  "external",
                                  spec->name));
    }
    DEVMGR_RETURN_IF_ERROR(ParsePluginSource(p, spec));
    DEVMGR_RETURN_IF_ERROR(ParsePluginProcess(p, spec));
    if (p["socket"]) {
      if (!spec->external) return Error(p["socket"], "socket applies to external plugins only");
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(p["socket"], "socket", &spec->socket));
    }
    if (spec->external) {
      if (spec->resource.empty()) {
        return Error(p, fmt::format("external plugin '{}' needs resource", spec->name));
      }
      if (p["start"] || p["env"] || p["working_dir"] || p["private_mount"]) {
        return Error(p,
                     "start, env, working_dir and private_mount do not apply to external "
                     "plugins");
      }
    }
    if (p["wait_for_registration"]) {
      DEVMGR_RETURN_IF_ERROR(
          Bool(p["wait_for_registration"], "wait_for_registration", &spec->wait_for_registration));
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
    if (p["dra_driver"]) {
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(p["dra_driver"], "dra_driver", &spec->dra_driver));
      if (!p["command"]) {
        return Error(p["dra_driver"],
                     "a dra_driver plugin needs command (the driver's command line)");
      }
      if (p["resource"]) {
        return Error(p["resource"], "resource applies to device plugins, not to a dra_driver");
      }
      spec->reregisters = true;
    }
    return absl::OkStatus();
  }

  // What runs: command (+ args), sample_plugin (its config, checked here), or
  // external; the resource.
  absl::Status ParsePluginSource(const YAML::Node& p, PluginSpec* spec) const {
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
      absl::StatusOr<plugin::Config> cfg = plugin::ParseConfig(spec->sample_plugin_config, file());
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
    return absl::OkStatus();
  }

  // How the process runs: env, working_dir, private_mount (+ binds), start.
  absl::Status ParsePluginProcess(const YAML::Node& p, PluginSpec* spec) const {
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
    return absl::OkStatus();
  }

  // ---- steps ----
  absl::Status ParseStep(const YAML::Node& s, const Scenario& sc, Step* step) const {
    step->loc = Loc(s);
    if (!s.IsMap()) {
      return Error(s, "a step must be a mapping with one action, e.g. '- admit: pod.yaml'");
    }
    DEVMGR_RETURN_IF_ERROR(CheckKeys(s, Concat(kStepCommonKeys, kStepActions), "a step"));
    YAML::Node action_key;
    std::string action;
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string k = it->first.Scalar();
      if (!Contains(kStepActions, k)) continue;
      if (!action.empty()) {
        return Error(it->first,
                     fmt::format("a step has exactly one action; found '{}' and '{}'", action, k));
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
    if (s["expect"]) DEVMGR_RETURN_IF_ERROR(ParseExpect(*this, s["expect"], sc, &step->expect));
    if (s["expect_for"]) {
      if (!s["expect"]) return Error(s["expect_for"], "expect_for needs expect: (what must hold)");
      absl::Duration d;
      DEVMGR_RETURN_IF_ERROR(Duration(s["expect_for"], "expect_for", &d));
      step->expect_for = d;
    }
    if (s["capture"]) DEVMGR_RETURN_IF_ERROR(ParseCaptures(s["capture"], sc, step));
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

  absl::Status ParseAdmit(const YAML::Node& key, const YAML::Node& v, const Scenario& sc,
                          Step* step) const {
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
    absl::StatusOr<pod::Pod> pod = pod::ParsePodManifest(BlockText(key, v), file());
    if (!pod.ok()) return pod.status();
    step->pod = *std::move(pod);
    return absl::OkStatus();
  }

  absl::Status ParseWaitRegistration(const std::string& where, const YAML::Node& v,
                                     const Scenario& sc, Step* step) const {
    if (v.IsScalar()) return NonEmptyString(v, "resource", &step->resource);
    DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, {"resource", "plugin", "count"}, where));
    if (v["plugin"]) DEVMGR_RETURN_IF_ERROR(PluginRef(sc, v["plugin"], &step->plugin));
    if (v["resource"]) {
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(v["resource"], "resource", &step->resource));
    } else if (!step->plugin.empty()) {
      step->resource = FindPlugin(sc, step->plugin)->resource;
      if (step->resource.empty()) {
        return Error(
            v, fmt::format("plugin '{}' has no known resource; give resource:", step->plugin));
      }
    } else {
      return Error(v, "wait_registration needs resource or plugin");
    }
    if (v["count"]) DEVMGR_RETURN_IF_ERROR(OptInt(v["count"], "count", 1, &step->count));
    return absl::OkStatus();
  }

  absl::Status ParseWaitDevices(const std::string& where, const YAML::Node& v, Step* step) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, {"resource", "capacity", "allocatable", "healthy"}, where));
    if (!v["resource"]) return Error(v, "wait_devices needs resource");
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(v["resource"], "resource", &step->resource));
    if (v["capacity"])
      DEVMGR_RETURN_IF_ERROR(OptInt(v["capacity"], "capacity", 0, &step->capacity));
    if (v["allocatable"]) {
      DEVMGR_RETURN_IF_ERROR(OptInt(v["allocatable"], "allocatable", 0, &step->allocatable));
    }
    if (v["healthy"]) DEVMGR_RETURN_IF_ERROR(OptInt(v["healthy"], "healthy", 0, &step->healthy));
    if (!step->capacity && !step->allocatable && !step->healthy) {
      return Error(v, "wait_devices needs capacity, allocatable or healthy");
    }
    return absl::OkStatus();
  }

  absl::Status ParseSetHealth(const std::string& where, const YAML::Node& v, const Scenario& sc,
                              Step* step) const {
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

  absl::Status ParseAction(const YAML::Node& key, const YAML::Node& v, const Scenario& sc,
                           Step* step) const {
    const std::string where = key.Scalar();
    switch (step->kind) {
      case StepKind::kAdmit:
        return ParseAdmit(key, v, sc, step);
      case StepKind::kDeletePod:
        return PodRefOrMap(v, where, {"pod"}, step);
      case StepKind::kSetPhase:
        return ParseSetPhase(where, v, step);
      case StepKind::kRestartContainer:
        DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
        DEVMGR_RETURN_IF_ERROR(PodRefOrMap(v, where, {"pod", "container"}, step));
        if (!v["container"]) return Error(v, "restart_container needs container");
        return NonEmptyString(v["container"], "container", &step->container);
      case StepKind::kStopKubelet:
        if (!v.IsNull()) return Error(v, "stop_kubelet takes no value");
        return absl::OkStatus();
      case StepKind::kRestartKubelet:
      case StepKind::kStartKubelet:
      case StepKind::kRebootNode:
        return ParseKubeletStart(where, v, step);
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
      case StepKind::kDeleteCheckpoint:
      case StepKind::kCorruptCheckpoint:
        DEVMGR_RETURN_IF_ERROR(OptionalMap(v, {"file"}, where));
        return CheckpointFileKey(v, step);
      case StepKind::kNodeStatus:
      case StepKind::kCheck:
        if (!v.IsNull()) return Error(v, fmt::format("{} takes no value", where));
        return absl::OkStatus();
      case StepKind::kWaitRegistration:
        return ParseWaitRegistration(where, v, sc, step);
      case StepKind::kWaitDevices:
        return ParseWaitDevices(where, v, step);
      case StepKind::kSetHealth:
        return ParseSetHealth(where, v, sc, step);
      case StepKind::kControl:
        return ParseControl(where, v, sc, step);
      case StepKind::kTruncateCheckpoint:
        return ParseTruncateCheckpoint(where, v, step);
      case StepKind::kWriteCheckpoint:
        if (v.IsMap() && (v["file"] || v["content"])) return ParseWriteContent(where, v, step);
        if (v.IsMap()) return ParseCheckpointSpec(v, step);
        return String(v,
                      "write_checkpoint (the file's content, {file, content}, or {entries, "
                      "registered})",
                      &step->content);
      case StepKind::kRun:
        return ParseRunStep(where, v, step);
      case StepKind::kApply:
        return ParseApply(key, v, sc, step);
      case StepKind::kDeleteObject:
        return ParseDeleteObject(where, v, step);
      case StepKind::kWaitDriver:
        return ParseWaitDriver(where, v, sc, step);
      case StepKind::kApiFault:
        return ApiFaults(v, where, &step->api_faults);
    }
    return Error(key, "unhandled step");
  }

  // restart_kubelet, start_kubelet, reboot_node: nothing, or
  // {wait_for_registration, expect_error: REGEX}.
  absl::Status ParseKubeletStart(const std::string& where, const YAML::Node& v, Step* step) const {
    DEVMGR_RETURN_IF_ERROR(OptionalMap(v, {"wait_for_registration", "expect_error"}, where));
    if (!v.IsMap()) return absl::OkStatus();
    if (v["wait_for_registration"]) {
      DEVMGR_RETURN_IF_ERROR(
          Bool(v["wait_for_registration"], "wait_for_registration", &step->wait_for_registration));
    }
    if (v["expect_error"]) {
      std::string re;
      DEVMGR_RETURN_IF_ERROR(
          NonEmptyString(v["expect_error"], "expect_error (a regular expression)", &re));
      try {
        std::regex compiled(re, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        return Error(v["expect_error"],
                     fmt::format("expect_error is not a valid regular expression: {}", e.what()));
      }
      step->expect_error = std::move(re);
    }
    return absl::OkStatus();
  }

  // The `file` key of a checkpoint step: kubelet_internal_checkpoint
  // (default) or dra_manager_state.
  absl::Status CheckpointFileKey(const YAML::Node& v, Step* step) const {
    if (!v.IsMap() || !v["file"]) return absl::OkStatus();
    std::string f;
    DEVMGR_RETURN_IF_ERROR(String(v["file"], "file", &f));
    static const Keys kFiles = {CheckpointFileName(CheckpointFile::kDeviceManager),
                                CheckpointFileName(CheckpointFile::kDra)};
    if (!Contains(kFiles, f)) {
      return UnknownName(v["file"], fmt::format("unknown checkpoint file '{}'", f), f, kFiles);
    }
    step->checkpoint_file = f == kFiles[1] ? CheckpointFile::kDra : CheckpointFile::kDeviceManager;
    return absl::OkStatus();
  }

  // truncate_checkpoint: nothing (0), BYTES, or {file, bytes}.
  absl::Status ParseTruncateCheckpoint(const std::string& where, const YAML::Node& v,
                                       Step* step) const {
    if (v.IsNull()) return absl::OkStatus();
    if (!v.IsMap()) return Int(v, "truncate_checkpoint (bytes to keep)", 0, &step->truncate_to);
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, {"file", "bytes"}, where));
    DEVMGR_RETURN_IF_ERROR(CheckpointFileKey(v, step));
    if (!v["bytes"]) return absl::OkStatus();
    return Int(v["bytes"], "bytes (to keep)", 0, &step->truncate_to);
  }

  // write_checkpoint: {file, content}: the file's bytes as given.
  absl::Status ParseWriteContent(const std::string& where, const YAML::Node& v, Step* step) const {
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, {"file", "content"}, where));
    DEVMGR_RETURN_IF_ERROR(CheckpointFileKey(v, step));
    if (!v["content"]) {
      return Error(v, "write_checkpoint with file needs content (the file's bytes, as text)");
    }
    return String(v["content"], "content", &step->content);
  }

  // ---- DRA steps ----

  // The API objects of one document list (JSON text), each checked: a
  // resource.k8s.io/v1 ResourceClaim, ResourceClaimTemplate or DeviceClass
  // with a name.
  absl::Status ApiObjects(const YAML::Node& at, const std::vector<std::string>& docs,
                          const std::string& source, Step* step) const {
    static const Keys kKinds = {"ResourceClaim", "ResourceClaimTemplate", "DeviceClass"};
    for (const std::string& text : docs) {
      nlohmann::json o = nlohmann::json::parse(text, nullptr, false);
      if (!o.is_object()) return Error(at, source + ": an API object must be a mapping");
      const std::string kind = o.value("kind", "");
      if (!Contains(kKinds, kind)) {
        return UnknownName(
            at,
            fmt::format("{}: apply takes ResourceClaim, ResourceClaimTemplate and DeviceClass "
                        "objects, not kind '{}'",
                        source, kind),
            kind, kKinds);
      }
      if (o.value("apiVersion", "") != "resource.k8s.io/v1") {
        return Error(at, fmt::format("{}: {} needs apiVersion resource.k8s.io/v1", source, kind));
      }
      if (!o.contains("metadata") || !o["metadata"].is_object() ||
          !o["metadata"].contains("name") || !o["metadata"]["name"].is_string()) {
        return Error(at, fmt::format("{}: {} needs metadata.name", source, kind));
      }
      step->objects.push_back(std::move(o));
    }
    return absl::OkStatus();
  }

  // apply: FILE (every document), an inline object, or a list of files.
  absl::Status ParseApply(const YAML::Node& key, const YAML::Node& v, const Scenario& sc,
                          Step* step) const {
    auto file_docs = [&](const YAML::Node& n) -> absl::Status {
      std::string path;
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(n, "apply (a manifest file)", &path));
      if (path[0] != '/') path = sc.dir + "/" + path;
      absl::StatusOr<std::string> text = pod::ReadManifestFile(path);
      if (!text.ok()) return Error(n, "apply: " + std::string(text.status().message()));
      absl::StatusOr<std::vector<std::string>> docs = pod::YamlDocumentsAsJson(*text, path);
      if (!docs.ok()) return docs.status();
      if (docs->empty()) return Error(n, fmt::format("apply: {} holds no object", path));
      return ApiObjects(n, *docs, path, step);
    };
    if (v.IsScalar()) return file_docs(v);
    if (v.IsSequence()) {
      if (v.size() == 0) return Error(v, "apply needs at least one manifest file");
      for (const YAML::Node& f : v) DEVMGR_RETURN_IF_ERROR(file_docs(f));
      return absl::OkStatus();
    }
    if (!v.IsMap()) return Error(v, "apply takes a manifest file, a list of them or one object");
    absl::StatusOr<std::vector<std::string>> docs =
        pod::YamlDocumentsAsJson(BlockText(key, v), file());
    if (!docs.ok()) return docs.status();
    return ApiObjects(v, *docs, file(), step);
  }

  // delete_object: {kind, name, namespace (default "default")}.
  absl::Status ParseDeleteObject(const std::string& where, const YAML::Node& v, Step* step) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, {"kind", "name", "namespace"}, where));
    if (!v["kind"] || !v["name"]) return Error(v, "delete_object needs kind and name");
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(v["kind"], "kind", &step->object_kind));
    static const Keys kKinds = {"ResourceClaim", "ResourceClaimTemplate", "DeviceClass"};
    if (!Contains(kKinds, step->object_kind)) {
      return UnknownName(v["kind"], fmt::format("unknown kind '{}'", step->object_kind),
                         step->object_kind, kKinds);
    }
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(v["name"], "name", &step->object_name));
    if (step->object_kind == "DeviceClass") {
      if (v["namespace"]) return Error(v["namespace"], "a DeviceClass has no namespace");
    } else {
      step->object_namespace = "default";
      if (v["namespace"]) {
        DEVMGR_RETURN_IF_ERROR(
            NonEmptyString(v["namespace"], "namespace", &step->object_namespace));
      }
    }
    return absl::OkStatus();
  }

  // wait_driver: PLUGIN or DRIVER, or {plugin | driver, devices: N}.
  absl::Status ParseWaitDriver(const std::string& where, const YAML::Node& v, const Scenario& sc,
                               Step* step) const {
    auto by_name = [&](const YAML::Node& n) -> absl::Status {
      std::string name;
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(n, "wait_driver", &name));
      for (const PluginSpec& p : sc.plugins) {
        if (p.name == name && !p.dra_driver.empty()) {
          step->plugin = p.name;
          step->driver = p.dra_driver;
          return absl::OkStatus();
        }
      }
      step->driver = name;
      return absl::OkStatus();
    };
    if (v.IsScalar()) return by_name(v);
    DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, {"plugin", "driver", "devices"}, where));
    if (v["plugin"] && v["driver"]) return Error(v, "give plugin or driver, not both");
    if (v["plugin"]) {
      DEVMGR_RETURN_IF_ERROR(PluginRef(sc, v["plugin"], &step->plugin));
      step->driver = FindPlugin(sc, step->plugin)->dra_driver;
      if (step->driver.empty()) {
        return Error(v["plugin"], fmt::format("plugin '{}' is no dra_driver", step->plugin));
      }
    } else if (v["driver"]) {
      DEVMGR_RETURN_IF_ERROR(by_name(v["driver"]));
    } else {
      return Error(v, "wait_driver needs plugin or driver");
    }
    if (v["devices"]) DEVMGR_RETURN_IF_ERROR(Int(v["devices"], "devices", 0, &step->min_devices));
    return absl::OkStatus();
  }

  // api_faults, api_fault: a fault SPEC or a list of them, each one that
  // apiserver::ParseFault takes.
  absl::Status ApiFaults(const YAML::Node& v, const std::string& where,
                         std::vector<std::string>* out) const {
    auto one = [&](const YAML::Node& n) -> absl::Status {
      std::string spec;
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(n, where + " (a fault SPEC)", &spec));
      absl::StatusOr<apiserver::Fault> f = apiserver::ParseFault(spec);
      if (!f.ok()) return Error(n, fmt::format("{}: {}", where, std::string(f.status().message())));
      out->push_back(std::move(spec));
      return absl::OkStatus();
    };
    if (!v.IsSequence()) return one(v);
    if (v.size() == 0) return Error(v, where + " needs at least one fault SPEC");
    for (const YAML::Node& n : v) DEVMGR_RETURN_IF_ERROR(one(n));
    return absl::OkStatus();
  }

  // set_phase: {pod, phase: Succeeded|Failed}.
  absl::Status ParseSetPhase(const std::string& where, const YAML::Node& v, Step* step) const {
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

  // control: {plugin, command: one line}.
  absl::Status ParseControl(const std::string& where, const YAML::Node& v, const Scenario& sc,
                            Step* step) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, {"plugin", "command"}, where));
    if (!v["plugin"] || !v["command"]) return Error(v, "control needs plugin and command");
    DEVMGR_RETURN_IF_ERROR(PluginRef(sc, v["plugin"], &step->plugin));
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(v["command"], "command", &step->control_line));
    if (step->control_line.find('\n') != std::string::npos) {
      return Error(v["command"], "command must be one line");
    }
    return ControlCapable(sc, v["plugin"], step->plugin);
  }

  // run: COMMAND, or {command, expect_exit}.
  absl::Status ParseRunStep(const std::string& where, const YAML::Node& v, Step* step) const {
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

  // capture: {NAME: {pod, container, resource[, from: checkpoint]} |
  //                 {resource, set: healthy|unhealthy|allocated|devices}}
  absl::Status ParseCaptures(const YAML::Node& n, const Scenario& sc, Step* step) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, "capture (name -> what to capture)"));
    for (auto it = n.begin(); it != n.end(); ++it) {
      CaptureSpec c;
      c.loc = Loc(it->first);
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(it->first, "capture name", &c.name));
      if (c.name[0] == '$')
        return Error(it->first, "name a capture without '$' ($NAME refers to it)");
      for (const Step& st : sc.steps) {
        for (const CaptureSpec& x : st.captures) {
          if (x.name == c.name) {
            return Error(it->first, fmt::format("capture '{}' is already taken at {}", c.name,
                                                x.loc.ToString()));
          }
        }
      }
      const YAML::Node v = it->second;
      const std::string where = fmt::format("capture '{}'", c.name);
      DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
      DEVMGR_RETURN_IF_ERROR(CheckKeys(v, {"pod", "container", "resource", "set", "from"}, where));
      if (!v["resource"]) return Error(v, where + " needs resource");
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(v["resource"], "resource", &c.resource));
      if (v["set"]) {
        if (v["pod"] || v["container"] || v["from"]) {
          return Error(v["set"], where + ": set (of a resource) goes without pod, container, from");
        }
        DEVMGR_RETURN_IF_ERROR(String(v["set"], "set", &c.set));
        static const Keys kSets = {"healthy", "unhealthy", "allocated", "devices"};
        if (!Contains(kSets, c.set)) {
          return UnknownName(v["set"], fmt::format("unknown set '{}'", c.set), c.set, kSets);
        }
      } else {
        if (!v["pod"] || !v["container"]) {
          return Error(v, where + " needs pod and container (a container's devices) or set");
        }
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(v["pod"], "pod", &c.pod));
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(v["container"], "container", &c.container));
        if (v["from"]) {
          std::string from;
          DEVMGR_RETURN_IF_ERROR(String(v["from"], "from", &from));
          if (from != "allocation" && from != "checkpoint") {
            return Error(v["from"], "from must be allocation or checkpoint");
          }
          c.checkpoint = from == "checkpoint";
        }
      }
      step->captures.push_back(std::move(c));
    }
    return absl::OkStatus();
  }

  // write_checkpoint: {format: v1|v2, entries: [{pod, container, resource,
  // devices: [ids] | {NUMA: [ids]}, alloc_resp}], registered: {resource:
  // [ids]}, checksum: wrong | NUMBER}
  absl::Status ParseCheckpointSpec(const YAML::Node& v, Step* step) const {
    const std::string where = "write_checkpoint";
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, {"format", "entries", "registered", "checksum"}, where));
    CheckpointSpec cs;
    if (v["format"]) {
      std::string f;
      DEVMGR_RETURN_IF_ERROR(String(v["format"], "format", &f));
      if (f != "v1" && f != "v2") return Error(v["format"], "format must be v1 or v2");
      cs.v1 = f == "v1";
    }
    if (v["entries"]) {
      DEVMGR_RETURN_IF_ERROR(ExpectSeq(v["entries"], "write_checkpoint entries"));
      for (const YAML::Node& e : v["entries"]) {
        DEVMGR_RETURN_IF_ERROR(ExpectMap(e, "an entry"));
        DEVMGR_RETURN_IF_ERROR(
            CheckKeys(e, {"pod", "container", "resource", "devices", "alloc_resp"}, "an entry"));
        if (!e["pod"] || !e["container"] || !e["resource"] || !e["devices"]) {
          return Error(e, "an entry needs pod, container, resource and devices");
        }
        CheckpointEntrySpec x;
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(e["pod"], "pod", &x.pod));
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(e["container"], "container", &x.container));
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(e["resource"], "resource", &x.resource));
        const YAML::Node d = e["devices"];
        if (d.IsSequence()) {
          DEVMGR_RETURN_IF_ERROR(StringList(d, "devices", &x.devices[-1]));
        } else {
          DEVMGR_RETURN_IF_ERROR(ExpectMap(d, "devices (a list, or NUMA node -> list)"));
          for (auto it = d.begin(); it != d.end(); ++it) {
            int64_t numa = 0;
            DEVMGR_RETURN_IF_ERROR(Int(it->first, "NUMA node", -1, &numa));
            DEVMGR_RETURN_IF_ERROR(StringList(it->second, "devices", &x.devices[numa]));
          }
        }
        if (e["alloc_resp"]) {
          std::string a;
          DEVMGR_RETURN_IF_ERROR(String(e["alloc_resp"], "alloc_resp (base64)", &a));
          x.alloc_resp = a;
        }
        cs.entries.push_back(std::move(x));
      }
    }
    if (v["registered"]) {
      DEVMGR_RETURN_IF_ERROR(ExpectMap(v["registered"], "registered (resource -> ids)"));
      for (auto it = v["registered"].begin(); it != v["registered"].end(); ++it) {
        std::string r;
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(it->first, "resource name", &r));
        DEVMGR_RETURN_IF_ERROR(StringList(it->second, "registered devices", &cs.registered[r]));
      }
    }
    if (v["checksum"]) {
      const YAML::Node c = v["checksum"];
      if (c.IsScalar() && c.Scalar() == "wrong") {
        cs.wrong_checksum = true;
      } else {
        int64_t n = 0;
        DEVMGR_RETURN_IF_ERROR(Int(c, "checksum (wrong or a number)", 0, &n));
        cs.checksum = static_cast<uint64_t>(n);
      }
    }
    step->checkpoint = std::move(cs);
    return absl::OkStatus();
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

  const std::string text_;
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
