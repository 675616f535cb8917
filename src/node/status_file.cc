#include "node/status_file.h"

#include <dirent.h>

#include <fstream>

#include "common/fs.h"
#include "common/go_format.h"
#include "fmt/format.h"

namespace devmgr::node {
namespace {

std::string Rfc3339(absl::Time t) {
  if (t == absl::InfinitePast()) return "";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

std::string Base64(const std::string& in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < in.size()) {
    uint32_t v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// A JSON string for an arbitrary byte string (invalid UTF-8 replaced).
nlohmann::ordered_json Text(const std::string& s) {
  if (IsValidUtf8(s)) return s;
  // nlohmann replaces invalid sequences at dump time; keep the raw bytes
  // here and let the dump's error handler do it.
  return s;
}

nlohmann::ordered_json RunOptionsJson(const manager::RunContainerOptions& o) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json envs = nlohmann::ordered_json::object();
  for (const auto& e : o.envs) envs[e.name] = e.value;
  j["envs"] = std::move(envs);
  nlohmann::ordered_json mounts = nlohmann::ordered_json::array();
  for (const auto& m : o.mounts) {
    mounts.push_back({{"containerPath", m.container_path},
                      {"hostPath", m.host_path},
                      {"readOnly", m.read_only}});
  }
  j["mounts"] = std::move(mounts);
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const auto& d : o.devices) {
    devices.push_back({{"containerPath", d.path_in_container},
                       {"hostPath", d.path_on_host},
                       {"permissions", d.permissions}});
  }
  j["devices"] = std::move(devices);
  nlohmann::ordered_json annotations = nlohmann::ordered_json::object();
  for (const auto& a : o.annotations) annotations[a.name] = a.value;
  j["annotations"] = std::move(annotations);
  j["cdiDevices"] = o.cdi_devices;
  return j;
}

// allocatedResourcesStatus as in a v1.ContainerStatus.
nlohmann::ordered_json AllocatedResourcesStatusJson(
    const std::vector<manager::ResourceHealthStatus>& list) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const manager::ResourceHealthStatus& rs : list) {
    nlohmann::ordered_json jr;
    jr["name"] = rs.name;
    nlohmann::ordered_json devs = nlohmann::ordered_json::array();
    for (const manager::ResourceHealth& h : rs.resources) {
      nlohmann::ordered_json d = {{"resourceID", Text(h.resource_id)}, {"health", h.health}};
      // DRA devices (1.36+): the driver's message, as v1.ResourceHealth has it.
      if (h.message.has_value()) d["message"] = *h.message;
      devs.push_back(std::move(d));
    }
    jr["resources"] = std::move(devs);
    out.push_back(std::move(jr));
  }
  return out;
}

// The container's allocatedResourcesStatus, or nullptr when it has none.
const std::vector<manager::ResourceHealthStatus>* ResourceStatusOf(const StatusInput& in,
                                                                   const std::string& uid,
                                                                   const std::string& container) {
  auto p = in.pod_statuses.find(uid);
  if (p == in.pod_statuses.end()) return nullptr;
  for (const manager::ContainerResourceStatus& c : p->second) {
    if (c.name == container && c.allocated_resources_status) return &*c.allocated_resources_status;
  }
  return nullptr;
}

nlohmann::ordered_json PodsJson(const StatusInput& in) {
  const std::vector<PodRecord>& pods = in.pods;
  const std::vector<manager::PodAllocation>& allocations = in.allocations;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const PodRecord& r : pods) {
    const manager::PodAllocation* alloc = nullptr;
    for (const auto& a : allocations) {
      if (a.pod_uid == r.pod.uid) alloc = &a;
    }
    nlohmann::ordered_json jp;
    jp["namespace"] = r.pod.namespace_;
    jp["name"] = r.pod.name;
    jp["uid"] = r.pod.uid;
    if (!r.pod.source.empty()) jp["source"] = r.pod.source;
    jp["phase"] = std::string(pod::PhaseName(r.phase));
    jp["admitted"] = r.reason.empty() && r.phase != pod::Phase::kPending;
    jp["deleted"] = r.deleted;
    if (!r.reason.empty()) {
      jp["reason"] = r.reason;
      jp["message"] = r.message;
    }
    nlohmann::ordered_json containers = nlohmann::ordered_json::array();
    for (const ContainerRecord& c : r.containers) {
      nlohmann::ordered_json jc;
      jc["name"] = c.name;
      jc["containerID"] = c.container_id;
      jc["running"] = c.running;
      jc["restartCount"] = c.restart_count;
      nlohmann::ordered_json devices = nlohmann::ordered_json::object();
      if (alloc != nullptr) {
        for (const auto& ca : alloc->containers) {
          if (ca.container_name != c.name) continue;
          for (const auto& [res, ids] : ca.devices) devices[res] = ids;
        }
      }
      jc["devices"] = std::move(devices);
      // The topology manager's affinity for the container, as NUMA ids.
      if (c.numa_affinity.has_value()) {
        nlohmann::ordered_json ids = nlohmann::ordered_json::array();
        for (int i = 0; i < 64; ++i) {
          if ((*c.numa_affinity >> i) & 1) ids.push_back(i);
        }
        jc["numaAffinity"] = std::move(ids);
      }
      if (c.run_options.has_value()) {
        jc["runtimeOptions"] = RunOptionsJson(*c.run_options);
      } else {
        jc["runtimeOptions"] = nullptr;
      }
      if (!c.cdi_devices.empty()) jc["draCdiDevices"] = c.cdi_devices;
      if (!c.start_error.empty()) jc["startError"] = c.start_error;
      if (const auto* health = ResourceStatusOf(in, r.pod.uid, c.name)) {
        jc["allocatedResourcesStatus"] = AllocatedResourcesStatusJson(*health);
      }
      containers.push_back(std::move(jc));
    }
    jp["containers"] = std::move(containers);
    out.push_back(std::move(jp));
  }
  return out;
}

}  // namespace

void NodeResources::Apply(const manager::CapacityResult& r) {
  for (const auto& [name, v] : r.capacity) capacity[name] = v;
  for (const auto& name : r.removed) capacity[name] = 0;
  // Allocatable: device-plugin values override; other extended resources
  // follow capacity (no reservations are modelled).
  allocatable.clear();
  for (const auto& [name, v] : capacity) {
    auto it = r.allocatable.find(name);
    allocatable[name] = it != r.allocatable.end() ? it->second : v;
  }
  for (const auto& name : r.removed) allocatable[name] = 0;
}

void NodeResources::ZeroExtended() {
  for (auto& [name, v] : capacity) v = 0;
  for (auto& [name, v] : allocatable) v = 0;
}

bool ShouldResetExtendedResources(const std::string& plugin_dir) {
  DIR* d = opendir(plugin_dir.c_str());
  if (d == nullptr) return false;
  bool empty = true;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') {
      empty = false;
      break;
    }
  }
  closedir(d);
  return empty;
}

std::optional<NodeResources> ReadStatusFileNode(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("node") || !doc["node"].is_object()) return std::nullopt;
  NodeResources n;
  for (const auto& [key, dest] :
       {std::pair{"capacity", &n.capacity}, {"allocatable", &n.allocatable}}) {
    const nlohmann::json& m = doc["node"].value(key, nlohmann::json::object());
    if (!m.is_object()) return std::nullopt;
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (!it.value().is_number_integer()) return std::nullopt;
      (*dest)[it.key()] = it.value().get<int64_t>();
    }
  }
  return n;
}

nlohmann::ordered_json BuildStatus(const StatusInput& in) {
  nlohmann::ordered_json doc;
  doc["kubeletVersion"] = in.kubelet_version;
  doc["resourceHealthStatus"] = in.resource_health_status;
  doc["pluginDir"] = in.plugin_dir;
  if (!in.registry_dir.empty()) doc["pluginsRegistryDir"] = in.registry_dir;
  doc["updated"] = Rfc3339(in.now);
  doc["node"] = {{"capacity", in.node.capacity}, {"allocatable", in.node.allocatable}};
  nlohmann::ordered_json resources = nlohmann::ordered_json::object();
  for (const manager::ResourceStatus& r : in.resources) {
    nlohmann::ordered_json jr;
    jr["capacity"] = r.capacity;
    if (r.allocatable.has_value()) {
      jr["allocatable"] = *r.allocatable;
    } else {
      jr["allocatable"] = nullptr;
    }
    nlohmann::ordered_json devices = nlohmann::ordered_json::array();
    for (const manager::DeviceInfo& d : r.devices) {
      nlohmann::ordered_json jd;
      jd["id"] = Text(d.id);
      if (!IsValidUtf8(d.id)) jd["idBase64"] = Base64(d.id);
      jd["health"] = Text(d.health);
      if (d.numa_nodes.has_value()) {
        jd["numaNodes"] = *d.numa_nodes;
      } else {
        jd["numaNodes"] = nullptr;
      }
      devices.push_back(std::move(jd));
    }
    jr["devices"] = std::move(devices);
    jr["healthy"] = r.healthy.size();
    jr["unhealthy"] = r.unhealthy.size();
    jr["allocated"] = r.allocated;
    nlohmann::ordered_json ep;
    if (!r.has_endpoint) {
      ep["state"] = "none";
    } else {
      ep["socket"] = r.endpoint_socket;
      ep["state"] = r.stopped ? "stopped" : "connected";
      ep["since"] = Rfc3339(r.stopped ? r.stopped_since : r.connected_since);
    }
    jr["endpoint"] = std::move(ep);
    resources[r.resource_name] = std::move(jr);
  }
  doc["resources"] = std::move(resources);
  nlohmann::ordered_json plugins = nlohmann::ordered_json::array();
  for (const PluginProcessStatus& p : in.plugins) {
    nlohmann::ordered_json jp;
    jp["command"] = p.command;
    jp["pid"] = p.pid;
    jp["state"] = p.running ? "running" : "exited";
    jp["restarts"] = p.restarts;
    if (p.last_exit_code.has_value()) {
      jp["lastExitCode"] = *p.last_exit_code;
    } else {
      jp["lastExitCode"] = nullptr;
    }
    plugins.push_back(std::move(jp));
  }
  doc["plugins"] = std::move(plugins);
  doc["pods"] = PodsJson(in);
  return doc;
}

}  // namespace devmgr::node
