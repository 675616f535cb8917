#include "podresources/json.h"

#include <algorithm>
#include <vector>

#include "fmt/format.h"

namespace devmgr::podresources {
namespace {

using Json = nlohmann::ordered_json;

Json TopologyJson(const v1::TopologyInfo& t) {
  Json j = Json::object();
  if (t.nodes_size() > 0) {
    Json nodes = Json::array();
    for (const auto& n : t.nodes()) {
      Json nj = Json::object();
      nj["ID"] = n.id();  // shown even for node 0, unlike Go's omitempty
      nodes.push_back(nj);
    }
    j["nodes"] = nodes;
  }
  return j;
}

Json DevicesJson(const google::protobuf::RepeatedPtrField<v1::ContainerDevices>& devs) {
  Json a = Json::array();
  for (const auto& d : devs) {
    Json j = Json::object();
    if (!d.resource_name().empty()) j["resource_name"] = d.resource_name();
    if (d.device_ids_size() > 0) {
      j["device_ids"] = std::vector<std::string>(d.device_ids().begin(), d.device_ids().end());
    }
    if (d.has_topology()) j["topology"] = TopologyJson(d.topology());
    a.push_back(j);
  }
  return a;
}

Json MemoryJson(const google::protobuf::RepeatedPtrField<v1::ContainerMemory>& mem) {
  Json a = Json::array();
  for (const auto& m : mem) {
    Json j = Json::object();
    if (!m.memory_type().empty()) j["memory_type"] = m.memory_type();
    if (m.size() != 0) j["size"] = m.size();
    if (m.has_topology()) j["topology"] = TopologyJson(m.topology());
    a.push_back(j);
  }
  return a;
}

// Go's JSON of []*DynamicResource (omitempty fields left out; share_id only
// when set).
Json DynamicResourcesJson(const google::protobuf::RepeatedPtrField<v1::DynamicResource>& drs) {
  Json a = Json::array();
  for (const auto& dr : drs) {
    Json j = Json::object();
    if (!dr.claim_name().empty()) j["claim_name"] = dr.claim_name();
    if (!dr.claim_namespace().empty()) j["claim_namespace"] = dr.claim_namespace();
    if (dr.claim_resources_size() > 0) {
      Json crs = Json::array();
      for (const auto& cr : dr.claim_resources()) {
        Json cj = Json::object();
        if (cr.cdi_devices_size() > 0) {
          Json cdi = Json::array();
          for (const auto& d : cr.cdi_devices()) {
            Json dj = Json::object();
            if (!d.name().empty()) dj["name"] = d.name();
            cdi.push_back(dj);
          }
          cj["cdi_devices"] = cdi;
        }
        if (!cr.driver_name().empty()) cj["driver_name"] = cr.driver_name();
        if (!cr.pool_name().empty()) cj["pool_name"] = cr.pool_name();
        if (!cr.device_name().empty()) cj["device_name"] = cr.device_name();
        if (cr.has_share_id()) cj["share_id"] = cr.share_id();
        crs.push_back(cj);
      }
      j["claim_resources"] = crs;
    }
    a.push_back(j);
  }
  return a;
}

Json PodJson(const v1::PodResources& p) {
  Json j = Json::object();
  if (!p.name().empty()) j["name"] = p.name();
  if (!p.namespace_().empty()) j["namespace"] = p.namespace_();
  if (p.containers_size() > 0) {
    Json cs = Json::array();
    for (const auto& c : p.containers()) {
      Json cj = Json::object();
      if (!c.name().empty()) cj["name"] = c.name();
      if (c.devices_size() > 0) cj["devices"] = DevicesJson(c.devices());
      if (c.cpu_ids_size() > 0) {
        cj["cpu_ids"] = std::vector<int64_t>(c.cpu_ids().begin(), c.cpu_ids().end());
      }
      if (c.memory_size() > 0) cj["memory"] = MemoryJson(c.memory());
      if (c.dynamic_resources_size() > 0) {
        cj["dynamic_resources"] = DynamicResourcesJson(c.dynamic_resources());
      }
      cs.push_back(cj);
    }
    j["containers"] = cs;
  }
  return j;
}

std::string Numa(const v1::ContainerDevices& d) {
  if (!d.has_topology() || d.topology().nodes_size() == 0) return "-";
  std::string s;
  for (const auto& n : d.topology().nodes()) {
    if (!s.empty()) s += ",";
    s += std::to_string(n.id());
  }
  return s;
}

// Left-aligned columns separated by three spaces, like kubectl.
std::string Columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w;
  for (const auto& r : rows) {
    if (w.size() < r.size()) w.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(w[i] - r[i].size() + 3, ' ');
    }
    out += line + "\n";
  }
  return out;
}

// Device-plugin devices first, one row per entry; then DRA devices, one row
// per claim resource: RESOURCE "claim:<claim>", DEVICE "<driver>/<pool>/<device>"
// (the names the kubelet gives them in allocatedResourcesStatus), NUMA "-".
void PodRows(const v1::PodResources& p, std::vector<std::vector<std::string>>* rows) {
  for (const auto& c : p.containers()) {
    const size_t before = rows->size();
    for (const auto& d : c.devices()) {
      std::string ids;
      for (const auto& id : d.device_ids()) ids += (ids.empty() ? "" : ",") + id;
      rows->push_back({p.namespace_(), p.name(), c.name(), d.resource_name(), ids, Numa(d)});
    }
    for (const auto& dr : c.dynamic_resources()) {
      for (const auto& cr : dr.claim_resources()) {
        rows->push_back({p.namespace_(), p.name(), c.name(), "claim:" + dr.claim_name(),
                         cr.driver_name() + "/" + cr.pool_name() + "/" + cr.device_name(), "-"});
      }
    }
    if (rows->size() == before)
      rows->push_back({p.namespace_(), p.name(), c.name(), "-", "-", "-"});
  }
}

}  // namespace

Json ToJson(const v1::ListPodResourcesResponse& r) {
  Json j = Json::object();
  Json pods = Json::array();
  for (const auto& p : r.pod_resources()) pods.push_back(PodJson(p));
  j["pod_resources"] = pods;
  return j;
}

Json ToJson(const v1::AllocatableResourcesResponse& r) {
  Json j = Json::object();
  j["devices"] = DevicesJson(r.devices());
  if (r.cpu_ids_size() > 0) {
    j["cpu_ids"] = std::vector<int64_t>(r.cpu_ids().begin(), r.cpu_ids().end());
  }
  if (r.memory_size() > 0) j["memory"] = MemoryJson(r.memory());
  return j;
}

Json ToJson(const v1::GetPodResourcesResponse& r) {
  Json j = Json::object();
  if (r.has_pod_resources()) j["pod_resources"] = PodJson(r.pod_resources());
  return j;
}

std::string ToTable(const v1::ListPodResourcesResponse& r) {
  std::vector<std::vector<std::string>> rows = {
      {"NAMESPACE", "POD", "CONTAINER", "RESOURCE", "DEVICE", "NUMA"}};
  for (const auto& p : r.pod_resources()) PodRows(p, &rows);
  return Columns(rows);
}

std::string ToTable(const v1::GetPodResourcesResponse& r) {
  std::vector<std::vector<std::string>> rows = {
      {"NAMESPACE", "POD", "CONTAINER", "RESOURCE", "DEVICE", "NUMA"}};
  PodRows(r.pod_resources(), &rows);
  return Columns(rows);
}

std::string ToTable(const v1::AllocatableResourcesResponse& r) {
  std::vector<std::vector<std::string>> rows = {{"RESOURCE", "DEVICE", "NUMA"}};
  for (const auto& d : r.devices()) {
    std::string ids;
    for (const auto& id : d.device_ids()) ids += (ids.empty() ? "" : ",") + id;
    rows.push_back({d.resource_name(), ids, Numa(d)});
  }
  return Columns(rows);
}

}  // namespace devmgr::podresources
