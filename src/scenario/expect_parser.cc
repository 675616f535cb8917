#include "scenario/expect_parser.h"

#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/status_util.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "scenario/health_check.h"

namespace devmgr::scenario {
namespace {

using yaml::Contains;

const Keys kExpectKeys = {"within",     "resources", "pods",          "disjoint",
                          "checkpoint", "calls",     "pod_resources", "log"};
const Keys kPodResourcesKeys = {"allocatable", "pod_count", "pods", "get"};
const Keys kResourceKeys = {"capacity",        "allocatable", "healthy",
                            "unhealthy",       "allocated",   "healthy_count",
                            "unhealthy_count", "registered",  "connected"};
const Keys kPodKeys = {"exists",  "admitted",       "phase",      "reason",
                       "message", "status_message", "containers", "topology_hints"};
const Keys kContainerKeys = {"devices",
                             "envs",
                             "envs_exact",
                             "annotations",
                             "annotations_exact",
                             "mounts",
                             "mounts_exact",
                             "device_specs",
                             "device_specs_exact",
                             "cdi_devices",
                             "cdi_devices_exact",
                             "options",
                             "running",
                             "restart_count",
                             "start_error",
                             "numa_affinity",
                             "topology_hints",
                             "allocated_resources_status"};
const Keys kSetKeys = {"count", "ids", "subset_of", "superset_of", "disjoint_from"};
const Keys kDeviceKeys = {"count", "ids", "subset_of", "superset_of", "disjoint_from", "numa"};
const Keys kCheckpointKeys = {"exists",  "valid",         "entry_count",
                              "entries", "entries_exact", "registered"};
const Keys kEntryKeys = {"pod", "container", "resource", "devices"};
const Keys kCallsKeys = {"since", "exact", "methods", "sequence", "counts"};
const Keys kMethods = {"GetDevicePluginOptions",
                       "ListAndWatch",
                       "GetPreferredAllocation",
                       "Allocate",
                       "PreStartContainer",
                       "Register",
                       "GetInfo",
                       "NotifyRegistrationStatus"};

class ExpectParser : public ScenarioReader {
 public:
  explicit ExpectParser(const ScenarioReader& reader) : ScenarioReader(reader) {}

 private:
  mutable Keys captures_;

 public:
  absl::Status ParseExpect(const YAML::Node& n, const Scenario& sc, Expectations* e) const {
    // The names `$name` may refer to: captures of earlier steps.
    for (const Step& st : sc.steps) {
      for (const CaptureSpec& c : st.captures) captures_.push_back(c.name);
    }
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

 private:
  // A string or {regex: RE}.
  absl::Status Matcher(const YAML::Node& n, const std::string& where, StringMatcher* out) const {
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
  // provider -> resource -> hints, or `absent` (no hint entry at all).
  absl::Status ProviderHintsExpect(const YAML::Node& n,
                                   std::optional<std::map<std::string, ResourceHints>>* out,
                                   std::map<std::string, std::vector<std::string>>* absent) const {
    DEVMGR_RETURN_IF_ERROR(ExpectMap(n, "topology_hints (provider -> resource -> hints)"));
    std::map<std::string, ResourceHints> m;
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string p;
      DEVMGR_RETURN_IF_ERROR(NonEmptyString(it->first, "provider name", &p));
      const YAML::Node rs = it->second;
      DEVMGR_RETURN_IF_ERROR(ExpectMap(rs, "topology_hints (resource -> list of hints or absent)"));
      YAML::Node present(YAML::NodeType::Map);
      for (auto r = rs.begin(); r != rs.end(); ++r) {
        const YAML::Node v = r->second;
        if (v.IsScalar() && v.Scalar() == "absent") {
          std::string name;
          DEVMGR_RETURN_IF_ERROR(NonEmptyString(r->first, "resource name", &name));
          (*absent)[p].push_back(name);
        } else {
          present[r->first] = v;
        }
      }
      if (present.size() > 0 || (*absent)[p].empty()) {
        DEVMGR_RETURN_IF_ERROR(ResHints(present, "topology_hints", &m[p]));
      }
    }
    if (!m.empty()) *out = std::move(m);
    return absl::OkStatus();
  }

  // A number, or `absent`.
  absl::Status Quantity(const YAML::Node& n, const std::string& where,
                        std::optional<QuantityExpect>* out) const {
    QuantityExpect q;
    if (n.IsScalar() && n.Scalar() == "absent") {
      q.absent = true;
    } else {
      absl::Status s = Int(n, where, 0, &q.value);
      if (!s.ok() && n.IsScalar() && absl::StrContains(s.message(), "must be an integer")) {
        return Error(n, fmt::format("{} must be an integer or absent", where));
      }
      DEVMGR_RETURN_IF_ERROR(s);
    }
    *out = q;
    return absl::OkStatus();
  }

  // `$name`: a capture of an earlier step.
  absl::Status CaptureRef(const YAML::Node& n, const std::string& where, std::string* out) const {
    std::string s;
    DEVMGR_RETURN_IF_ERROR(String(n, where + " (a list of ids or $NAME)", &s));
    if (s.size() < 2 || s[0] != '$') {
      return Error(n, fmt::format("{}: expected $NAME (a capture of an earlier step)", where));
    }
    *out = s.substr(1);
    if (Contains(captures_, *out)) return absl::OkStatus();
    if (captures_.empty()) {
      return Error(n, fmt::format("{}: no earlier step captures '{}' (no step before this one "
                                  "has capture:)",
                                  where, *out));
    }
    return UnknownName(n, fmt::format("{}: no earlier step captures '{}'", where, *out), *out,
                       captures_);
  }

  // A list of ids, or `$name`.
  absl::Status Ref(const YAML::Node& n, const std::string& where,
                   std::optional<SetRef>* out) const {
    SetRef r;
    if (n.IsSequence()) {
      DEVMGR_RETURN_IF_ERROR(StringList(n, where, &r.ids));
    } else if (n.IsScalar()) {
      DEVMGR_RETURN_IF_ERROR(CaptureRef(n, where, &r.capture));
    } else {
      return Error(n, fmt::format("{} must be a list of ids or $NAME", where));
    }
    *out = std::move(r);
    return absl::OkStatus();
  }

  // A set: `absent`, a count, a list (the exact set), `$name` (equal to a
  // capture) or a mapping of `keys` (count, ids, subset_of, superset_of,
  // disjoint_from; count may be $name: as many as the capture).
  absl::Status Set(const YAML::Node& n, const std::string& where, const Keys& keys,
                   SetExpect* out) const {
    if (n.IsScalar() && n.Scalar() == "absent") {
      out->absent = true;
      return absl::OkStatus();
    }
    if (n.IsScalar() && !n.Scalar().empty() && n.Scalar()[0] == '$') {
      return Ref(n, where, &out->ids);
    }
    if (n.IsScalar()) return OptInt(n, where + " (a count)", 0, &out->count);
    if (n.IsSequence()) return Ref(n, where, &out->ids);
    if (!n.IsMap()) {
      return Error(
          n, fmt::format("{} must be a count, a list of ids, $NAME, absent or a mapping", where));
    }
    DEVMGR_RETURN_IF_ERROR(CheckKeys(n, keys, where));
    if (n["count"]) {
      const YAML::Node c = n["count"];
      if (c.IsScalar() && !c.Scalar().empty() && c.Scalar()[0] == '$') {
        std::string name;
        DEVMGR_RETURN_IF_ERROR(CaptureRef(c, where + ".count", &name));
        out->count_of = name;
      } else {
        DEVMGR_RETURN_IF_ERROR(OptInt(c, "count", 0, &out->count));
      }
    }
    if (n["ids"]) DEVMGR_RETURN_IF_ERROR(Ref(n["ids"], where + ".ids", &out->ids));
    if (n["subset_of"])
      DEVMGR_RETURN_IF_ERROR(Ref(n["subset_of"], where + ".subset_of", &out->subset_of));
    if (n["superset_of"]) {
      DEVMGR_RETURN_IF_ERROR(Ref(n["superset_of"], where + ".superset_of", &out->superset_of));
    }
    if (n["disjoint_from"]) {
      DEVMGR_RETURN_IF_ERROR(
          Ref(n["disjoint_from"], where + ".disjoint_from", &out->disjoint_from));
    }
    return absl::OkStatus();
  }
  absl::Status OptSet(const YAML::Node& n, const std::string& where,
                      std::optional<SetExpect>* out) const {
    SetExpect e;
    DEVMGR_RETURN_IF_ERROR(Set(n, where, kSetKeys, &e));
    *out = std::move(e);
    return absl::OkStatus();
  }

  absl::Status ParseResource(const YAML::Node& k, const YAML::Node& v, ResourceExpect* r) const {
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(k, "resource name", &r->resource));
    r->loc = Loc(k);
    const std::string where = fmt::format("expect.resources['{}']", r->resource);
    DEVMGR_RETURN_IF_ERROR(ExpectMap(v, where));
    DEVMGR_RETURN_IF_ERROR(CheckKeys(v, kResourceKeys, where));
    if (v["capacity"]) DEVMGR_RETURN_IF_ERROR(Quantity(v["capacity"], "capacity", &r->capacity));
    if (v["allocatable"]) {
      DEVMGR_RETURN_IF_ERROR(Quantity(v["allocatable"], "allocatable", &r->allocatable));
    }
    if (v["healthy"]) DEVMGR_RETURN_IF_ERROR(OptSet(v["healthy"], where + ".healthy", &r->healthy));
    if (v["unhealthy"]) {
      DEVMGR_RETURN_IF_ERROR(OptSet(v["unhealthy"], where + ".unhealthy", &r->unhealthy));
    }
    if (v["allocated"]) {
      DEVMGR_RETURN_IF_ERROR(OptSet(v["allocated"], where + ".allocated", &r->allocated));
    }
    if (v["healthy_count"]) {
      DEVMGR_RETURN_IF_ERROR(OptInt(v["healthy_count"], "healthy_count", 0, &r->healthy_count));
    }
    if (v["unhealthy_count"]) {
      DEVMGR_RETURN_IF_ERROR(
          OptInt(v["unhealthy_count"], "unhealthy_count", 0, &r->unhealthy_count));
    }
    if (v["registered"])
      DEVMGR_RETURN_IF_ERROR(OptBool(v["registered"], "registered", &r->registered));
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
    if (v["status_message"]) {
      DEVMGR_RETURN_IF_ERROR(OptMatcher(v["status_message"], "status_message", &p->status_message));
    }
    if (v["topology_hints"]) {
      DEVMGR_RETURN_IF_ERROR(
          ProviderHintsExpect(v["topology_hints"], &p->topology_hints, &p->absent_hints));
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

  // Reads `name` or `name_exact` (not both); *found tells whether either is there.
  absl::Status Exactable(const YAML::Node& v, const std::string& name, YAML::Node* out, bool* exact,
                         bool* found) const {
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
      DEVMGR_RETURN_IF_ERROR(ParseMountsExpect(n3, &c->mounts));
    }
    DEVMGR_RETURN_IF_ERROR(Exactable(v, "device_specs", &n4, &c->device_specs_exact, &found));
    if (found) {
      DEVMGR_RETURN_IF_ERROR(ParseDeviceSpecsExpect(n4, &c->device_specs));
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
      DEVMGR_RETURN_IF_ERROR(
          ProviderHintsExpect(v["topology_hints"], &c->topology_hints, &c->absent_hints));
    }
    if (v["allocated_resources_status"]) {
      DEVMGR_RETURN_IF_ERROR(ParseResourceHealthExpect(*this, v["allocated_resources_status"],
                                                       &c->allocated_resources_status.emplace()));
    }
    return absl::OkStatus();
  }

  // mounts: [{container_path, host_path, read_only}], each a matcher.
  absl::Status ParseMountsExpect(const YAML::Node& n3,
                                 std::optional<std::vector<MountExpect>>* out) const {
    DEVMGR_RETURN_IF_ERROR(ExpectSeq(n3, "mounts"));
    std::vector<MountExpect> ms;
    for (const YAML::Node& m : n3) {
      DEVMGR_RETURN_IF_ERROR(ExpectMap(m, "a mount"));
      DEVMGR_RETURN_IF_ERROR(CheckKeys(m, {"container_path", "host_path", "read_only"}, "a mount"));
      MountExpect me;
      if (m["container_path"]) {
        DEVMGR_RETURN_IF_ERROR(
            OptMatcher(m["container_path"], "container_path", &me.container_path));
      }
      if (m["host_path"])
        DEVMGR_RETURN_IF_ERROR(OptMatcher(m["host_path"], "host_path", &me.host_path));
      if (m["read_only"])
        DEVMGR_RETURN_IF_ERROR(OptBool(m["read_only"], "read_only", &me.read_only));
      ms.push_back(std::move(me));
    }
    *out = std::move(ms);
    return absl::OkStatus();
  }

  // device_specs: [{container_path, host_path, permissions}], each a matcher.
  absl::Status ParseDeviceSpecsExpect(const YAML::Node& n4,
                                      std::optional<std::vector<DeviceSpecExpect>>* out) const {
    DEVMGR_RETURN_IF_ERROR(ExpectSeq(n4, "device_specs"));
    std::vector<DeviceSpecExpect> ds;
    for (const YAML::Node& m : n4) {
      DEVMGR_RETURN_IF_ERROR(ExpectMap(m, "a device spec"));
      DEVMGR_RETURN_IF_ERROR(
          CheckKeys(m, {"container_path", "host_path", "permissions"}, "a device spec"));
      DeviceSpecExpect de;
      if (m["container_path"]) {
        DEVMGR_RETURN_IF_ERROR(
            OptMatcher(m["container_path"], "container_path", &de.container_path));
      }
      if (m["host_path"])
        DEVMGR_RETURN_IF_ERROR(OptMatcher(m["host_path"], "host_path", &de.host_path));
      if (m["permissions"]) {
        DEVMGR_RETURN_IF_ERROR(OptMatcher(m["permissions"], "permissions", &de.permissions));
      }
      ds.push_back(std::move(de));
    }
    *out = std::move(ds);
    return absl::OkStatus();
  }

  absl::Status ParseDeviceExpect(const YAML::Node& k, const YAML::Node& v, DeviceExpect* d) const {
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(k, "resource name", &d->resource));
    d->loc = Loc(k);
    const std::string where = fmt::format("devices['{}']", d->resource);
    DEVMGR_RETURN_IF_ERROR(Set(v, where, kDeviceKeys, &d->set));
    if (v.IsMap() && v["numa"]) {
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
    if (n["pod_count"])
      DEVMGR_RETURN_IF_ERROR(OptInt(n["pod_count"], "pod_count", 0, &e->pod_count));
    for (const bool get : {false, true}) {
      const char* key = get ? "get" : "pods";
      if (!n[key]) continue;
      const YAML::Node ps = n[key];
      DEVMGR_RETURN_IF_ERROR(
          ExpectMap(ps, fmt::format("pod_resources.{} (pod -> expectations)", key)));
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
  absl::Status ParsePrPod(const YAML::Node& k, const YAML::Node& v, bool get,
                          PrPodExpect* p) const {
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(k, "pod name", &p->ref));
    p->loc = Loc(k);
    const std::string where = fmt::format("pod_resources.{}['{}']", get ? "get" : "pods", p->ref);
    const size_t slash = p->ref.find('/');
    if (slash != std::string::npos && (slash == 0 || slash + 1 == p->ref.size() ||
                                       p->ref.find('/', slash + 1) != std::string::npos)) {
      return Error(k, fmt::format("{}: a pod is NAME or NAMESPACE/NAME", where));
    }
    if (!get && v.IsScalar() && v.Scalar() == "absent") {
      p->absent = true;
      return absl::OkStatus();
    }
    DEVMGR_RETURN_IF_ERROR(
        ExpectMap(v, get ? where + " ({containers: ...} or {error: ...})"
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
        } else if (d.IsScalar() && d.Scalar() == "absent") {
          c.absent = true;
        } else if (!d.IsNull()) {
          DEVMGR_RETURN_IF_ERROR(ExpectMap(
              d, fmt::format("container '{}' (resource -> count, ids or a mapping; none; absent)",
                             c.name)));
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
        if (e["devices"]) {
          DEVMGR_RETURN_IF_ERROR(
              Set(e["devices"], "checkpoint entry devices", kSetKeys, &ce.devices));
        }
        c->entries.push_back(std::move(ce));
      }
    }
    if (n["registered"]) {
      const YAML::Node reg_node = n["registered"];
      DEVMGR_RETURN_IF_ERROR(ExpectMap(reg_node, "checkpoint registered"));
      // Only lists: the exact map. Any absent, $NAME or mapping value: a
      // check per listed resource.
      bool lists = true;
      for (auto it = reg_node.begin(); it != reg_node.end(); ++it) lists &= it->second.IsSequence();
      std::map<std::string, std::vector<std::string>> reg;
      for (auto it = reg_node.begin(); it != reg_node.end(); ++it) {
        std::string r;
        DEVMGR_RETURN_IF_ERROR(NonEmptyString(it->first, "resource name", &r));
        if (lists) {
          DEVMGR_RETURN_IF_ERROR(StringList(it->second, "registered devices", &reg[r]));
        } else {
          DEVMGR_RETURN_IF_ERROR(Set(it->second, fmt::format("checkpoint.registered['{}']", r),
                                     kSetKeys, &c->registered_sets[r]));
        }
      }
      if (lists) c->registered = std::move(reg);
    }
    return absl::OkStatus();
  }

  absl::Status Method(const YAML::Node& n, std::string* out) const {
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(n, "method", out));
    if (Contains(kMethods, *out)) return absl::OkStatus();
    return UnknownName(n, fmt::format("unknown method '{}'", *out), *out, kMethods);
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
        DEVMGR_RETURN_IF_ERROR(CheckKeys(e, {"method", "args", "ok", "error", "code"}, "a call"));
        if (!e["method"]) return Error(e, "a call needs method");
        DEVMGR_RETURN_IF_ERROR(Method(e["method"], &ce.method));
        if (e["ok"]) DEVMGR_RETURN_IF_ERROR(OptBool(e["ok"], "ok", &ce.ok));
        if (e["error"]) DEVMGR_RETURN_IF_ERROR(OptMatcher(e["error"], "error", &ce.error));
        if (e["code"]) {
          std::string code;
          DEVMGR_RETURN_IF_ERROR(
              NonEmptyString(e["code"], "code (a gRPC code name, e.g. UNKNOWN)", &code));
          ce.code = code;
        }
        if ((ce.ok || ce.error || ce.code) && ce.method != "Register") {
          return Error(e, "ok, error and code apply to calls the plugin made (Register)");
        }
        if (ce.ok && *ce.ok && (ce.error || ce.code)) {
          return Error(e["ok"], "ok: true contradicts error/code");
        }
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
};

}  // namespace

absl::Status ParseExpect(const ScenarioReader& reader, const YAML::Node& n, const Scenario& sc,
                         Expectations* e) {
  return ExpectParser(reader).ParseExpect(n, sc, e);
}

}  // namespace devmgr::scenario
