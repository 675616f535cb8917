// The only file of the pod module that includes yaml-cpp; every YAML
// exception is caught here.
#include "pod/manifest_parser.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/numbers.h"
#include "common/go_format.h"
#include "common/status_util.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "pod/quantity.h"
#include "pod/resource_validation.h"
#include "pod/uid.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"

namespace devmgr::pod {
namespace {

// A YAML node as the API's JSON (YAML 1.2 core schema, as the API's YAML
// decoder reads it): plain scalars that read as integers, booleans or null
// become those; quoted scalars stay strings.
nlohmann::json AsJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) out[kv.first.Scalar()] = AsJson(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(AsJson(item));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!") return s;  // quoted
      int64_t i = 0;
      if (s.find_first_not_of("-0123456789") == std::string::npos && absl::SimpleAtoi(s, &i)) {
        return i;
      }
      if (s == "true" || s == "false") return s == "true";
      if (s == "null" || s == "~") return nullptr;
      return s;
    }
    default:
      return nullptr;
  }
}

const char* KindOf(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

// A container as read, before validation: quantities and source marks kept.
struct RawContainer {
  Container container;
  std::string path;  // "spec.containers[0]"
  YAML::Mark mark;
  YAML::Mark name_mark;
  YAML::Mark restart_policy_mark;
  std::string restart_policy;  // as written; "" when absent
  std::map<std::string, Quantity> limits, requests;
  std::map<std::string, YAML::Mark> limit_marks, request_marks;
};

class DocParser {
 public:
  explicit DocParser(const std::string& filename) : filename_(filename) {}

  // Appends the pods of one document (a Pod, or a list when allowed).
  absl::Status ParseDocument(const YAML::Node& doc, bool allow_list, std::vector<Pod>* out) {
    if (!doc.IsMap()) {
      return Error(doc, fmt::format("a manifest must be a mapping, got {}", KindOf(doc)));
    }
    std::string api_version, kind;
    DEVMGR_RETURN_IF_ERROR(GetString(doc, "apiVersion", "apiVersion", &api_version));
    DEVMGR_RETURN_IF_ERROR(GetString(doc, "kind", "kind", &kind));
    if (api_version.empty()) {
      return Error(doc, "apiVersion: Required value (want \"v1\")");
    }
    if (api_version != "v1") {
      return Error(doc["apiVersion"],
                   fmt::format("apiVersion: want \"v1\", got {}", GoQuote(api_version)));
    }
    if (kind.empty()) return Error(doc, "kind: Required value (want \"Pod\")");
    if (kind == "Pod") {
      Pod pod;
      DEVMGR_RETURN_IF_ERROR(ParsePod(doc, "", &pod));
      out->push_back(std::move(pod));
      return absl::OkStatus();
    }
    if (allow_list && (kind == "PodList" || kind == "List")) {
      YAML::Node items = doc["items"];
      if (!items.IsDefined() || items.IsNull()) return absl::OkStatus();
      if (!items.IsSequence()) {
        return Error(items, fmt::format("items: expected a list, got {}", KindOf(items)));
      }
      for (size_t i = 0; i < items.size(); ++i) {
        const YAML::Node item = items[i];
        const std::string path = fmt::format("items[{}]", i);
        if (!item.IsMap()) {
          return Error(item, fmt::format("{}: expected a mapping, got {}", path, KindOf(item)));
        }
        std::string item_kind;
        DEVMGR_RETURN_IF_ERROR(GetString(item, "kind", path + ".kind", &item_kind));
        if (!item_kind.empty() && item_kind != "Pod") {
          return Error(item["kind"],
                       fmt::format("{}.kind: want \"Pod\", got {}", path, GoQuote(item_kind)));
        }
        Pod pod;
        DEVMGR_RETURN_IF_ERROR(ParsePod(item, path + ".", &pod));
        out->push_back(std::move(pod));
      }
      return absl::OkStatus();
    }
    return Error(doc["kind"], fmt::format("kind: want \"Pod\", got {}{}", GoQuote(kind),
                                          allow_list ? " (or a PodList)" : ""));
  }

 private:
  absl::Status ErrorAt(const YAML::Mark& mark, const std::string& msg) const {
    if (mark.is_null()) {
      return absl::InvalidArgumentError(fmt::format("{}: {}", filename_, msg));
    }
    return absl::InvalidArgumentError(
        fmt::format("{}:{}:{}: {}", filename_, mark.line + 1, mark.column + 1, msg));
  }
  absl::Status Error(const YAML::Node& node, const std::string& msg) const {
    return ErrorAt(node.IsDefined() ? node.Mark() : YAML::Mark::null_mark(), msg);
  }

  // Reads parent[key] as a string: absent/null -> "" (ok), scalar -> its
  // text, anything else -> error.
  absl::Status GetString(const YAML::Node& parent, const char* key, const std::string& path,
                         std::string* out) const {
    out->clear();
    const YAML::Node v = parent[key];
    if (!v.IsDefined() || v.IsNull()) return absl::OkStatus();
    if (!v.IsScalar()) {
      return Error(v, fmt::format("{}: expected a string, got {}", path, KindOf(v)));
    }
    *out = v.Scalar();
    return absl::OkStatus();
  }

  // `v` (the value at `path`) must be absent, null or a mapping.
  // (yaml-cpp Nodes have reference semantics: assigning to an existing Node
  // writes through it, so callers bind with copy-construction instead.)
  absl::Status CheckMap(const YAML::Node& v, const std::string& path) const {
    if (v.IsDefined() && !v.IsNull() && !v.IsMap()) {
      return Error(v, fmt::format("{}: expected a mapping, got {}", path, KindOf(v)));
    }
    return absl::OkStatus();
  }

  // An API validation error about this pod.
  absl::Status Invalid(const YAML::Mark& mark, const std::string& pod_name,
                       const std::string& text) const {
    return ErrorAt(mark, fmt::format("Pod {} is invalid: {}", GoQuote(pod_name), text));
  }

  absl::Status ParsePod(const YAML::Node& doc, const std::string& prefix, Pod* pod) {
    pod->source = filename_;
    const YAML::Node metadata = doc["metadata"];
    const YAML::Node spec = doc["spec"];
    const YAML::Node status = doc["status"];
    DEVMGR_RETURN_IF_ERROR(CheckMap(metadata, prefix + "metadata"));
    DEVMGR_RETURN_IF_ERROR(CheckMap(spec, prefix + "spec"));
    DEVMGR_RETURN_IF_ERROR(CheckMap(status, prefix + "status"));

    const bool has_metadata = metadata.IsDefined() && metadata.IsMap();
    if (has_metadata) {
      DEVMGR_RETURN_IF_ERROR(GetString(metadata, "name", prefix + "metadata.name", &pod->name));
      DEVMGR_RETURN_IF_ERROR(
          GetString(metadata, "namespace", prefix + "metadata.namespace", &pod->namespace_));
      DEVMGR_RETURN_IF_ERROR(GetString(metadata, "uid", prefix + "metadata.uid", &pod->uid));
    }
    if (pod->name.empty()) {
      return Invalid(has_metadata ? metadata.Mark() : doc.Mark(), "",
                     "metadata.name: Required value: name or generateName is required");
    }
    if (pod->namespace_.empty()) pod->namespace_ = "default";
    if (pod->uid.empty()) {
      pod->uid = DeterministicPodUid(pod->namespace_, pod->name);
      pod->uid_generated = true;
    }
    {
      YAML::Emitter out;
      out << doc;
      pod->manifest_digest = HexString(Sha1(out.c_str()));
    }
    // Go's json.Marshal writes invalid UTF-8 as U+FFFD; nlohmann's dump() would throw.
    pod->manifest_json = AsJson(doc).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);

    std::vector<RawContainer> init, app;
    const bool has_spec = spec.IsDefined() && spec.IsMap();
    if (has_spec) {
      DEVMGR_RETURN_IF_ERROR(ParseContainerList(spec, "initContainers", prefix, &init));
      DEVMGR_RETURN_IF_ERROR(ParseContainerList(spec, "containers", prefix, &app));
    }
    if (app.empty()) {
      const YAML::Node list = has_spec ? spec["containers"] : YAML::Node();
      YAML::Mark mark = list.IsDefined() ? list.Mark() : has_spec ? spec.Mark() : doc.Mark();
      return Invalid(mark, pod->name, "spec.containers: Required value");
    }
    // The API server validates app containers first, then init containers
    // (whose names must also differ from the app containers').
    std::set<std::string> names;
    for (RawContainer& c : app) {
      DEVMGR_RETURN_IF_ERROR(ValidateContainer(c, false, pod->name, &names));
    }
    for (RawContainer& c : init) {
      DEVMGR_RETURN_IF_ERROR(ValidateContainer(c, true, pod->name, &names));
    }
    for (RawContainer& c : init) {
      c.container.restartable = c.restart_policy == "Always";  // a sidecar
      pod->init_containers.push_back(std::move(c.container));
    }
    for (RawContainer& c : app) pod->containers.push_back(std::move(c.container));

    if (status.IsDefined() && status.IsMap()) {
      std::string phase;
      DEVMGR_RETURN_IF_ERROR(GetString(status, "phase", prefix + "status.phase", &phase));
      if (phase.empty() || phase == "Pending") {
        pod->phase = Phase::kPending;
      } else if (phase == "Running") {
        pod->phase = Phase::kRunning;
      } else if (phase == "Succeeded") {
        pod->phase = Phase::kSucceeded;
      } else if (phase == "Failed") {
        pod->phase = Phase::kFailed;
      } else {
        return Error(status["phase"],
                     fmt::format("status.phase: Unsupported value: {}: supported values: "
                                 "\"Pending\", \"Running\", \"Succeeded\", \"Failed\"",
                                 GoQuote(phase)));
      }
      DEVMGR_RETURN_IF_ERROR(ParseExtendedResourceClaimStatus(status, prefix, pod));
    }
    return absl::OkStatus();
  }

  // status.extendedResourceClaimStatus: {resourceClaimName, requestMappings:
  // [{containerName, resourceName, requestName}]}.
  absl::Status ParseExtendedResourceClaimStatus(const YAML::Node& status, const std::string& prefix,
                                                Pod* pod) {
    const std::string path = prefix + "status.extendedResourceClaimStatus";
    const YAML::Node ercs = status["extendedResourceClaimStatus"];
    if (!ercs.IsDefined() || ercs.IsNull()) return absl::OkStatus();
    DEVMGR_RETURN_IF_ERROR(CheckMap(ercs, path));
    DEVMGR_RETURN_IF_ERROR(GetString(ercs, "resourceClaimName", path + ".resourceClaimName",
                                     &pod->extended_resource_claim_name));
    const YAML::Node list = ercs["requestMappings"];
    if (!list.IsDefined() || list.IsNull()) return absl::OkStatus();
    if (!list.IsSequence()) {
      return Error(list,
                   fmt::format("{}.requestMappings: expected a list, got {}", path, KindOf(list)));
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node m = list[i];
      const std::string mp = fmt::format("{}.requestMappings[{}]", path, i);
      DEVMGR_RETURN_IF_ERROR(CheckMap(m, mp));
      if (!m.IsMap()) return Error(m, fmt::format("{}: expected a mapping, got {}", mp, KindOf(m)));
      ExtendedResourceMapping e;
      DEVMGR_RETURN_IF_ERROR(
          GetString(m, "containerName", mp + ".containerName", &e.container_name));
      DEVMGR_RETURN_IF_ERROR(GetString(m, "resourceName", mp + ".resourceName", &e.resource_name));
      DEVMGR_RETURN_IF_ERROR(GetString(m, "requestName", mp + ".requestName", &e.request_name));
      if (e.container_name.empty()) {
        return Error(m, fmt::format("{}.containerName: Required value", mp));
      }
      if (e.resource_name.empty()) {
        return Error(m, fmt::format("{}.resourceName: Required value", mp));
      }
      if (FindContainer(*pod, e.container_name) == nullptr) {
        return Error(m["containerName"],
                     fmt::format("{}.containerName: Not found: {}", mp, GoQuote(e.container_name)));
      }
      pod->extended_resource_mappings.push_back(std::move(e));
    }
    return absl::OkStatus();
  }

  absl::Status ParseContainerList(const YAML::Node& spec, const char* key,
                                  const std::string& prefix, std::vector<RawContainer>* out) {
    const std::string list_path = fmt::format("{}spec.{}", prefix, key);
    const YAML::Node list = spec[key];
    if (!list.IsDefined() || list.IsNull()) return absl::OkStatus();
    if (!list.IsSequence()) {
      return Error(list, fmt::format("{}: expected a list, got {}", list_path, KindOf(list)));
    }
    for (size_t i = 0; i < list.size(); ++i) {
      RawContainer raw;
      raw.path = fmt::format("spec.{}[{}]", key, i);
      DEVMGR_RETURN_IF_ERROR(ParseContainer(list[i], prefix, &raw));
      out->push_back(std::move(raw));
    }
    return absl::OkStatus();
  }

  absl::Status ParseContainer(const YAML::Node& node, const std::string& prefix,
                              RawContainer* raw) {
    const std::string path = prefix + raw->path;
    if (!node.IsMap()) {
      return Error(node, fmt::format("{}: expected a mapping, got {}", path, KindOf(node)));
    }
    raw->mark = node.Mark();
    DEVMGR_RETURN_IF_ERROR(GetString(node, "name", path + ".name", &raw->container.name));
    raw->name_mark = node["name"].IsDefined() ? node["name"].Mark() : node.Mark();
    DEVMGR_RETURN_IF_ERROR(
        GetString(node, "restartPolicy", path + ".restartPolicy", &raw->restart_policy));
    if (node["restartPolicy"].IsDefined()) raw->restart_policy_mark = node["restartPolicy"].Mark();

    const YAML::Node resources = node["resources"];
    DEVMGR_RETURN_IF_ERROR(CheckMap(resources, path + ".resources"));
    if (resources.IsDefined() && resources.IsMap()) {
      DEVMGR_RETURN_IF_ERROR(ParseResourceList(resources, "limits", path + ".resources.limits",
                                               &raw->limits, &raw->limit_marks));
      DEVMGR_RETURN_IF_ERROR(ParseResourceList(resources, "requests", path + ".resources.requests",
                                               &raw->requests, &raw->request_marks));
    }
    for (const auto& [r, q] : raw->limits) raw->container.limits[r] = q.Value();
    for (const auto& [r, q] : raw->requests) raw->container.requests[r] = q.Value();
    return absl::OkStatus();
  }

  absl::Status ParseResourceList(const YAML::Node& resources, const char* key,
                                 const std::string& path, std::map<std::string, Quantity>* out,
                                 std::map<std::string, YAML::Mark>* marks) {
    const YAML::Node list = resources[key];
    DEVMGR_RETURN_IF_ERROR(CheckMap(list, path));
    if (!list.IsDefined() || list.IsNull()) return absl::OkStatus();
    for (auto it = list.begin(); it != list.end(); ++it) {
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      if (!k.IsScalar()) {
        return Error(k, fmt::format("{}: resource names must be strings, got {}", path, KindOf(k)));
      }
      const std::string name = k.Scalar();
      const std::string entry_path = fmt::format("{}[{}]", path, name);
      if (!v.IsScalar()) {
        return Error(v.IsDefined() && !v.IsNull() ? v : k,
                     fmt::format("{}: expected a quantity, got {}", entry_path, KindOf(v)));
      }
      absl::StatusOr<Quantity> q = Quantity::Parse(v.Scalar());
      if (!q.ok()) {
        return Error(v, fmt::format("{}: {}: {}", entry_path, GoQuote(v.Scalar()),
                                    std::string(q.status().message())));
      }
      (*out)[name] = *q;
      (*marks)[name] = v.Mark();
    }
    return absl::OkStatus();
  }

  absl::Status ValidateContainer(const RawContainer& c, bool init, const std::string& pod_name,
                                 std::set<std::string>* names) const {
    const std::string& name = c.container.name;
    if (name.empty()) {
      return Invalid(c.mark, pod_name, c.path + ".name: Required value");
    }
    if (!names->insert(name).second) {
      return Invalid(c.name_mark, pod_name,
                     fmt::format("{}.name: Duplicate value: {}", c.path, GoQuote(name)));
    }
    if (!c.restart_policy.empty()) {
      if (!init) {
        return Invalid(c.restart_policy_mark, pod_name,
                       c.path +
                           ".restartPolicy: Forbidden: may not be set for non-init "
                           "containers");
      }
      if (c.restart_policy != "Always") {
        return Invalid(c.restart_policy_mark, pod_name,
                       fmt::format("{}.restartPolicy: Unsupported value: {}: supported "
                                   "values: \"Always\"",
                                   c.path, GoQuote(c.restart_policy)));
      }
    }
    std::vector<ResourceError> errors =
        ValidateResourceRequirements(c.limits, c.requests, c.path + ".resources");
    if (!errors.empty()) {
      const ResourceError& e = errors.front();
      const auto& marks = e.in_requests ? c.request_marks : c.limit_marks;
      auto it = marks.find(e.resource);
      return Invalid(it != marks.end() ? it->second : c.mark, pod_name,
                     fmt::format("{} (container {}, resource {})", e.text, GoQuote(name),
                                 GoQuote(e.resource)));
    }
    return absl::OkStatus();
  }

  std::string filename_;
};

// Ignores every event: used to count documents.
class NullEvents final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Loads all documents; YAML syntax errors become file:line:col errors.
absl::StatusOr<std::vector<YAML::Node>> LoadDocuments(const std::string& text,
                                                      const std::string& filename) {
  try {
    // yaml-cpp 0.7's LoadAll never returns on some malformed streams (e.g. ",x": the parser
    // yields empty documents without advancing; found by tests/fuzz/manifest_fuzz.cc). Every
    // real document consumes input, so more documents than bytes means it is stuck.
    std::istringstream in(text);
    YAML::Parser parser(in);
    NullEvents events;
    for (size_t docs = 0; parser.HandleNextDocument(events);) {
      if (++docs > text.size() + 1) {
        return absl::InvalidArgumentError(
            fmt::format("{}: invalid YAML: the document stream cannot be parsed", filename));
      }
    }
    return YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) {
      return absl::InvalidArgumentError(fmt::format("{}: {}", filename, e.msg));
    }
    return absl::InvalidArgumentError(
        fmt::format("{}:{}:{}: {}", filename, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

absl::StatusOr<std::vector<Pod>> ParseAll(const std::string& text, const std::string& filename,
                                          bool single) {
  absl::StatusOr<std::vector<YAML::Node>> docs = LoadDocuments(text, filename);
  if (!docs.ok()) return docs.status();
  std::vector<Pod> pods;
  DocParser parser(filename);
  bool seen = false;
  try {
    for (const YAML::Node& doc : *docs) {
      if (doc.IsNull()) continue;
      if (single && seen) {
        return absl::InvalidArgumentError(
            fmt::format("{}:{}:{}: a Pod manifest must hold a single document", filename,
                        doc.Mark().line + 1, doc.Mark().column + 1));
      }
      seen = true;
      absl::Status s = parser.ParseDocument(doc, !single, &pods);
      if (!s.ok()) return s;
    }
  } catch (const YAML::Exception& e) {
    // Not expected (all accesses are type-checked); keep it inside the module.
    return absl::InvalidArgumentError(fmt::format("{}: {}", filename, e.what()));
  }
  return pods;
}

}  // namespace

absl::StatusOr<Pod> ParsePodManifest(const std::string& text, const std::string& filename) {
  absl::StatusOr<std::vector<Pod>> pods = ParseAll(text, filename, /*single=*/true);
  if (!pods.ok()) return pods.status();
  if (pods->empty()) {
    return absl::InvalidArgumentError(fmt::format("{}: empty manifest", filename));
  }
  return std::move(pods->front());
}

absl::StatusOr<std::vector<std::string>> YamlDocumentsAsJson(const std::string& text,
                                                             const std::string& filename) {
  absl::StatusOr<std::vector<YAML::Node>> docs = LoadDocuments(text, filename);
  if (!docs.ok()) return docs.status();
  std::vector<std::string> out;
  for (const YAML::Node& doc : *docs) {
    if (doc.IsNull()) continue;
    out.push_back(AsJson(doc).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return out;
}

absl::StatusOr<std::vector<Pod>> ParsePodManifests(const std::string& text,
                                                   const std::string& filename) {
  return ParseAll(text, filename, /*single=*/false);
}

absl::StatusOr<std::string> ReadManifestFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(fmt::format("{}: {}", path, std::strerror(err)));
    }
    return absl::InvalidArgumentError(fmt::format("{}: {}", path, std::strerror(err)));
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(fmt::format("{}: read error", path));
  }
  return buf.str();
}

absl::StatusOr<Pod> LoadPodManifest(const std::string& path) {
  absl::StatusOr<std::string> text = ReadManifestFile(path);
  if (!text.ok()) return text.status();
  return ParsePodManifest(*text, path);
}

absl::StatusOr<std::vector<Pod>> LoadPodManifests(const std::string& path) {
  absl::StatusOr<std::string> text = ReadManifestFile(path);
  if (!text.ok()) return text.status();
  return ParsePodManifests(*text, path);
}

}  // namespace devmgr::pod
