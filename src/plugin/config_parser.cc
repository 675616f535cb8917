// YAML -> Config (read with yaml::TypedReader). The only file of the plugin
// that includes yaml-cpp; every yaml-cpp exception is caught here and turned
// into "file:line:col: ..." .
#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/status/status.h"
#include "common/status_util.h"
#include "fmt/format.h"
#include "plugin/config.h"
#include "plugin/response_template.h"
#include "yaml-cpp/yaml.h"
#include "yaml/typed_reader.h"

namespace devmgr::plugin {
namespace {

using yaml::Keys;

// gRPC status code names, indexed by code.
const Keys& CodeNames() {
  static const Keys kNames = {"OK",
                              "CANCELLED",
                              "UNKNOWN",
                              "INVALID_ARGUMENT",
                              "DEADLINE_EXCEEDED",
                              "NOT_FOUND",
                              "ALREADY_EXISTS",
                              "PERMISSION_DENIED",
                              "RESOURCE_EXHAUSTED",
                              "FAILED_PRECONDITION",
                              "ABORTED",
                              "OUT_OF_RANGE",
                              "UNIMPLEMENTED",
                              "INTERNAL",
                              "UNAVAILABLE",
                              "DATA_LOSS",
                              "UNAUTHENTICATED"};
  return kNames;
}

// "InvalidArgument" / "invalid_argument" / "INVALID-ARGUMENT" -> "INVALID_ARGUMENT".
std::string NormalizeCodeName(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '-' || c == '_' || c == ' ') {
      out += '_';
    } else {
      if (i > 0 && std::isupper(static_cast<unsigned char>(c)) &&
          std::islower(static_cast<unsigned char>(s[i - 1]))) {
        out += '_';
      }
      out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

const Keys kFaultCommon = {"skip_calls", "times", "delay", "error", "hang", "exit"};

Keys FaultKeys(Rpc rpc) {
  Keys k = kFaultCommon;
  switch (rpc) {
    case Rpc::kGetDevicePluginOptions:
      k.push_back("empty");
      break;
    case Rpc::kListAndWatch:
      k.insert(k.end(), {"empty", "end_stream_after"});
      break;
    case Rpc::kGetPreferredAllocation:
      k.insert(k.end(), {"empty", "wrong_count"});
      break;
    case Rpc::kAllocate:
      k.insert(k.end(), {"empty", "wrong_count", "grow_on_allocate"});
      break;
    case Rpc::kPreStartContainer:
      break;
    case Rpc::kRegister:
      k.insert(k.end(), {"empty", "version", "resource", "endpoint", "type", "skip"});
      break;
  }
  return k;
}

const char* FaultSectionName(Rpc rpc) {
  switch (rpc) {
    case Rpc::kGetDevicePluginOptions:
      return "get_device_plugin_options";
    case Rpc::kListAndWatch:
      return "list_and_watch";
    case Rpc::kGetPreferredAllocation:
      return "get_preferred_allocation";
    case Rpc::kAllocate:
      return "allocate";
    case Rpc::kPreStartContainer:
      return "pre_start_container";
    case Rpc::kRegister:
      return "register";
  }
  return "";
}

class Parser : public yaml::TypedReader {
 public:
  explicit Parser(std::string source) : TypedReader(std::move(source)) {}

  absl::Status Template(const YAML::Node& n, bool per_device, const std::string& value) const {
    absl::Status s = CheckTemplate(value, per_device);
    if (!s.ok()) return Error(n, std::string(s.message()));
    return absl::OkStatus();
  }

  // A string map whose keys and values may use the per-device template.
  absl::Status TemplateMap(const YAML::Node& n, const std::string& where, bool per_device,
                           std::map<std::string, std::string>* out) const {
    return StringMap(n, where, out,
                     [&](const YAML::Node& kn, const YAML::Node& vn, const std::string& k,
                         const std::string& v) -> absl::Status {
                       DEVMGR_RETURN_IF_ERROR(Template(kn, per_device, k));
                       return Template(vn, per_device, v);
                     });
  }

  absl::Status ParseDevices(const YAML::Node& n, Config* c) const {
    DEVMGR_RETURN_IF_ERROR(ExpectSeq(n, "devices"));
    static const Keys kKeys = {"id",       "id_hex", "health",    "numa",
                               "topology", "count",  "id_prefix", "start"};
    for (const YAML::Node& d : n) {
      DEVMGR_RETURN_IF_ERROR(ExpectMap(d, "a device"));
      DEVMGR_RETURN_IF_ERROR(CheckKeys(d, kKeys, "a device"));
      DeviceConfig dev;
      if (d["health"]) DEVMGR_RETURN_IF_ERROR(String(d["health"], "health", &dev.health));
      if (d["numa"] && d["topology"]) {
        return Error(d["topology"], "give either numa or topology, not both");
      }
      if (d["numa"] && !d["numa"].IsNull()) {
        dev.has_topology = true;
        DEVMGR_RETURN_IF_ERROR(IntList(d["numa"], "numa", &dev.numa_nodes));
      }
      if (d["topology"] && !d["topology"].IsNull()) {
        const YAML::Node t = d["topology"];
        DEVMGR_RETURN_IF_ERROR(ExpectMap(t, "topology"));
        DEVMGR_RETURN_IF_ERROR(CheckKeys(t, {"nodes"}, "topology"));
        dev.has_topology = true;
        if (t["nodes"] && !t["nodes"].IsNull()) {
          DEVMGR_RETURN_IF_ERROR(IntList(t["nodes"], "topology.nodes", &dev.numa_nodes));
        }
      }
      if (d["id"] && d["id_hex"]) return Error(d["id_hex"], "give either id or id_hex, not both");
      if (d["count"]) {
        if (d["id"] || d["id_hex"]) {
          return Error(d["id"] ? d["id"] : d["id_hex"],
                       "give either id or count (with id_prefix), not both");
        }
        int64_t count = 0, start = 0;
        DEVMGR_RETURN_IF_ERROR(Int(d["count"], "count", 0, &count));
        if (count > 10'000'000) return Error(d["count"], "count must be at most 10000000");
        std::string prefix;
        if (d["id_prefix"]) DEVMGR_RETURN_IF_ERROR(String(d["id_prefix"], "id_prefix", &prefix));
        if (d["start"]) DEVMGR_RETURN_IF_ERROR(Int(d["start"], "start", 0, &start));
        for (int64_t i = 0; i < count; ++i) {
          DeviceConfig g = dev;
          g.id = prefix + std::to_string(start + i);
          c->devices.push_back(std::move(g));
        }
        continue;
      }
      if (d["id_prefix"] || d["start"]) {
        return Error(d["id_prefix"] ? d["id_prefix"] : d["start"],
                     "id_prefix and start need count");
      }
      if (d["id_hex"]) {
        // Raw bytes (YAML's "\xff" is the code point U+00FF, not the byte):
        // e.g. 677075ff is "gpu" and the byte 0xff, invalid UTF-8.
        std::string hex;
        DEVMGR_RETURN_IF_ERROR(String(d["id_hex"], "id_hex", &hex));
        if (hex.size() % 2 != 0 ||
            hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
          return Error(d["id_hex"], "id_hex must be an even number of hex digits");
        }
        for (size_t i = 0; i < hex.size(); i += 2) {
          dev.id.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
        }
        c->devices.push_back(std::move(dev));
        continue;
      }
      if (!d["id"]) return Error(d, "a device needs an id (or id_hex, or count and id_prefix)");
      DEVMGR_RETURN_IF_ERROR(String(d["id"], "id", &dev.id));
      c->devices.push_back(std::move(dev));
    }
    return absl::OkStatus();
  }

  absl::Status ParseTemplate(const YAML::Node& n, bool per_device, const std::string& where,
                             ResponseTemplate* t) const {
    if (n["envs"]) {
      DEVMGR_RETURN_IF_ERROR(TemplateMap(n["envs"], where + ".envs", per_device, &t->envs));
    }
    if (n["annotations"]) {
      DEVMGR_RETURN_IF_ERROR(
          TemplateMap(n["annotations"], where + ".annotations", per_device, &t->annotations));
    }
    if (n["cdi_devices"]) {
      DEVMGR_RETURN_IF_ERROR(StringList(n["cdi_devices"], where + ".cdi_devices", &t->cdi_devices));
      for (const YAML::Node& e : n["cdi_devices"]) {
        DEVMGR_RETURN_IF_ERROR(Template(e, per_device, e.Scalar()));
      }
    }
    if (n["mounts"]) {
      DEVMGR_RETURN_IF_ERROR(ExpectSeq(n["mounts"], where + ".mounts"));
      for (const YAML::Node& m : n["mounts"]) {
        DEVMGR_RETURN_IF_ERROR(ExpectMap(m, "a mount"));
        DEVMGR_RETURN_IF_ERROR(
            CheckKeys(m, {"container_path", "host_path", "read_only"}, "a mount"));
        MountConfig mc;
        if (m["container_path"]) {
          DEVMGR_RETURN_IF_ERROR(String(m["container_path"], "container_path", &mc.container_path));
          DEVMGR_RETURN_IF_ERROR(Template(m["container_path"], per_device, mc.container_path));
        }
        if (m["host_path"]) {
          DEVMGR_RETURN_IF_ERROR(String(m["host_path"], "host_path", &mc.host_path));
          DEVMGR_RETURN_IF_ERROR(Template(m["host_path"], per_device, mc.host_path));
        }
        if (m["read_only"])
          DEVMGR_RETURN_IF_ERROR(Bool(m["read_only"], "read_only", &mc.read_only));
        t->mounts.push_back(mc);
      }
    }
    if (n["device_specs"]) {
      DEVMGR_RETURN_IF_ERROR(ExpectSeq(n["device_specs"], where + ".device_specs"));
      for (const YAML::Node& m : n["device_specs"]) {
        DEVMGR_RETURN_IF_ERROR(ExpectMap(m, "a device spec"));
        DEVMGR_RETURN_IF_ERROR(
            CheckKeys(m, {"container_path", "host_path", "permissions"}, "a device spec"));
        DeviceSpecConfig ds;
        if (m["container_path"]) {
          DEVMGR_RETURN_IF_ERROR(String(m["container_path"], "container_path", &ds.container_path));
          DEVMGR_RETURN_IF_ERROR(Template(m["container_path"], per_device, ds.container_path));
        }
        if (m["host_path"]) {
          DEVMGR_RETURN_IF_ERROR(String(m["host_path"], "host_path", &ds.host_path));
          DEVMGR_RETURN_IF_ERROR(Template(m["host_path"], per_device, ds.host_path));
        }
        if (m["permissions"]) {
          DEVMGR_RETURN_IF_ERROR(String(m["permissions"], "permissions", &ds.permissions));
        }
        t->device_specs.push_back(ds);
      }
    }
    return absl::OkStatus();
  }

  absl::Status ParseAllocate(const YAML::Node& n, Config* c) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, "allocate"));
    static const Keys kTemplateKeys = {"envs", "mounts", "device_specs", "annotations",
                                       "cdi_devices"};
    Keys keys = kTemplateKeys;
    keys.insert(keys.end(), {"per_device", "reject_unknown_devices", "reject_unhealthy_devices"});
    DEVMGR_RETURN_IF_ERROR(CheckKeys(n, keys, "allocate"));
    DEVMGR_RETURN_IF_ERROR(ParseTemplate(n, false, "allocate", &c->allocate.per_container));
    if (n["per_device"]) {
      DEVMGR_RETURN_IF_ERROR(ExpectMap(n["per_device"], "allocate.per_device"));
      DEVMGR_RETURN_IF_ERROR(CheckKeys(n["per_device"], kTemplateKeys, "allocate.per_device"));
      DEVMGR_RETURN_IF_ERROR(
          ParseTemplate(n["per_device"], true, "allocate.per_device", &c->allocate.per_device));
    }
    if (n["reject_unknown_devices"]) {
      DEVMGR_RETURN_IF_ERROR(Bool(n["reject_unknown_devices"], "reject_unknown_devices",
                                  &c->allocate.reject_unknown_devices));
    }
    if (n["reject_unhealthy_devices"]) {
      DEVMGR_RETURN_IF_ERROR(Bool(n["reject_unhealthy_devices"], "reject_unhealthy_devices",
                                  &c->allocate.reject_unhealthy_devices));
    }
    return absl::OkStatus();
  }

  absl::Status ParseError(const YAML::Node& n, RpcError* e) const {
    if (n.IsScalar()) {
      e->code = 2;
      e->message = n.Scalar();
      return absl::OkStatus();
    }
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, "error"));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(n, {"code", "message"}, "error"));
    if (n["message"]) DEVMGR_RETURN_IF_ERROR(String(n["message"], "message", &e->message));
    if (n["code"]) {
      const YAML::Node code = n["code"];
      if (!code.IsScalar()) return Error(code, "code must be a gRPC status code name or number");
      const std::string s = code.Scalar();
      if (!s.empty() && std::isdigit(static_cast<unsigned char>(s[0]))) {
        int v = 0;
        DEVMGR_RETURN_IF_ERROR(Int32(code, "code", 0, &v));
        if (v > 16) return Error(code, "code must be between 0 and 16");
        e->code = v;
      } else {
        const Keys& names = CodeNames();
        const std::string norm = NormalizeCodeName(s);
        auto it = std::find(names.begin(), names.end(), norm);
        if (it == names.end()) {
          return UnknownName(code, fmt::format("unknown gRPC status code '{}'", s), norm, names);
        }
        e->code = static_cast<int>(it - names.begin());
      }
    }
    if (e->code == 0) return Error(n, "error code must not be OK");
    return absl::OkStatus();
  }

  absl::Status ParseFault(const YAML::Node& n, Rpc rpc, Config* c) const {
    const std::string where = fmt::format("faults.{}", FaultSectionName(rpc));
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, where));
    Keys all;
    for (int i = 0; i < kNumRpcs; ++i) {
      for (const std::string& k : FaultKeys(static_cast<Rpc>(i))) all.push_back(k);
    }
    DEVMGR_RETURN_IF_ERROR(CheckKeys(n, FaultKeys(rpc), where, all));
    FaultConfig& f = c->fault(rpc);
    if (n["skip_calls"])
      DEVMGR_RETURN_IF_ERROR(Int32(n["skip_calls"], "skip_calls", 0, &f.skip_calls));
    if (n["times"]) DEVMGR_RETURN_IF_ERROR(Int32(n["times"], "times", 0, &f.times));
    if (n["delay"]) DEVMGR_RETURN_IF_ERROR(Duration(n["delay"], "delay", &f.delay));
    if (n["error"]) {
      RpcError e;
      DEVMGR_RETURN_IF_ERROR(ParseError(n["error"], &e));
      f.error = e;
    }
    if (n["hang"]) DEVMGR_RETURN_IF_ERROR(Bool(n["hang"], "hang", &f.hang));
    if (n["exit"]) {
      int code = 0;
      DEVMGR_RETURN_IF_ERROR(Int32(n["exit"], "exit", 0, &code));
      if (code > 255) return Error(n["exit"], "exit must be between 0 and 255");
      f.exit_code = code;
    }
    if (n["empty"]) DEVMGR_RETURN_IF_ERROR(Bool(n["empty"], "empty", &f.empty));
    if (n["wrong_count"]) {
      int v = 0;
      DEVMGR_RETURN_IF_ERROR(Int32(n["wrong_count"], "wrong_count", 0, &v));
      f.wrong_count = v;
    }
    if (n["end_stream_after"]) {
      int v = 0;
      DEVMGR_RETURN_IF_ERROR(Int32(n["end_stream_after"], "end_stream_after", 0, &v));
      f.end_stream_after = v;
    }
    if (n["grow_on_allocate"]) {
      DEVMGR_RETURN_IF_ERROR(Bool(n["grow_on_allocate"], "grow_on_allocate", &f.grow_on_allocate));
    }
    if (rpc == Rpc::kRegister) {
      RegisterOverrides& o = c->register_overrides;
      auto opt = [&](const char* key, std::optional<std::string>* out) -> absl::Status {
        if (!n[key]) return absl::OkStatus();
        std::string s;
        DEVMGR_RETURN_IF_ERROR(String(n[key], key, &s));
        *out = s;
        return absl::OkStatus();
      };
      DEVMGR_RETURN_IF_ERROR(opt("version", &o.version));
      DEVMGR_RETURN_IF_ERROR(opt("resource", &o.resource));
      DEVMGR_RETURN_IF_ERROR(opt("endpoint", &o.endpoint));
      DEVMGR_RETURN_IF_ERROR(opt("type", &o.type));
      if (n["skip"]) DEVMGR_RETURN_IF_ERROR(Bool(n["skip"], "skip", &o.skip));
    }
    return absl::OkStatus();
  }

  absl::Status ParseFaults(const YAML::Node& n, Config* c) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, "faults"));
    Keys sections;
    for (int i = 0; i < kNumRpcs; ++i) sections.push_back(FaultSectionName(static_cast<Rpc>(i)));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(n, sections, "faults"));
    for (int i = 0; i < kNumRpcs; ++i) {
      const YAML::Node f = n[sections[i]];
      if (f && !f.IsNull()) DEVMGR_RETURN_IF_ERROR(ParseFault(f, static_cast<Rpc>(i), c));
    }
    return absl::OkStatus();
  }

  absl::Status ParseRegistration(const YAML::Node& n, Config* c) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, "registration"));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(n,
                                     {"mode", "reregister", "reregister_delay",
                                      "serve_before_register", "timeout", "registry_socket"},
                                     "registration"));
    RegistrationConfig& r = c->registration;
    if (n["mode"]) {
      std::string mode;
      DEVMGR_RETURN_IF_ERROR(String(n["mode"], "mode", &mode));
      if (mode == "kubelet-sock") {
        r.mode = RegistrationConfig::Mode::kKubeletSock;
      } else if (mode == "plugins-registry") {
        r.mode = RegistrationConfig::Mode::kPluginsRegistry;
      } else {
        std::string msg = fmt::format(
            "unknown registration mode '{}' (want kubelet-sock or plugins-registry)", mode);
        return Error(n["mode"], msg);
      }
    }
    if (n["reregister"]) DEVMGR_RETURN_IF_ERROR(Bool(n["reregister"], "reregister", &r.reregister));
    if (n["reregister_delay"]) {
      DEVMGR_RETURN_IF_ERROR(
          Duration(n["reregister_delay"], "reregister_delay", &r.reregister_delay));
    }
    if (n["serve_before_register"]) {
      DEVMGR_RETURN_IF_ERROR(
          Bool(n["serve_before_register"], "serve_before_register", &r.serve_before_register));
    }
    if (n["timeout"]) DEVMGR_RETURN_IF_ERROR(Duration(n["timeout"], "timeout", &r.timeout));
    if (n["registry_socket"]) {
      DEVMGR_RETURN_IF_ERROR(String(n["registry_socket"], "registry_socket", &r.registry_socket));
    }
    return absl::OkStatus();
  }

  absl::Status ParseTop(const YAML::Node& root, Config* c) const {
    if (!root.IsDefined() || root.IsNull()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: empty config (need at least resource)", file()));
    }
    DEVMGR_RETURN_IF_ERROR(ExpectMap(root, "the config"));
    DEVMGR_RETURN_IF_ERROR(
        CheckKeys(root,
                  {"resource", "socket", "devices", "options", "allocate", "preferred_allocation",
                   "registration", "list_and_watch", "faults", "health_changes"},
                  "the config"));
    if (!root["resource"]) return Error(root, "missing key 'resource'");
    DEVMGR_RETURN_IF_ERROR(String(root["resource"], "resource", &c->resource));
    if (c->resource.empty()) return Error(root["resource"], "resource must not be empty");
    if (root["socket"]) {
      DEVMGR_RETURN_IF_ERROR(String(root["socket"], "socket", &c->socket));
      if (c->socket.empty() || c->socket.find('/') != std::string::npos) {
        return Error(root["socket"], "socket must be a plain file name");
      }
    }
    if (root["devices"] && !root["devices"].IsNull()) {
      DEVMGR_RETURN_IF_ERROR(ParseDevices(root["devices"], c));
    }
    if (const YAML::Node o = root["options"]; o && !o.IsNull()) {
      DEVMGR_RETURN_IF_ERROR(ParseOptions(o, c));
    }
    if (const YAML::Node a = root["allocate"]; a && !a.IsNull()) {
      DEVMGR_RETURN_IF_ERROR(ParseAllocate(a, c));
    }
    if (const YAML::Node p = root["preferred_allocation"]; p && !p.IsNull()) {
      DEVMGR_RETURN_IF_ERROR(ParsePreferred(p, c));
    }
    if (const YAML::Node r = root["registration"]; r && !r.IsNull()) {
      DEVMGR_RETURN_IF_ERROR(ParseRegistration(r, c));
    }
    if (const YAML::Node l = root["list_and_watch"]; l && !l.IsNull()) {
      DEVMGR_RETURN_IF_ERROR(ParseListAndWatch(l, c));
    }
    if (const YAML::Node f = root["faults"]; f && !f.IsNull()) {
      DEVMGR_RETURN_IF_ERROR(ParseFaults(f, c));
    }
    if (const YAML::Node h = root["health_changes"]; h && !h.IsNull()) {
      DEVMGR_RETURN_IF_ERROR(ParseHealthChanges(h, c));
    }
    // Cross-field checks.
    const FaultConfig& reg = c->fault(Rpc::kRegister);
    if (c->registration.mode == RegistrationConfig::Mode::kKubeletSock) {
      const YAML::Node rf = root["faults"] ? root["faults"]["register"] : YAML::Node();
      if (reg.error || reg.hang || reg.empty) {
        return Error(rf,
                     "faults.register: error, hang and empty apply only to "
                     "registration.mode plugins-registry (the GetInfo RPC)");
      }
      if (c->register_overrides.type) {
        return Error(rf,
                     "faults.register: type applies only to registration.mode plugins-registry");
      }
    }
    return absl::OkStatus();
  }

  // options: {pre_start_required, get_preferred_allocation_available}.
  absl::Status ParseOptions(const YAML::Node& o, Config* c) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(o, "options"));
    DEVMGR_RETURN_IF_ERROR(
        CheckKeys(o, {"pre_start_required", "get_preferred_allocation_available"}, "options"));
    if (o["pre_start_required"]) {
      DEVMGR_RETURN_IF_ERROR(
          Bool(o["pre_start_required"], "pre_start_required", &c->pre_start_required));
    }
    if (o["get_preferred_allocation_available"]) {
      DEVMGR_RETURN_IF_ERROR(Bool(o["get_preferred_allocation_available"],
                                  "get_preferred_allocation_available",
                                  &c->get_preferred_allocation_available));
    }
    return absl::OkStatus();
  }

  // preferred_allocation: {policy, devices, empty_without_must_include}.
  absl::Status ParsePreferred(const YAML::Node& p, Config* c) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(p, "preferred_allocation"));
    DEVMGR_RETURN_IF_ERROR(
        CheckKeys(p, {"policy", "devices", "empty_without_must_include"}, "preferred_allocation"));
    PreferredAllocationConfig& pa = c->preferred_allocation;
    if (p["policy"]) {
      std::string policy;
      DEVMGR_RETURN_IF_ERROR(String(p["policy"], "policy", &policy));
      static const Keys kPolicies = {"first", "last", "echo-must-include", "fixed", "all"};
      auto it = std::find(kPolicies.begin(), kPolicies.end(), policy);
      if (it == kPolicies.end()) {
        return UnknownName(p["policy"],
                           fmt::format("unknown preferred_allocation policy '{}'", policy), policy,
                           kPolicies);
      }
      pa.policy = static_cast<PreferredAllocationConfig::Policy>(it - kPolicies.begin());
    }
    if (p["devices"]) {
      DEVMGR_RETURN_IF_ERROR(StringList(p["devices"], "preferred_allocation.devices", &pa.fixed));
    }
    if (p["empty_without_must_include"]) {
      DEVMGR_RETURN_IF_ERROR(Bool(p["empty_without_must_include"], "empty_without_must_include",
                                  &pa.empty_without_must_include));
    }
    if ((pa.policy == PreferredAllocationConfig::Policy::kFixed) != bool(p["devices"])) {
      return Error(p, "preferred_allocation: policy fixed needs devices, and only it takes them");
    }
    return absl::OkStatus();
  }

  // list_and_watch: {resend_interval, shuffle, seed}.
  absl::Status ParseListAndWatch(const YAML::Node& l, Config* c) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(l, "list_and_watch"));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(l, {"resend_interval", "shuffle", "seed"}, "list_and_watch"));
    ListAndWatchConfig& lw = c->list_and_watch;
    if (l["resend_interval"]) {
      DEVMGR_RETURN_IF_ERROR(
          Duration(l["resend_interval"], "resend_interval", &lw.resend_interval));
    }
    if (l["shuffle"]) DEVMGR_RETURN_IF_ERROR(Bool(l["shuffle"], "shuffle", &lw.shuffle));
    if (l["seed"]) {
      int64_t seed = 0;
      DEVMGR_RETURN_IF_ERROR(Int(l["seed"], "seed", 0, &seed));
      lw.seed = static_cast<uint64_t>(seed);
    }
    return absl::OkStatus();
  }

  // health_changes: [{after, device, health} or {after, add: DEVICE}], kept
  // in time order.
  absl::Status ParseHealthChanges(const YAML::Node& h, Config* c) const {
    DEVMGR_RETURN_IF_ERROR(ExpectSeq(h, "health_changes"));
    for (const YAML::Node& e : h) {
      DEVMGR_RETURN_IF_ERROR(ExpectMap(e, "a health change"));
      DEVMGR_RETURN_IF_ERROR(CheckKeys(e, {"after", "device", "health", "add"}, "a health change"));
      HealthChange hc;
      if (e["add"]) {
        if (e["device"] || e["health"]) {
          return Error(e["add"], "a health change has either device and health, or add");
        }
        // The added entry is a device as in `devices`.
        YAML::Node one(YAML::NodeType::Sequence);
        one.push_back(e["add"]);
        Config added;
        DEVMGR_RETURN_IF_ERROR(ParseDevices(one, &added));
        hc.add = std::move(added.devices);
      }
      for (const char* k : {"after", "device", "health"}) {
        if (!e[k] && (k == std::string("after") || hc.add.empty())) {
          return Error(e, fmt::format("a health change needs '{}'", k));
        }
      }
      DEVMGR_RETURN_IF_ERROR(Duration(e["after"], "after", &hc.after));
      if (hc.add.empty()) {
        DEVMGR_RETURN_IF_ERROR(String(e["device"], "device", &hc.device));
        DEVMGR_RETURN_IF_ERROR(String(e["health"], "health", &hc.health));
      }
      c->health_changes.push_back(hc);
    }
    std::stable_sort(
        c->health_changes.begin(), c->health_changes.end(),
        [](const HealthChange& a, const HealthChange& b) { return a.after < b.after; });
    return absl::OkStatus();
  }
};

}  // namespace

const char* RpcName(Rpc rpc) {
  switch (rpc) {
    case Rpc::kGetDevicePluginOptions:
      return "GetDevicePluginOptions";
    case Rpc::kListAndWatch:
      return "ListAndWatch";
    case Rpc::kGetPreferredAllocation:
      return "GetPreferredAllocation";
    case Rpc::kAllocate:
      return "Allocate";
    case Rpc::kPreStartContainer:
      return "PreStartContainer";
    case Rpc::kRegister:
      return "Register";
  }
  return "";
}

std::string DefaultSocketName(const std::string& resource) {
  std::string out;
  for (char ch : resource) {
    const unsigned char c = static_cast<unsigned char>(ch);
    out += (std::isalnum(c) || c == '.' || c == '_' || c == '-') ? ch : '-';
  }
  return out + ".sock";
}

absl::StatusOr<Config> ParseConfig(const std::string& yaml_text, const std::string& source_name) {
  Config c;
  Parser p(source_name);
  try {
    const YAML::Node root = YAML::Load(yaml_text);
    DEVMGR_RETURN_IF_ERROR(p.ParseTop(root, &c));
  } catch (const YAML::Exception& e) {
    return p.ExceptionError(e);
  }
  if (c.socket.empty()) c.socket = DefaultSocketName(c.resource);
  if (c.registration.registry_socket.empty()) {
    std::string stem = c.socket;
    if (stem.size() > 5 && stem.substr(stem.size() - 5) == ".sock") stem.resize(stem.size() - 5);
    c.registration.registry_socket = stem + "-reg.sock";
  }
  return c;
}

absl::StatusOr<Config> LoadConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("{}: cannot read the file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseConfig(ss.str(), path);
}

}  // namespace devmgr::plugin
