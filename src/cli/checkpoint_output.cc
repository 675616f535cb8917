#include "cli/checkpoint_output.h"

#include <map>
#include <vector>

#include "checkpoint/inspect.h"
#include "fmt/format.h"

namespace devmgr::cli {
namespace {

using checkpoint::AllocRespView;
using checkpoint::CheckpointData;
using checkpoint::FormatVersion;
using checkpoint::PodDevicesEntry;
using checkpoint::Printable;

const char* FormatName(FormatVersion f) { return f == FormatVersion::kV1 ? "v1" : "v2"; }

std::string ChecksumLine(const checkpoint::VerifyResult& r) {
  if (r.valid) return fmt::format("{} (valid)", r.stored);
  return fmt::format(
      "CORRUPT: stored {}, computed {} (a kubelet discards this file at start: \"checkpoint is "
      "corrupted\"; `devmgr checkpoint repair` recomputes it)",
      r.stored, r.computed);
}

void AppendAllocResp(std::string* out, const std::optional<std::string>& bytes,
                     const char* indent) {
  if (!bytes) {
    *out +=
        fmt::format("{}AllocResp: null (the kubelet skips such an entry when it writes)\n", indent);
    return;
  }
  const AllocRespView v = checkpoint::DecodeAllocResp(*bytes);
  if (!v.ok) {
    *out += fmt::format(
        "{}AllocResp: {} bytes, NOT a ContainerAllocateResponse (the kubelet skips this "
        "entry when it reads)\n",
        indent, v.size);
    return;
  }
  const bool empty = v.envs.empty() && v.mounts.empty() && v.devices.empty() &&
                     v.annotations.empty() && v.cdi_devices.empty();
  *out +=
      fmt::format("{}AllocResp: {} bytes{}\n", indent, v.size, empty ? " (empty response)" : "");
  for (const auto& [k, val] : v.envs)
    *out += fmt::format("{}  env        {}={}\n", indent, Printable(k), Printable(val));
  for (const auto& m : v.mounts) {
    *out += fmt::format("{}  mount      {} <- {}{}\n", indent, Printable(m.container_path),
                        Printable(m.host_path), m.read_only ? " (ro)" : "");
  }
  for (const auto& d : v.devices) {
    *out += fmt::format("{}  device     {} <- {} ({})\n", indent, Printable(d.container_path),
                        Printable(d.host_path),
                        d.permissions.empty() ? "no permissions" : Printable(d.permissions));
  }
  for (const auto& [k, val] : v.annotations) {
    *out += fmt::format("{}  annotation {}={}\n", indent, Printable(k), Printable(val));
  }
  for (const auto& c : v.cdi_devices)
    *out += fmt::format("{}  cdi        {}\n", indent, Printable(c));
}

std::string ListText(const checkpoint::DeviceList& l) {
  if (!l) return "null";
  if (l->empty()) return "[]";
  std::string out;
  for (const auto& id : *l) {
    if (!out.empty()) out += ' ';
    out += Printable(id);
  }
  return out;
}

std::string DevicesText(const PodDevicesEntry& e, FormatVersion f) {
  if (!e.device_ids) return "DeviceIDs null";
  if (e.device_ids->empty()) return "DeviceIDs {}";
  if (f == FormatVersion::kV1)
    return "devices (V1: NUMA not recorded): " + ListText(e.device_ids->begin()->second);
  std::string out;
  for (const auto& [node, ids] : *e.device_ids) {
    if (!out.empty()) out += "; ";
    out += node == -1 ? fmt::format("no NUMA (-1): {}", ListText(ids))
                      : fmt::format("NUMA {}: {}", node, ListText(ids));
  }
  return out;
}

nlohmann::ordered_json ListJson(const checkpoint::DeviceList& l) {
  if (!l) return nullptr;
  return nlohmann::ordered_json(*l);
}

nlohmann::ordered_json AllocRespJson(const std::optional<std::string>& bytes) {
  if (!bytes) return nullptr;
  const AllocRespView v = checkpoint::DecodeAllocResp(*bytes);
  nlohmann::ordered_json j = {{"bytes", v.size}};
  if (!v.ok) {
    j["error"] = "not a ContainerAllocateResponse";
    return j;
  }
  nlohmann::ordered_json envs = nlohmann::ordered_json::object();
  for (const auto& [k, val] : v.envs) envs[k] = val;
  nlohmann::ordered_json annotations = nlohmann::ordered_json::object();
  for (const auto& [k, val] : v.annotations) annotations[k] = val;
  nlohmann::ordered_json mounts = nlohmann::ordered_json::array();
  for (const auto& m : v.mounts) {
    mounts.push_back({{"containerPath", m.container_path},
                      {"hostPath", m.host_path},
                      {"readOnly", m.read_only}});
  }
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const auto& d : v.devices) {
    devices.push_back({{"containerPath", d.container_path},
                       {"hostPath", d.host_path},
                       {"permissions", d.permissions}});
  }
  j["envs"] = envs;
  j["mounts"] = mounts;
  j["devices"] = devices;
  j["annotations"] = annotations;
  j["cdiDevices"] = v.cdi_devices;
  return j;
}

bool YamlPlainKey(const std::string& k) {
  if (k.empty()) return false;
  for (unsigned char c : k) {
    if (!(std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '/')) return false;
  }
  // Keys YAML would read as something other than a string.
  static const char* kReserved[] = {"null", "true", "false", "yes", "no",
                                    "on",   "off",  "y",     "n",   "~"};
  for (const char* r : kReserved) {
    if (strcasecmp(k.c_str(), r) == 0) return false;
  }
  return !std::isdigit(static_cast<unsigned char>(k[0])) && k[0] != '-' && k[0] != '.';
}

std::string YamlScalar(const nlohmann::ordered_json& j) {
  // JSON string escapes are valid in YAML double-quoted scalars; YAML also
  // forbids raw DEL, C1 controls and U+FFFE/U+FFFF, and folds U+2028/2029
  // as line breaks, so those are escaped as well.
  const std::string json = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::string out;
  out.reserve(json.size());
  const auto* p = reinterpret_cast<const unsigned char*>(json.data());
  const size_t n = json.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    uint32_t r = c;
    size_t len = 1;
    if (c >= 0xC0 && c < 0xE0 && i + 1 < n) {
      r = ((c & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu);
      len = 2;
    } else if (c >= 0xE0 && c < 0xF0 && i + 2 < n) {
      r = ((c & 0x0Fu) << 12) | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3Fu);
      len = 3;
    } else if (c >= 0xF0) {
      len = 4;
      r = 0x10000;
    }
    if (r == 0x7F || (r >= 0x80 && r <= 0x9F) || r == 0x2028 || r == 0x2029 || r == 0xFFFE ||
        r == 0xFFFF) {
      out += fmt::format("\\u{:04x}", r);
    } else {
      out.append(json, i, len);
    }
    i += len;
  }
  return out;
}

std::string YamlKey(const std::string& k) {
  return YamlPlainKey(k) ? k : YamlScalar(nlohmann::ordered_json(k));
}

void EmitYaml(const nlohmann::ordered_json& j, int indent, std::string* out);

bool IsEmptyContainer(const nlohmann::ordered_json& j) {
  return (j.is_object() || j.is_array()) && j.empty();
}

void EmitYaml(const nlohmann::ordered_json& j, int indent, std::string* out) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const nlohmann::ordered_json& v = it.value();
      *out += pad + YamlKey(it.key()) + ":";
      if ((v.is_object() || v.is_array()) && !v.empty()) {
        *out += "\n";
        EmitYaml(v, v.is_array() ? indent : indent + 2, out);
      } else {
        *out += " " +
                (IsEmptyContainer(v) ? std::string(v.is_object() ? "{}" : "[]") : YamlScalar(v)) +
                "\n";
      }
    }
  } else if (j.is_array()) {
    for (const nlohmann::ordered_json& v : j) {
      if (v.is_object() && !v.empty()) {
        // First key on the dash line, the rest indented under it.
        std::string nested;
        EmitYaml(v, indent + 2, &nested);
        nested.replace(0, static_cast<size_t>(indent) + 2, pad + "- ");
        *out += nested;
      } else if (v.is_array() && !v.empty()) {
        *out += pad + "-\n";
        EmitYaml(v, indent + 2, out);
      } else {
        *out += pad + "- " +
                (IsEmptyContainer(v) ? std::string(v.is_object() ? "{}" : "[]") : YamlScalar(v)) +
                "\n";
      }
    }
  } else {
    *out += pad + YamlScalar(j) + "\n";
  }
}

}  // namespace

std::string InspectTable(const std::string& file, const checkpoint::VerifyResult& r) {
  const checkpoint::Checkpoint& cp = r.checkpoint;
  const CheckpointData data = checkpoint::DataAsV2(cp);
  std::string out;
  out += fmt::format("file:      {}\n", file);
  out += fmt::format("format:    {}\n",
                     cp.format == FormatVersion::kV1
                         ? "v1 (kubelet <= 1.19; flat DeviceIDs; read by 1.20-1.30 only)"
                         : "v2 (kubelet 1.20+; DeviceIDs per NUMA node)");
  out += fmt::format("checksum:  {}\n", ChecksumLine(r));
  if (cp.boot_id) out += fmt::format("boot ID:   {}\n", Printable(*cp.boot_id));

  // Pods in order of first appearance, then their containers.
  std::vector<std::string> pods;
  std::map<std::string, std::vector<std::string>> containers;
  std::map<std::pair<std::string, std::string>, std::vector<const PodDevicesEntry*>> entries;
  if (data.pod_device_entries) {
    for (const PodDevicesEntry& e : *data.pod_device_entries) {
      if (!containers.count(e.pod_uid)) pods.push_back(e.pod_uid);
      auto& cs = containers[e.pod_uid];
      if (std::find(cs.begin(), cs.end(), e.container_name) == cs.end())
        cs.push_back(e.container_name);
      entries[{e.pod_uid, e.container_name}].push_back(&e);
    }
  }
  if (!data.pod_device_entries) {
    out += "entries:   null (no pod holds devices)\n";
  } else {
    out += fmt::format("entries:   {} ({} pod{})\n", data.pod_device_entries->size(), pods.size(),
                       pods.size() == 1 ? "" : "s");
  }
  for (const std::string& pod : pods) {
    out += fmt::format("\npod {}\n", Printable(pod));
    for (const std::string& c : containers[pod]) {
      out += fmt::format("  container {}\n", Printable(c));
      for (const PodDevicesEntry* e : entries[{pod, c}]) {
        out += fmt::format("    {}: {}\n", Printable(e->resource_name), DevicesText(*e, cp.format));
        AppendAllocResp(&out, e->alloc_resp, "      ");
      }
    }
  }
  out += "\nregistered devices:";
  if (!data.registered_devices) {
    out += " null\n";
  } else if (data.registered_devices->empty()) {
    out += " none\n";
  } else {
    out += "\n";
    for (const auto& [res, ids] : *data.registered_devices) {
      out += fmt::format("  {} ({}): {}\n", Printable(res), ids ? ids->size() : 0, ListText(ids));
    }
  }
  const std::vector<std::string> warnings = checkpoint::Warnings(data);
  if (!warnings.empty()) {
    out += "\nwarnings:\n";
    for (const auto& w : warnings) out += "  " + w + "\n";
  }
  return out;
}

nlohmann::ordered_json InspectJson(const std::string& file, const checkpoint::VerifyResult& r) {
  const checkpoint::Checkpoint& cp = r.checkpoint;
  const CheckpointData data = checkpoint::DataAsV2(cp);
  nlohmann::ordered_json j;
  j["file"] = file;
  j["format"] = FormatName(cp.format);
  j["checksum"] = {{"stored", r.stored}, {"computed", r.computed}, {"valid", r.valid}};
  j["bootID"] = cp.boot_id ? nlohmann::ordered_json(*cp.boot_id) : nlohmann::ordered_json(nullptr);
  nlohmann::ordered_json entries = nullptr;
  if (data.pod_device_entries) {
    entries = nlohmann::ordered_json::array();
    for (const PodDevicesEntry& e : *data.pod_device_entries) {
      nlohmann::ordered_json je = {{"podUID", e.pod_uid},
                                   {"containerName", e.container_name},
                                   {"resourceName", e.resource_name}};
      if (!e.device_ids) {
        je["deviceIDs"] = nullptr;
      } else if (cp.format == FormatVersion::kV1) {
        je["deviceIDs"] = e.device_ids->empty() ? nlohmann::ordered_json(nullptr)
                                                : ListJson(e.device_ids->begin()->second);
      } else {
        nlohmann::ordered_json per_numa = nlohmann::ordered_json::object();
        for (const auto& [node, ids] : *e.device_ids)
          per_numa[std::to_string(node)] = ListJson(ids);
        je["deviceIDs"] = per_numa;
      }
      je["allocResp"] = AllocRespJson(e.alloc_resp);
      entries.push_back(std::move(je));
    }
  }
  j["podDeviceEntries"] = entries;
  nlohmann::ordered_json reg = nullptr;
  if (data.registered_devices) {
    reg = nlohmann::ordered_json::object();
    for (const auto& [res, ids] : *data.registered_devices) reg[res] = ListJson(ids);
  }
  j["registeredDevices"] = reg;
  j["warnings"] = checkpoint::Warnings(data);
  return j;
}

std::string ToYaml(const nlohmann::ordered_json& j) {
  std::string out;
  EmitYaml(j, 0, &out);
  return out;
}

}  // namespace devmgr::cli
