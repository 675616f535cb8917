#include "scenario/expect/health_check.h"

#include <algorithm>

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
    DEVMGR_RETURN_IF_ERROR(r.ExpectMap(it->second, where + " (device ID -> Healthy|Unhealthy)"));
    auto& devs = out->resources[res];
    for (auto d = it->second.begin(); d != it->second.end(); ++d) {
      std::string id, health;
      DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(d->first, "device ID", &id));
      DEVMGR_RETURN_IF_ERROR(r.String(d->second, where + " health", &health));
      if (health != manager::kHealthHealthy && health != manager::kHealthUnhealthy) {
        return r.Error(d->second,
                       fmt::format("{}['{}']: health must be Healthy or Unhealthy (device plugins "
                                   "never report Unknown), not '{}'",
                                   where, id, health));
      }
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
  return MapString(AsMap(*s));
}

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
  if (!got || AsMap(*got) != want.resources) {
    out->push_back(Failure{loc, w, MapString(want.resources), actual});
  }
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
