// The normalizations of the DRA comparison (compare_kubelet_dra.h) and
// devmgr's side of it: what is observed after each step.
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "apiserver/resource_type.h"
#include "apiserver/store.h"
#include "node/dra_pods.h"
#include "scenario/compare/compare_kubelet_dra.h"
#include "scenario/compare/compare_kubelet_snapshot.h"
#include "scenario/run/run_context.h"

namespace devmgr::scenario {
namespace compare {

namespace {

// The kubelet's pod event prefix of a failed PrepareDynamicResources
// (node/dra_pods.cc writes it in front of the manager's error).
constexpr char kPrepareEventPrefix[] = "Failed to prepare dynamic resources: ";

}  // namespace

Json DraCheckpointJson(const std::string& bytes, bool exists) {
  if (!exists) return Json();
  Json outer = Json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (outer.is_discarded() || !outer.is_object() || !outer.contains("Data") ||
      !outer["Data"].is_string()) {
    return Json{{"unreadable", "not a checkpoint file ({\"Data\": string, \"Checksum\": n})"}};
  }
  Json data = Json::parse(outer["Data"].get<std::string>(), nullptr, false);
  if (data.is_discarded() || !data.is_object()) {
    return Json{{"unreadable", "Data is not JSON"}};
  }
  if (data.contains("ClaimInfoStateList") && data["ClaimInfoStateList"].is_array()) {
    Json& list = data["ClaimInfoStateList"];
    std::stable_sort(list.begin(), list.end(), [](const Json& a, const Json& b) {
      return a.value("ClaimUID", "") < b.value("ClaimUID", "");
    });
  }
  return data;
}

Json DraCallsJson(const std::vector<nlohmann::json>& records) {
  Json out = Json::array();
  for (const Json& r : records) {
    Json claims = Json::array();
    for (const Json& c : r.value("claims", Json::array())) {
      claims.push_back(c.value("namespace", "") + "/" + c.value("name", "") + " " +
                       c.value("uid", ""));
    }
    std::sort(claims.begin(), claims.end());
    out.push_back({{"method", r.value("method", "")},
                   {"service", r.value("service", "")},
                   {"claims", claims},
                   {"errors", r.value("errors", Json::object())}});
  }
  return out;
}

Json DevmgrPrepareVerdict(const std::string& reason, const std::string& message) {
  if (reason != node::kDraPrepareFailed) return Json{{"prepared", true}, {"error", ""}};
  std::string error = message;
  if (absl::StartsWith(error, kPrepareEventPrefix)) {
    error = error.substr(sizeof(kPrepareEventPrefix) - 1);
  }
  return Json{{"prepared", false}, {"error", error}};
}

Json HealthStatusJson(const Json& statuses) {
  if (!statuses.is_array()) return Json();
  Json out = Json::array();
  for (const Json& st : statuses) {
    Json resources = Json::array();
    for (const Json& r : st.value("resources", Json::array())) {
      Json x = {{"resourceID", r.value("resourceID", "")}};
      for (const char* k : {"health", "message"}) {
        if (r.contains(k) && r[k].is_string() && !r[k].get<std::string>().empty()) x[k] = r[k];
      }
      resources.push_back(std::move(x));
    }
    std::sort(resources.begin(), resources.end(), [](const Json& a, const Json& b) {
      return a["resourceID"].get<std::string>() < b["resourceID"].get<std::string>();
    });
    out.push_back({{"name", st.value("name", "")}, {"resources", resources}});
  }
  std::sort(out.begin(), out.end(), [](const Json& a, const Json& b) {
    return a["name"].get<std::string>() < b["name"].get<std::string>();
  });
  return out;
}

void GroupCdiByClaim(Json* observation) {
  std::map<std::string, std::string> claim_of;  // CDI ID -> claim UID
  const Json& cp = observation->value("checkpoint", Json());
  if (cp.is_object() && cp.contains("ClaimInfoStateList") && cp["ClaimInfoStateList"].is_array()) {
    for (const Json& e : cp["ClaimInfoStateList"]) {
      const std::string uid = e.value("ClaimUID", "");
      const Json& drivers = e.value("DriverState", Json::object());
      for (auto d = drivers.begin(); d != drivers.end(); ++d) {
        for (const Json& dev : d.value().value("Devices", Json::array())) {
          for (const Json& id : dev.value("CDIDeviceIDs", Json::array())) {
            if (id.is_string()) claim_of.emplace(id.get<std::string>(), uid);
          }
        }
      }
    }
  }
  if (!observation->contains("pods")) return;
  for (auto p = (*observation)["pods"].begin(); p != (*observation)["pods"].end(); ++p) {
    if (!p.value().contains("containers")) continue;
    for (auto c = p.value()["containers"].begin(); c != p.value()["containers"].end(); ++c) {
      if (!c.value().is_array()) continue;
      auto claim = [&claim_of](const Json& id) {
        const auto it = id.is_string() ? claim_of.find(id.get<std::string>()) : claim_of.end();
        return it == claim_of.end() ? std::string() : it->second;
      };
      std::stable_sort(c.value().begin(), c.value().end(),
                       [&claim](const Json& a, const Json& b) { return claim(a) < claim(b); });
    }
  }
}

}  // namespace compare

namespace {

using compare::Json;

std::string ReadFile(const std::string& path, bool* exists) {
  std::ifstream in(path, std::ios::binary);
  *exists = static_cast<bool>(in);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The app containers' allocatedResourcesStatus as the DRA manager's
// UpdateAllocatedResourcesStatus writes it (Node::DraUpdateStatuses).
Json DevmgrHealth(RunContext& ctx, const pod::Pod& pod) {
  std::vector<manager::ContainerResourceStatus> statuses;
  for (const pod::Container& c : pod.containers) {
    manager::ContainerResourceStatus st;
    st.name = c.name;
    statuses.push_back(std::move(st));
  }
  ctx.node->DraUpdateStatuses(pod.uid, &statuses);
  Json out = Json::object();
  for (const manager::ContainerResourceStatus& st : statuses) {
    if (!st.allocated_resources_status.has_value()) {
      out[st.name] = Json();
      continue;
    }
    Json list = Json::array();
    for (const manager::ResourceHealthStatus& rs : *st.allocated_resources_status) {
      Json resources = Json::array();
      for (const manager::ResourceHealth& h : rs.resources) {
        resources.push_back({{"resourceID", h.resource_id},
                             {"health", h.health},
                             {"message", h.message.value_or("")}});
      }
      list.push_back({{"name", rs.name}, {"resources", resources}});
    }
    out[st.name] = compare::HealthStatusJson(list);
  }
  return out;
}

}  // namespace

DraObservation ObserveDevmgrDra(RunContext& ctx) {
  DraObservation o;
  Json pods = Json::object();
  if (ctx.pods != nullptr) {
    for (const node::PodRecord& rec : ctx.pods->Pods()) {
      const std::string& uid = rec.pod.uid;
      if (rec.reason == node::kDraSchedulingFailed) {
        pods[uid] = {{"scheduling_failed", rec.message}};
        continue;
      }
      Json p = compare::DevmgrPrepareVerdict(rec.reason, rec.message);
      // Deleted, or terminated (set_phase): the kubelet unprepares both.
      const bool gone = rec.deleted || rec.phase == pod::Phase::kSucceeded ||
                        (rec.phase == pod::Phase::kFailed && rec.reason.empty());
      p["gone"] = gone;
      // The CDI IDs a container would get if it started now (none while
      // the kubelet is stopped).
      if (!gone && p["prepared"].get<bool>() && ctx.kubelet_running()) {
        Json containers = Json::object();
        for (const pod::Container* c : pod::AllContainersInKubeletOrder(rec.pod)) {
          containers[c->name] = ctx.node->DraCdiDevices(uid, c->name);
        }
        p["containers"] = containers;
        if (ctx.resource_health) p["health"] = DevmgrHealth(ctx, rec.pod);
      }
      pods[uid] = p;
      if (ctx.node != nullptr) {
        if (std::optional<Json> m = ctx.node->DraPodManifest(uid)) o.pods[uid] = *m;
      }
    }
  }
  Json calls = Json::object();
  const std::vector<dra::DriverCallRecord> node_calls = ctx.DraCalls();
  for (const auto& h : ctx.hosts) {
    if (h->spec().dra_driver.empty()) continue;
    if (h->has_call_log()) calls[h->spec().name] = compare::DraCallsJson(h->CallsSinceMark());
    bool called = false;
    for (const dra::DriverCallRecord& c : node_calls) called |= c.driver == h->spec().dra_driver;
    if (called && (!h->has_call_log() || h->Calls().empty())) {
      o.silent_drivers.push_back(h->spec().name);
    }
  }
  bool exists = false;
  const std::string bytes = ReadFile(ctx.DraCheckpointPath(), &exists);
  o.compared = {{"pods", pods}, {"calls", calls}};
  // While the kubelet is stopped the oracle's file is not read (its DRA
  // manager would start): neither side's is compared.
  if (ctx.kubelet_running()) {
    o.compared["checkpoint"] = compare::DraCheckpointJson(bytes, exists);
  }
  compare::ReplaceInStrings(&o.compared, ctx.work_dir, compare::kWorkDirPlaceholder);
  if (ctx.api != nullptr) {
    apiserver::ApiOr<apiserver::Store::ListResult> list =
        ctx.api->store().List(apiserver::ResourceClaims(), "", {});
    if (list.ok()) {
      for (const Json& c : list.value.items) {
        o.claims[c["metadata"].value("namespace", "") + "/" + c["metadata"].value("name", "")] = c;
      }
    }
  }
  return o;
}

}  // namespace devmgr::scenario
