// YAML -> Config and the kubeconfig's server URL, read with
// yaml::TypedReader. The only file of the driver that includes yaml-cpp;
// every yaml-cpp exception is caught here and turned into "file:line:col: ...".
#include <fstream>
#include <set>
#include <sstream>

#include "absl/status/status.h"
#include "common/status_util.h"
#include "draplugin/config.h"
#include "fmt/format.h"
#include "yaml-cpp/yaml.h"
#include "yaml/typed_reader.h"

namespace devmgr::draplugin {
namespace {

using yaml::Keys;

const Keys kTopKeys = {"driver", "cdi", "registration", "devices", "health", "misbehave"};
const Keys kCdiKeys = {"vendor", "class"};
const Keys kRegistrationKeys = {"supported_versions"};
const Keys kDeviceKeys = {"name", "attributes", "env", "health", "health_message"};
const Keys kHealthKeys = {"serve", "timeout_seconds"};
const Keys kHealthServices = {kHealthV1alpha1, kHealthV1};
const Keys kHealthValues = {"Healthy", "Unhealthy", "Unknown"};
const Keys kAttributeTypes = {"string", "int", "bool", "version"};
const Keys kMisbehaveKeys = {"prepare_not_idempotent",
                             "registration_type",
                             "prepare_wrong_device",
                             "prepare_after_unprepare_fails",
                             "batch_mixes_claims",
                             "unprepare_reads_claim",
                             "prepare_ignores_uid",
                             "reprepare_adds_spec",
                             "restored_unprepare_fails",
                             "restored_unprepare_needs_prepare",
                             "restored_unprepare_keeps_spec",
                             "reprepare_skips_spec",
                             "publish_only_first_start",
                             "leak_spec_on_failure",
                             "unprepare_unknown_fails",
                             "leak_state_on_failure",
                             "cdi_spec",
                             "fail_claims",
                             "omit_claims",
                             "prepare_delay",
                             "register_before_serving",
                             "invalid_slice",
                             "foreign_results_fail",
                             "prepare_foreign_results",
                             "health_omit_devices"};
const Keys kCdiSpecModes = {"write", "skip", "wrong_dir"};

class Parser : public yaml::TypedReader {
 public:
  explicit Parser(std::string source) : TypedReader(std::move(source)) {}

  absl::Status ParseTop(const YAML::Node& root, Config* c) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(root, "the config"));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(root, kTopKeys, "the config"));
    if (root["driver"])
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(root["driver"], "driver", &c->driver));
    const YAML::Node cdi = root["cdi"];
    if (cdi) DEVMGR_RETURN_IF_ERROR(OptionalMap(cdi, kCdiKeys, "cdi"));
    if (cdi && cdi.IsMap() && cdi["vendor"]) {
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(cdi["vendor"], "cdi.vendor", &c->cdi_vendor));
    }
    if (cdi && cdi.IsMap() && cdi["class"]) {
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(cdi["class"], "cdi.class", &c->cdi_class));
    }
    if (c->cdi_vendor.empty()) c->cdi_vendor = c->driver;
    DEVMGR_RETURN_IF_ERROR(ParseRegistration(root["registration"], c));
    const YAML::Node devices = root["devices"];
    if (!devices) return Error(root, "the config needs 'devices'");
    DEVMGR_RETURN_IF_ERROR(ExpectSeq(devices, "devices"));
    std::set<std::string> names;
    for (const YAML::Node& d : devices) {
      DeviceConfig dc;
      DEVMGR_RETURN_IF_ERROR(ParseDevice(d, &dc));
      if (!names.insert(dc.name).second) {
        return Error(d["name"], fmt::format("duplicate device name '{}'", dc.name));
      }
      c->devices.push_back(std::move(dc));
    }
    DEVMGR_RETURN_IF_ERROR(ParseHealth(root["health"], &c->health));
    return ParseMisbehave(root["misbehave"], &c->misbehave);
  }

 private:
  absl::Status ParseRegistration(const YAML::Node& n, Config* c) const {
    if (!n) return absl::OkStatus();
    DEVMGR_RETURN_IF_ERROR(OptionalMap(n, kRegistrationKeys, "registration"));
    if (!n.IsMap() || !n["supported_versions"]) return absl::OkStatus();
    const YAML::Node list = n["supported_versions"];
    DEVMGR_RETURN_IF_ERROR(
        StringList(list, "registration.supported_versions", &c->supported_versions));
    // Only the served services may be advertised; an empty list is allowed
    // (the kubelet refuses it, which is what a test may want).
    for (size_t i = 0; i < c->supported_versions.size(); ++i) {
      if (!yaml::Contains(ServedServices(), c->supported_versions[i])) {
        return UnknownName(list[i], "unknown service '" + c->supported_versions[i] + "'",
                           c->supported_versions[i], ServedServices());
      }
    }
    return absl::OkStatus();
  }

  absl::Status ParseHealth(const YAML::Node& n, HealthConfig* h) const {
    if (!n) return absl::OkStatus();
    DEVMGR_RETURN_IF_ERROR(OptionalMap(n, kHealthKeys, "health"));
    if (!n.IsMap()) return absl::OkStatus();
    if (n["timeout_seconds"]) {
      DEVMGR_RETURN_IF_ERROR(
          Int(n["timeout_seconds"], "health.timeout_seconds", 0, &h->timeout_seconds));
    }
    if (!n["serve"]) return absl::OkStatus();
    DEVMGR_RETURN_IF_ERROR(StringList(n["serve"], "health.serve", &h->serve));
    h->serve_set = true;
    for (size_t i = 0; i < h->serve.size(); ++i) {
      if (!yaml::Contains(kHealthServices, h->serve[i])) {
        return UnknownName(n["serve"][i], "unknown health service '" + h->serve[i] + "'",
                           h->serve[i], kHealthServices);
      }
    }
    return absl::OkStatus();
  }

  absl::Status ParseDeviceHealth(const YAML::Node& d, DeviceConfig* dc) const {
    if (d["health"]) {
      DEVMGR_RETURN_IF_ERROR(String(d["health"], "a device's health", &dc->health));
      if (!yaml::Contains(kHealthValues, dc->health)) {
        return UnknownName(d["health"], "unknown health '" + dc->health + "'", dc->health,
                           kHealthValues);
      }
    }
    if (d["health_message"]) {
      DEVMGR_RETURN_IF_ERROR(
          String(d["health_message"], "a device's health_message", &dc->health_message));
    }
    return absl::OkStatus();
  }

  absl::Status ParseDevice(const YAML::Node& d, DeviceConfig* dc) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(d, "a device"));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(d, kDeviceKeys, "a device"));
    if (!d["name"]) return Error(d, "a device needs 'name'");
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(d["name"], "a device's name", &dc->name));
    if (d["env"]) DEVMGR_RETURN_IF_ERROR(StringMap(d["env"], "a device's env", &dc->env));
    DEVMGR_RETURN_IF_ERROR(ParseDeviceHealth(d, dc));
    const YAML::Node attrs = d["attributes"];
    if (!attrs) return absl::OkStatus();
    DEVMGR_RETURN_IF_ERROR(ExpectMap(attrs, "a device's attributes"));
    for (const auto& kv : attrs) {
      std::string key;
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(kv.first, "an attribute name", &key));
      DEVMGR_RETURN_IF_ERROR(ExpectMap(kv.second, "attribute '" + key + "'"));
      DEVMGR_RETURN_IF_ERROR(CheckKeys(kv.second, kAttributeTypes, "attribute '" + key + "'"));
      if (kv.second.size() != 1) {
        return Error(kv.second, "attribute '" + key +
                                    "' needs exactly one of string, int, bool, "
                                    "version");
      }
      Attribute a;
      a.type = kv.second.begin()->first.as<std::string>();
      const YAML::Node v = kv.second.begin()->second;
      if (a.type == "int") {
        int64_t i = 0;
        DEVMGR_RETURN_IF_ERROR(Int(v, "attribute '" + key + "'", INT64_MIN, &i));
        a.value = std::to_string(i);
      } else if (a.type == "bool") {
        bool b = false;
        DEVMGR_RETURN_IF_ERROR(Bool(v, "attribute '" + key + "'", &b));
        a.value = b ? "true" : "false";
      } else {
        DEVMGR_RETURN_IF_ERROR(String(v, "attribute '" + key + "'", &a.value));
      }
      dc->attributes[key] = std::move(a);
    }
    return absl::OkStatus();
  }

  absl::Status ParseMisbehave(const YAML::Node& n, Misbehaviour* m) const {
    if (!n) return absl::OkStatus();
    DEVMGR_RETURN_IF_ERROR(OptionalMap(n, kMisbehaveKeys, "misbehave"));
    if (!n.IsMap()) return absl::OkStatus();
    auto flag = [&](const char* key, bool* out) {
      return n[key] ? Bool(n[key], std::string("misbehave.") + key, out) : absl::OkStatus();
    };
    auto duration = [&](const char* key, absl::Duration* out) {
      return n[key] ? Duration(n[key], std::string("misbehave.") + key, out) : absl::OkStatus();
    };
    auto list = [&](const char* key, std::vector<std::string>* out) {
      return n[key] ? StringList(n[key], std::string("misbehave.") + key, out) : absl::OkStatus();
    };
    DEVMGR_RETURN_IF_ERROR(flag("prepare_not_idempotent", &m->prepare_not_idempotent));
    DEVMGR_RETURN_IF_ERROR(flag("unprepare_unknown_fails", &m->unprepare_unknown_fails));
    DEVMGR_RETURN_IF_ERROR(flag("leak_state_on_failure", &m->leak_state_on_failure));
    DEVMGR_RETURN_IF_ERROR(flag("invalid_slice", &m->invalid_slice));
    DEVMGR_RETURN_IF_ERROR(flag("prepare_wrong_device", &m->prepare_wrong_device));
    DEVMGR_RETURN_IF_ERROR(
        flag("prepare_after_unprepare_fails", &m->prepare_after_unprepare_fails));
    DEVMGR_RETURN_IF_ERROR(flag("batch_mixes_claims", &m->batch_mixes_claims));
    DEVMGR_RETURN_IF_ERROR(flag("unprepare_reads_claim", &m->unprepare_reads_claim));
    DEVMGR_RETURN_IF_ERROR(flag("prepare_ignores_uid", &m->prepare_ignores_uid));
    DEVMGR_RETURN_IF_ERROR(flag("reprepare_adds_spec", &m->reprepare_adds_spec));
    DEVMGR_RETURN_IF_ERROR(flag("restored_unprepare_fails", &m->restored_unprepare_fails));
    DEVMGR_RETURN_IF_ERROR(
        flag("restored_unprepare_needs_prepare", &m->restored_unprepare_needs_prepare));
    DEVMGR_RETURN_IF_ERROR(
        flag("restored_unprepare_keeps_spec", &m->restored_unprepare_keeps_spec));
    DEVMGR_RETURN_IF_ERROR(flag("reprepare_skips_spec", &m->reprepare_skips_spec));
    DEVMGR_RETURN_IF_ERROR(flag("publish_only_first_start", &m->publish_only_first_start));
    DEVMGR_RETURN_IF_ERROR(flag("leak_spec_on_failure", &m->leak_spec_on_failure));
    DEVMGR_RETURN_IF_ERROR(flag("foreign_results_fail", &m->foreign_results_fail));
    DEVMGR_RETURN_IF_ERROR(flag("prepare_foreign_results", &m->prepare_foreign_results));
    if (n["registration_type"]) {
      DEVMGR_RETURN_IF_ERROR(
          String(n["registration_type"], "misbehave.registration_type", &m->registration_type));
    }
    DEVMGR_RETURN_IF_ERROR(duration("prepare_delay", &m->prepare_delay));
    DEVMGR_RETURN_IF_ERROR(duration("register_before_serving", &m->register_before_serving));
    DEVMGR_RETURN_IF_ERROR(list("fail_claims", &m->fail_claims));
    DEVMGR_RETURN_IF_ERROR(list("omit_claims", &m->omit_claims));
    DEVMGR_RETURN_IF_ERROR(list("health_omit_devices", &m->health_omit_devices));
    if (n["cdi_spec"]) {
      std::string mode;
      DEVMGR_RETURN_IF_ERROR(String(n["cdi_spec"], "misbehave.cdi_spec", &mode));
      if (mode == "write") {
        m->cdi_spec = CdiSpecMode::kWrite;
      } else if (mode == "skip") {
        m->cdi_spec = CdiSpecMode::kSkip;
      } else if (mode == "wrong_dir") {
        m->cdi_spec = CdiSpecMode::kWrongDir;
      } else {
        return UnknownName(n["cdi_spec"], "misbehave.cdi_spec must be write, skip or wrong_dir",
                           mode, kCdiSpecModes);
      }
    }
    return absl::OkStatus();
  }
};

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("{}: cannot read the file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The server of the cluster named `cluster` ("" = the first).
absl::StatusOr<std::string> ClusterServer(const Parser& p, const YAML::Node& root,
                                          const std::string& cluster) {
  const YAML::Node clusters = root["clusters"];
  if (!clusters || !clusters.IsSequence() || clusters.size() == 0) {
    return p.Error(root, "the kubeconfig has no clusters");
  }
  for (const YAML::Node& c : clusters) {
    if (!cluster.empty() && (!c["name"] || c["name"].as<std::string>() != cluster)) continue;
    if (!c["cluster"] || !c["cluster"]["server"]) return p.Error(c, "a cluster has no server");
    std::string server;
    DEVMGR_RETURN_IF_ERROR(p.NonEmptyString(c["cluster"]["server"], "a cluster's server", &server));
    return server;
  }
  return p.Error(clusters, "no cluster named '" + cluster + "'");
}

}  // namespace

absl::StatusOr<Config> ParseConfig(const std::string& yaml_text, const std::string& source_name) {
  Config c;
  Parser p(source_name);
  try {
    DEVMGR_RETURN_IF_ERROR(p.ParseTop(YAML::Load(yaml_text), &c));
  } catch (const YAML::Exception& e) {
    return p.ExceptionError(e);
  }
  return c;
}

absl::StatusOr<Config> LoadConfig(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseConfig(*text, path);
}

absl::StatusOr<std::string> KubeconfigServer(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  Parser p(path);
  try {
    const YAML::Node root = YAML::Load(*text);
    DEVMGR_RETURN_IF_ERROR(p.ExpectMap(root, "the kubeconfig"));
    std::string cluster;
    const std::string current = root["current-context"] && root["current-context"].IsScalar()
                                    ? root["current-context"].as<std::string>()
                                    : "";
    const YAML::Node contexts = root["contexts"];
    if (!current.empty() && contexts && contexts.IsSequence()) {
      for (const YAML::Node& ctx : contexts) {
        if (ctx["name"] && ctx["name"].as<std::string>() == current && ctx["context"] &&
            ctx["context"]["cluster"]) {
          cluster = ctx["context"]["cluster"].as<std::string>();
        }
      }
    }
    return ClusterServer(p, root, cluster);
  } catch (const YAML::Exception& e) {
    return p.ExceptionError(e);
  }
}

}  // namespace devmgr::draplugin
