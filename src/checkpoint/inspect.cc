#include "checkpoint/inspect.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "common/go_format.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "fmt/format.h"

namespace devmgr::checkpoint {
namespace {

using EntryKey = std::tuple<std::string, std::string, std::string, int>;

std::string DevicesText(const DevicesPerNUMA& d) {
  if (!d) return "null";
  std::string out = "[";
  bool first = true;
  for (const auto& [node, ids] : *d) {
    if (!first) out += ' ';
    first = false;
    out += fmt::format("{}:", node);
    if (!ids) {
      out += "null";
      continue;
    }
    for (size_t i = 0; i < ids->size(); ++i) {
      if (i != 0) out += ',';
      out += Printable((*ids)[i]);
    }
  }
  return out + "]";
}

std::string EntryName(const PodDevicesEntry& e) {
  return fmt::format("pod={} container={} resource={}", Printable(e.pod_uid),
                     Printable(e.container_name), Printable(e.resource_name));
}

// Entries keyed by (pod, container, resource, n-th occurrence of that key).
std::vector<std::pair<EntryKey, const PodDevicesEntry*>> Keyed(const CheckpointData& d) {
  std::vector<std::pair<EntryKey, const PodDevicesEntry*>> out;
  if (!d.pod_device_entries) return out;
  std::map<std::tuple<std::string, std::string, std::string>, int> seen;
  for (const PodDevicesEntry& e : *d.pod_device_entries) {
    const int n = seen[{e.pod_uid, e.container_name, e.resource_name}]++;
    out.push_back({EntryKey{e.pod_uid, e.container_name, e.resource_name, n}, &e});
  }
  return out;
}

// Device id -> the NUMA nodes it is listed under.
std::map<std::string, std::set<int64_t>> DeviceNodes(const DevicesPerNUMA& d) {
  std::map<std::string, std::set<int64_t>> out;
  if (!d) return out;
  for (const auto& [node, ids] : *d) {
    if (!ids) continue;
    for (const std::string& id : *ids) out[id].insert(node);
  }
  return out;
}

std::string NodesText(const std::set<int64_t>& nodes) {
  std::string out;
  for (int64_t n : nodes) {
    if (!out.empty()) out += ',';
    out += std::to_string(n);
  }
  return out;
}

std::string BytesText(const std::optional<std::string>& b) {
  return b ? fmt::format("{} bytes", b->size()) : "null";
}

void DiffEntry(const PodDevicesEntry& a, const PodDevicesEntry& b, std::vector<std::string>* out) {
  const std::string name = EntryName(a);
  if (a.device_ids.has_value() != b.device_ids.has_value()) {
    out->push_back(fmt::format("~ entry {}: DeviceIDs {} -> {}", name, DevicesText(a.device_ids),
                               DevicesText(b.device_ids)));
  } else {
    const auto na = DeviceNodes(a.device_ids);
    const auto nb = DeviceNodes(b.device_ids);
    for (const auto& [id, nodes] : na) {
      auto it = nb.find(id);
      if (it == nb.end()) {
        out->push_back(fmt::format("~ entry {}: device {} removed (NUMA {})", name, Printable(id),
                                   NodesText(nodes)));
      } else if (it->second != nodes) {
        out->push_back(fmt::format("~ entry {}: device {} moved NUMA {} -> {}", name, Printable(id),
                                   NodesText(nodes), NodesText(it->second)));
      }
    }
    for (const auto& [id, nodes] : nb) {
      if (!na.count(id)) {
        out->push_back(fmt::format("~ entry {}: device {} added (NUMA {})", name, Printable(id),
                                   NodesText(nodes)));
      }
    }
  }
  if (a.alloc_resp != b.alloc_resp) {
    out->push_back(fmt::format("~ entry {}: AllocResp changed ({} -> {})", name,
                               BytesText(a.alloc_resp), BytesText(b.alloc_resp)));
  }
}

std::string ListText(const DeviceList& l) {
  if (!l) return "null";
  std::string out = "[";
  for (size_t i = 0; i < l->size(); ++i) {
    if (i != 0) out += ' ';
    out += Printable((*l)[i]);
  }
  return out + "]";
}

}  // namespace

std::string Printable(const std::string& s) {
  bool plain = !s.empty() && IsValidUtf8(s);
  for (unsigned char c : s) {
    if (c <= 0x20 || c == 0x7F || c == '"') plain = false;
  }
  return plain ? s : GoQuote(s);
}

AllocRespView DecodeAllocResp(const std::string& bytes) {
  AllocRespView v;
  v.size = bytes.size();
  v1beta1::ContainerAllocateResponse r;
  if (!r.ParseFromString(bytes)) {
    v.ok = false;
    return v;
  }
  for (const auto& [k, val] : r.envs()) v.envs.emplace_back(k, val);
  std::sort(v.envs.begin(), v.envs.end());
  for (const auto& m : r.mounts())
    v.mounts.push_back({m.container_path(), m.host_path(), m.read_only()});
  for (const auto& d : r.devices())
    v.devices.push_back({d.container_path(), d.host_path(), d.permissions()});
  for (const auto& [k, val] : r.annotations()) v.annotations.emplace_back(k, val);
  std::sort(v.annotations.begin(), v.annotations.end());
  for (const auto& c : r.cdi_devices()) v.cdi_devices.push_back(c.name());
  return v;
}

CheckpointData DataAsV2(const Checkpoint& cp) {
  if (cp.format == FormatVersion::kV2) return cp.data;
  CheckpointData d = ConvertV1ToV2(cp).data;
  // Keep the V1 list's nil-ness for display.
  if (!d.pod_device_entries && cp.data_v1.pod_device_entries) d.pod_device_entries.emplace();
  return d;
}

std::vector<std::string> Warnings(const CheckpointData& data) {
  std::vector<std::string> out;
  if (!data.pod_device_entries) return out;
  // (resource, id) -> first (pod, container) holding it.
  std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>> holder;
  std::set<std::tuple<std::string, std::string, std::string>> reported;
  for (const PodDevicesEntry& e : *data.pod_device_entries) {
    std::set<std::string> ids;
    for (const auto& [id, nodes] : DeviceNodes(e.device_ids)) ids.insert(id);
    for (const std::string& id : ids) {
      auto [it, inserted] = holder.try_emplace({e.resource_name, id}, e.pod_uid, e.container_name);
      if (!inserted && it->second.first != e.pod_uid &&
          reported.insert({e.resource_name, id, e.pod_uid}).second) {
        out.push_back(fmt::format(
            "double allocation: device {}/{} is held by pod {} container {} and pod {} container "
            "{}",
            Printable(e.resource_name), Printable(id), Printable(it->second.first),
            Printable(it->second.second), Printable(e.pod_uid), Printable(e.container_name)));
      }
      bool registered = false;
      if (data.registered_devices) {
        auto r = data.registered_devices->find(e.resource_name);
        if (r != data.registered_devices->end() && r->second) {
          registered = std::find(r->second->begin(), r->second->end(), id) != r->second->end();
        }
      }
      if (!registered) {
        out.push_back(
            fmt::format("device {}/{} allocated to pod {} container {} is not in RegisteredDevices",
                        Printable(e.resource_name), Printable(id), Printable(e.pod_uid),
                        Printable(e.container_name)));
      }
    }
  }
  return out;
}

namespace {
template <class Entries>
std::vector<size_t> DropFrom(Entries* entries, const std::vector<std::string>& pod_uids) {
  std::vector<size_t> counts(pod_uids.size(), 0);
  if (!entries->has_value()) return counts;
  auto& list = **entries;
  size_t removed = 0;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](const auto& e) {
                              for (size_t i = 0; i < pod_uids.size(); ++i) {
                                if (e.pod_uid == pod_uids[i]) {
                                  ++counts[i];
                                  ++removed;
                                  return true;
                                }
                              }
                              return false;
                            }),
             list.end());
  if (removed > 0 && list.empty()) entries->reset();
  return counts;
}
}  // namespace

std::vector<size_t> DropPods(Checkpoint* cp, const std::vector<std::string>& pod_uids) {
  return cp->format == FormatVersion::kV2 ? DropFrom(&cp->data.pod_device_entries, pod_uids)
                                          : DropFrom(&cp->data_v1.pod_device_entries, pod_uids);
}

void Rechecksum(Checkpoint* cp) { cp->checksum = ComputedChecksum(*cp); }

Checkpoint ConvertV2ToV1(const Checkpoint& v2) {
  Checkpoint out;
  out.format = FormatVersion::kV1;
  if (v2.data.pod_device_entries) {
    out.data_v1.pod_device_entries.emplace();
    for (const PodDevicesEntry& e : *v2.data.pod_device_entries) {
      PodDevicesEntryV1 v1{e.pod_uid, e.container_name, e.resource_name, std::nullopt,
                           e.alloc_resp};
      if (e.device_ids) {
        v1.device_ids.emplace();
        for (const auto& [node, ids] : *e.device_ids) {
          if (ids) v1.device_ids->insert(v1.device_ids->end(), ids->begin(), ids->end());
        }
      }
      out.data_v1.pod_device_entries->push_back(std::move(v1));
    }
  }
  out.data_v1.registered_devices = v2.data.registered_devices;
  Rechecksum(&out);
  return out;
}

std::vector<std::string> Diff(const Checkpoint& a, const Checkpoint& b) {
  std::vector<std::string> out;
  auto fmt_name = [](FormatVersion f) { return f == FormatVersion::kV1 ? "v1" : "v2"; };
  if (a.format != b.format)
    out.push_back(fmt::format("~ format: {} -> {}", fmt_name(a.format), fmt_name(b.format)));
  if (a.boot_id != b.boot_id) {
    out.push_back(fmt::format("~ BootID: {} -> {}", a.boot_id ? Printable(*a.boot_id) : "(none)",
                              b.boot_id ? Printable(*b.boot_id) : "(none)"));
  }
  const CheckpointData da = DataAsV2(a);
  const CheckpointData db = DataAsV2(b);
  if (da.pod_device_entries.has_value() != db.pod_device_entries.has_value()) {
    out.push_back(fmt::format("~ PodDeviceEntries: {} -> {}", da.pod_device_entries ? "[]" : "null",
                              db.pod_device_entries ? "[]" : "null"));
  }
  const auto ka = Keyed(da);
  const auto kb = Keyed(db);
  std::map<EntryKey, const PodDevicesEntry*> ma(ka.begin(), ka.end());
  std::map<EntryKey, const PodDevicesEntry*> mb(kb.begin(), kb.end());
  for (const auto& [key, e] : ka) {
    auto it = mb.find(key);
    if (it == mb.end()) {
      out.push_back(
          fmt::format("- entry {} devices={}", EntryName(*e), DevicesText(e->device_ids)));
    } else {
      DiffEntry(*e, *it->second, &out);
    }
  }
  for (const auto& [key, e] : kb) {
    if (!ma.count(key)) {
      out.push_back(
          fmt::format("+ entry {} devices={}", EntryName(*e), DevicesText(e->device_ids)));
    }
  }
  std::vector<EntryKey> order_a, order_b;
  for (const auto& [key, e] : ka)
    if (mb.count(key)) order_a.push_back(key);
  for (const auto& [key, e] : kb)
    if (ma.count(key)) order_b.push_back(key);
  if (order_a != order_b) out.push_back("~ entries reordered (the checksum covers the order)");

  const RegisteredDevices& ra = da.registered_devices;
  const RegisteredDevices& rb = db.registered_devices;
  if (ra.has_value() != rb.has_value()) {
    out.push_back(
        fmt::format("~ RegisteredDevices: {} -> {}", ra ? "{}" : "null", rb ? "{}" : "null"));
  }
  static const std::map<std::string, DeviceList> kEmpty;
  const auto& mra = ra ? *ra : kEmpty;
  const auto& mrb = rb ? *rb : kEmpty;
  for (const auto& [res, ids] : mra) {
    auto it = mrb.find(res);
    if (it == mrb.end()) {
      out.push_back(fmt::format("- registered {}", Printable(res)));
      continue;
    }
    const std::set<std::string> sa =
        ids ? std::set<std::string>(ids->begin(), ids->end()) : std::set<std::string>{};
    const std::set<std::string> sb =
        it->second ? std::set<std::string>(it->second->begin(), it->second->end())
                   : std::set<std::string>{};
    std::string change;
    for (const auto& id : sb) {
      if (!sa.count(id)) change += " +" + Printable(id);
    }
    for (const auto& id : sa) {
      if (!sb.count(id)) change += " -" + Printable(id);
    }
    if (ids.has_value() != it->second.has_value()) {
      change += fmt::format(" ({} -> {})", ids ? "[]" : "null", it->second ? "[]" : "null");
    }
    if (!change.empty()) out.push_back(fmt::format("~ registered {}:{}", Printable(res), change));
  }
  for (const auto& [res, ids] : mrb) {
    if (!mra.count(res))
      out.push_back(fmt::format("+ registered {}: {}", Printable(res), ListText(ids)));
  }
  return out;
}

}  // namespace devmgr::checkpoint
