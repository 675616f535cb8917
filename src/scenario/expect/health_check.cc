#include "scenario/expect/health_check.h"

#include <algorithm>
#include <regex>

#include "common/status_util.h"
#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

using Status = std::map<std::string, std::map<std::string, std::string>>;

// resource -> device -> health; a resource listed twice keeps its last entry.
Status AsMap(const std::vector<manager::ResourceHealthStatus>& list) {
  Status out;
  for (const manager::ResourceHealthStatus& rs : list) {
    auto& devs = out[rs.name];
    devs.clear();
    for (const manager::ResourceHealth& h : rs.resources) devs[h.resource_id] = h.health;
  }
  return out;
}

std::string MapString(const Status& m) {
  std::string out = "[";
  bool first = true;
  for (const auto& [res, devs] : m) {
    out += fmt::format("{}{}:", first ? "" : "; ", res);
    first = false;
    for (const auto& [id, h] : devs) out += fmt::format(" {}={}", id, h);
  }
  return out + "]";
}

}  // namespace

namespace {

// Device plugins report Healthy or Unhealthy; DRA drivers also Unknown
// (docs/resource-health.md).
absl::Status Health(const ScenarioReader& r, const YAML::Node& n, const std::string& where,
                    const std::string& res, std::string* out) {
  DEVMGR_RETURN_IF_ERROR(r.String(n, where + " health", out));
  if (*out == manager::kHealthHealthy || *out == manager::kHealthUnhealthy) {
    return absl::OkStatus();
  }
  if (*out == "Unknown" && res.rfind("claim:", 0) == 0) return absl::OkStatus();
  return r.Error(
      n, fmt::format(
             "{}: health must be Healthy or Unhealthy{}, not '{}'", where,
             res.rfind("claim:", 0) == 0 ? " or Unknown" : " (device plugins never report Unknown)",
             *out));
}

// A string or {regex: RE}.
absl::Status Text(const ScenarioReader& r, const YAML::Node& n, const std::string& where,
                  HealthText* out) {
  if (n.IsMap()) {
    DEVMGR_RETURN_IF_ERROR(r.CheckKeys(n, {"regex"}, where));
    if (!n["regex"]) return r.Error(n, where + " needs regex:");
    DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(n["regex"], where + ".regex", &out->value));
    try {
      std::regex re(out->value, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return r.Error(n["regex"],
                     fmt::format("{}: invalid regular expression: {}", where, e.what()));
    }
    out->regex = true;
    return absl::OkStatus();
  }
  return r.NonEmptyString(n, where, &out->value);
}

// [{id, health, message}]: the list form.
absl::Status ParseEntries(const ScenarioReader& r, const YAML::Node& n, const std::string& res,
                          const std::string& where, std::vector<HealthEntryExpect>* out) {
  for (const YAML::Node& e : n) {
    DEVMGR_RETURN_IF_ERROR(r.ExpectMap(e, where + " entry ({id, health, message})"));
    DEVMGR_RETURN_IF_ERROR(r.CheckKeys(e, {"id", "health", "message"}, where + " entry"));
    if (!e["id"] || !e["health"]) return r.Error(e, where + " entry needs id and health");
    HealthEntryExpect x;
    DEVMGR_RETURN_IF_ERROR(Text(r, e["id"], where + ".id", &x.id));
    DEVMGR_RETURN_IF_ERROR(Health(r, e["health"], where, res, &x.health));
    if (e["message"])
      DEVMGR_RETURN_IF_ERROR(Text(r, e["message"], where + ".message", &x.message.emplace()));
    out->push_back(std::move(x));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseResourceHealthExpect(const ScenarioReader& r, const YAML::Node& n,
                                       ResourceHealthExpect* out) {
  if (n.IsScalar() && n.Scalar() == "none") {
    out->none = true;
    return absl::OkStatus();
  }
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(
      n, "allocated_resources_status (none, or resource -> {device ID: Healthy|Unhealthy})"));
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string res;
    DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(it->first, "resource name", &res));
    const std::string where = fmt::format("allocated_resources_status['{}']", res);
    if (it->second.IsSequence()) {
      DEVMGR_RETURN_IF_ERROR(ParseEntries(r, it->second, res, where, &out->entries[res]));
      continue;
    }
    DEVMGR_RETURN_IF_ERROR(r.ExpectMap(
        it->second, where + " (device ID -> Healthy|Unhealthy, or a list of {id, health})"));
    auto& devs = out->resources[res];
    for (auto d = it->second.begin(); d != it->second.end(); ++d) {
      std::string id, health;
      DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(d->first, "device ID", &id));
      DEVMGR_RETURN_IF_ERROR(
          Health(r, d->second, fmt::format("{}['{}']", where, id), res, &health));
      devs[id] = health;
    }
  }
  return absl::OkStatus();
}

std::optional<std::vector<manager::ResourceHealthStatus>> ObservedResourceStatus(
    const PodResourceStatuses& all, const std::string& pod_uid, const std::string& container) {
  auto p = all.find(pod_uid);
  if (p == all.end()) return std::nullopt;
  for (const manager::ContainerResourceStatus& c : p->second) {
    if (c.name == container) return c.allocated_resources_status;
  }
  return std::nullopt;
}

std::string ResourceStatusString(
    const std::optional<std::vector<manager::ResourceHealthStatus>>& s) {
  if (!s) return "none";
  Status shown;  // as AsMap, a device's message after its health
  for (const manager::ResourceHealthStatus& rs : *s) {
    auto& devs = shown[rs.name];
    devs.clear();
    for (const manager::ResourceHealth& h : rs.resources) {
      devs[h.resource_id] =
          h.message ? fmt::format("{} (message \"{}\")", h.health, *h.message) : h.health;
    }
  }
  return MapString(shown);
}

namespace {

StringMatcher Matcher(const HealthText& t) { return StringMatcher{t.value, t.regex}; }

bool EntryMatches(const HealthEntryExpect& want, const manager::ResourceHealth& got) {
  if (!Matcher(want.id).Matches(got.resource_id) || want.health != got.health) return false;
  return !want.message || (got.message && Matcher(*want.message).Matches(*got.message));
}

// "[regex /gpu-0$/=Unhealthy (message regex /ECC/)]"
std::string EntriesString(const std::vector<HealthEntryExpect>& entries) {
  std::string out;
  for (const HealthEntryExpect& e : entries) {
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", Matcher(e.id).Describe(), e.health);
    if (e.message) out += fmt::format(" (message {})", Matcher(*e.message).Describe());
  }
  return "[" + out + "]";
}

std::string ExpectedString(const ResourceHealthExpect& want) {
  std::string out = MapString(want.resources);
  out.pop_back();  // "]"
  for (const auto& [res, entries] : want.entries) {
    out += fmt::format("{}{}: {}", out.size() > 1 ? "; " : "", res, EntriesString(entries));
  }
  return out + "]";
}

// The list-form entries against what the container has.
bool EntriesHold(const ResourceHealthExpect& want,
                 const std::vector<manager::ResourceHealthStatus>& got) {
  for (const auto& [res, entries] : want.entries) {
    const manager::ResourceHealthStatus* found = nullptr;
    for (const manager::ResourceHealthStatus& rs : got) {
      if (rs.name == res) found = &rs;  // a name listed twice: its last entry
    }
    if (found == nullptr || found->resources.size() != entries.size()) return false;
    if (!MatchUnordered(entries, found->resources, EntryMatches)) return false;
  }
  return true;
}

// Map-form entries equal, list-form entries present, no other entry.
bool Holds(const ResourceHealthExpect& want,
           const std::vector<manager::ResourceHealthStatus>& got) {
  Status map = AsMap(got);
  for (const auto& [res, entries] : want.entries) {
    if (map.erase(res) == 0) return false;
  }
  return map == want.resources && EntriesHold(want, got);
}

}  // namespace

void CheckResourceHealth(const Location& loc, const std::string& where,
                         const ResourceHealthExpect& want,
                         const std::optional<std::vector<manager::ResourceHealthStatus>>& got,
                         std::vector<Failure>* out) {
  const std::string w = where + ".allocated_resources_status";
  if (want.none) {
    if (got) out->push_back(Failure{loc, w, "none", ResourceStatusString(got)});
    return;
  }
  const std::string actual =
      got ? ResourceStatusString(got) : "none (the container has no allocatedResourcesStatus)";
  if (!got || !Holds(want, *got)) out->push_back(Failure{loc, w, ExpectedString(want), actual});
}

void ResourceHealthNotes(const Expectations& e, const Observed& o,
                         std::vector<std::string>* notes) {
  for (const PodExpect& p : e.pods) {
    const node::PodRecord* rec = FindPod(o.pods, p.ref);
    if (rec == nullptr) continue;
    for (const ContainerExpect& c : p.containers) {
      if (!c.allocated_resources_status) continue;
      notes->push_back(fmt::format(
          "pod {} container {}: allocatedResourcesStatus {}", rec->pod.name, c.name,
          ResourceStatusString(ObservedResourceStatus(o.pod_statuses, rec->pod.uid, c.name))));
    }
  }
}

namespace {

absl::Status ParseContainer(const ExpectReader& r, const YAML::Node& v, ContainerExpect* c) {
  if (!v["allocated_resources_status"]) return absl::OkStatus();
  return ParseResourceHealthExpect(r, v["allocated_resources_status"],
                                   &c->allocated_resources_status.emplace());
}

void CheckContainer(const ContainerCheck& cc, std::vector<Failure>* out) {
  const ContainerExpect& c = cc.want;
  if (!c.allocated_resources_status) return;
  CheckResourceHealth(c.loc, cc.where, *c.allocated_resources_status,
                      ObservedResourceStatus(cc.observed.pod_statuses, cc.pod.pod.uid, c.name),
                      out);
}

}  // namespace

const ExpectKind& HealthExpectKind() {
  static const ExpectKind kKind = {
      .name = "allocated_resources_status",
      .container_keys = {"allocated_resources_status"},
      .parse_container = ParseContainer,
      .check_container = CheckContainer,
  };
  return kKind;
}

}  // namespace devmgr::scenario
