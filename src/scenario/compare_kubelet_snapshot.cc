#include "scenario/compare_kubelet_snapshot.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

#include "checkpoint/checkpoint.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "fmt/format.h"

namespace devmgr::scenario::compare {
namespace {

Json SortedObjects(Json list) {
  std::sort(list.begin(), list.end(),
            [](const Json& a, const Json& b) { return a.dump() < b.dump(); });
  return list;
}

Json AllocRespJson(const std::string& bytes) {
  v1beta1::ContainerAllocateResponse r;
  if (!r.ParseFromString(bytes)) return Json{{"unparsable", true}};
  Json envs = Json::object(), annotations = Json::object(), mounts = Json::array(),
       devices = Json::array(), cdi = Json::array();
  for (const auto& [k, v] : r.envs()) envs[k] = v;
  for (const auto& [k, v] : r.annotations()) annotations[k] = v;
  for (const auto& m : r.mounts()) {
    mounts.push_back({{"container_path", m.container_path()},
                      {"host_path", m.host_path()},
                      {"read_only", m.read_only()}});
  }
  for (const auto& d : r.devices()) {
    devices.push_back({{"container_path", d.container_path()},
                       {"host_path", d.host_path()},
                       {"permissions", d.permissions()}});
  }
  for (const auto& c : r.cdi_devices()) cdi.push_back(c.name());
  return Json{{"envs", envs},
              {"mounts", SortedObjects(mounts)},
              {"devices", SortedObjects(devices)},
              {"annotations", annotations},
              {"cdi_devices", cdi}};
}

bool IdChar(char c) {
  return isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == ':';
}

std::string Quote(const std::string& key) { return "['" + key + "']"; }

std::string Short(const Json& j) {
  if (j.is_null()) return "(none)";
  std::string s = j.dump();
  if (s.size() > 400) s = s.substr(0, 400) + "...";
  return s;
}

void DiffInto(const Json& k, const Json& d, const std::string& path, const Location& loc,
              std::vector<Failure>* out) {
  if (k.is_object() && d.is_object()) {
    std::set<std::string> keys;
    for (auto it = k.begin(); it != k.end(); ++it) keys.insert(it.key());
    for (auto it = d.begin(); it != d.end(); ++it) keys.insert(it.key());
    for (const std::string& key : keys) {
      const std::string p = path + (path.empty() ? key : Quote(key));
      const bool ink = k.contains(key), ind = d.contains(key);
      DiffInto(ink ? k.at(key) : Json(), ind ? d.at(key) : Json(), p, loc, out);
    }
    return;
  }
  if (k.is_array() && d.is_array() && k.size() == d.size()) {
    bool objects = false;
    for (const Json& e : k) objects |= e.is_object();
    if (objects) {
      for (size_t i = 0; i < k.size(); ++i) {
        DiffInto(k[i], d[i], fmt::format("{}[{}]", path, i), loc, out);
      }
      return;
    }
  }
  if (k != d) out->push_back(Failure{loc, path, Short(k), Short(d)});
}

}  // namespace

Json OptionsJson(const manager::RunContainerOptions& o) {
  Json envs = Json::object(), annotations = Json::object(), mounts = Json::array(),
       devices = Json::array(), cdi = Json::array();
  for (const auto& e : o.envs) envs[e.name] = e.value;
  for (const auto& a : o.annotations) annotations[a.name] = a.value;
  for (const auto& m : o.mounts) {
    mounts.push_back({{"container_path", m.container_path},
                      {"host_path", m.host_path},
                      {"read_only", m.read_only}});
  }
  for (const auto& d : o.devices) {
    devices.push_back({{"container_path", d.path_in_container},
                       {"host_path", d.path_on_host},
                       {"permissions", d.permissions}});
  }
  for (const auto& c : o.cdi_devices) cdi.push_back(c);
  return Json{{"envs", envs},
              {"mounts", SortedObjects(mounts)},
              {"devices", SortedObjects(devices)},
              {"annotations", annotations},
              {"cdi_devices", cdi}};
}

Json OracleOptionsJson(const Json& go) {
  Json envs = Json::object(), annotations = Json::object(), mounts = Json::array(),
       devices = Json::array(), cdi = Json::array();
  auto list = [&](const char* key) {
    return go.contains(key) && go.at(key).is_array() ? go.at(key) : Json::array();
  };
  for (const Json& e : list("Envs")) envs[e.value("Name", "")] = e.value("Value", "");
  for (const Json& a : list("Annotations")) annotations[a.value("Name", "")] = a.value("Value", "");
  for (const Json& m : list("Mounts")) {
    mounts.push_back({{"container_path", m.value("ContainerPath", "")},
                      {"host_path", m.value("HostPath", "")},
                      {"read_only", m.value("ReadOnly", false)}});
  }
  for (const Json& d : list("Devices")) {
    devices.push_back({{"container_path", d.value("PathInContainer", "")},
                       {"host_path", d.value("PathOnHost", "")},
                       {"permissions", d.value("Permissions", "")}});
  }
  for (const Json& c : list("CDIDevices")) cdi.push_back(c.value("Name", ""));
  return Json{{"envs", envs},
              {"mounts", SortedObjects(mounts)},
              {"devices", SortedObjects(devices)},
              {"annotations", annotations},
              {"cdi_devices", cdi}};
}

Json CheckpointJson(const std::string& bytes, bool exists) {
  if (!exists) return Json();
  absl::StatusOr<checkpoint::Checkpoint> cp = checkpoint::DecodeAny(bytes);
  if (!cp.ok()) return Json{{"unreadable", true}};
  if (cp->format != checkpoint::FormatVersion::kV2) return Json{{"format", "v1"}};
  Json entries = Json::array();
  for (const auto& e :
       cp->data.pod_device_entries.value_or(std::vector<checkpoint::PodDevicesEntry>{})) {
    Json devs = Json::object();
    if (e.device_ids) {
      for (const auto& [numa, ids] : *e.device_ids) {
        Json l = Json::array();
        for (const std::string& id : ids.value_or(std::vector<std::string>{})) l.push_back(id);
        devs[std::to_string(numa)] = l;
      }
    }
    entries.push_back({{"pod", e.pod_uid},
                       {"container", e.container_name},
                       {"resource", e.resource_name},
                       {"devices", devs},
                       {"alloc_resp", e.alloc_resp ? AllocRespJson(*e.alloc_resp) : Json()}});
  }
  std::sort(entries.begin(), entries.end(), [](const Json& a, const Json& b) {
    return std::tie(a["pod"], a["container"], a["resource"]) <
           std::tie(b["pod"], b["container"], b["resource"]);
  });
  Json registered = Json::object();
  if (cp->data.registered_devices) {
    for (const auto& [res, ids] : *cp->data.registered_devices) {
      Json l = Json::array();
      for (const std::string& id : ids.value_or(std::vector<std::string>{})) l.push_back(id);
      registered[res] = l;
    }
  }
  return Json{{"entries", entries}, {"registered", registered}};
}

Json CallsJson(const std::vector<nlohmann::json>& records) {
  Json out = {{"received", Json::array()}, {"sent", Json::array()}};
  for (const nlohmann::json& r : records) {
    Json c = {{"kind", r.value("kind", "")},
              {"method", r.value("method", "")},
              {"args", r.contains("args") ? r.at("args") : Json::object()}};
    if (r.contains("error")) c["error"] = r.at("error");
    if (r.contains("code")) c["code"] = r.at("code");
    out[c["kind"] == "sent" ? "sent" : "received"].push_back(std::move(c));
  }
  return out;
}

void DeviceMap::Extend(const std::string& resource, const std::map<std::string, std::string>& o,
                       const std::map<std::string, std::string>& d) {
  auto& o2d = o2d_[resource];
  auto& d2o = d2o_[resource];
  std::map<std::string, std::vector<std::string>> og, dg;  // signature -> unpaired ids
  for (const auto& [id, sig] : o) {
    if (!o2d.count(id)) og[sig].push_back(id);
  }
  for (const auto& [id, sig] : d) {
    if (!d2o.count(id)) dg[sig].push_back(id);
  }
  bool changed = false;
  for (auto& [sig, ids] : og) {
    auto it = dg.find(sig);
    if (it == dg.end() || it->second.size() != ids.size()) continue;
    std::vector<std::string> rest_o, rest_d = it->second;
    for (const std::string& id : ids) {
      auto same = std::find(rest_d.begin(), rest_d.end(), id);
      if (same != rest_d.end() && !d2o.count(id)) {
        o2d[id] = id;
        d2o[id] = id;
        rest_d.erase(same);
      } else {
        rest_o.push_back(id);
      }
    }
    for (size_t i = 0; i < rest_o.size() && i < rest_d.size(); ++i) {
      o2d[rest_o[i]] = rest_d[i];
      d2o[rest_d[i]] = rest_o[i];
    }
    changed = true;
  }
  if (changed) Rebuild();
}

void DeviceMap::Rebuild() {
  std::map<std::string, std::string> all;
  std::set<std::string> conflicting;
  for (const auto& [res, m] : o2d_) {
    for (const auto& [a, b] : m) {
      auto [it, inserted] = all.emplace(a, b);
      if (!inserted && it->second != b) conflicting.insert(a);
    }
  }
  renames_.clear();
  for (const auto& [a, b] : all) {
    if (a != b && !conflicting.count(a)) renames_.emplace_back(a, b);
  }
  std::sort(renames_.begin(), renames_.end(), [](const auto& x, const auto& y) {
    return x.first.size() != y.first.size() ? x.first.size() > y.first.size() : x < y;
  });
}

std::string DeviceMap::Rename(const std::string& s) const {
  if (renames_.empty()) return s;
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    bool done = false;
    if (i == 0 || !IdChar(s[i - 1])) {
      for (const auto& [from, to] : renames_) {
        if (s.compare(i, from.size(), from) != 0) continue;
        const size_t end = i + from.size();
        if (end < s.size() && IdChar(s[end])) continue;
        out += to;
        i = end;
        done = true;
        break;
      }
    }
    if (!done) out += s[i++];
  }
  return out;
}

void SortIdLists(Json* j, const std::set<std::string>& ids) {
  if (j->is_object() || j->is_array()) {
    for (auto it = j->begin(); it != j->end(); ++it) SortIdLists(&it.value(), ids);
    return;
  }
  if (!j->is_string()) return;
  const std::string s = j->get<std::string>();
  for (const char sep : {',', ' '}) {
    if (s.find(sep) == std::string::npos) continue;
    std::vector<std::string> items;
    size_t start = 0;
    for (;;) {
      const size_t end = s.find(sep, start);
      items.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
    bool all = items.size() >= 2;
    for (const std::string& i : items) all &= ids.count(i) > 0;
    if (!all) continue;
    std::sort(items.begin(), items.end());
    std::string out;
    for (const std::string& i : items) out += (out.empty() ? "" : std::string(1, sep)) + i;
    *j = out;
    return;
  }
}

std::set<std::string> DeviceIds(const Json& snapshot) {
  std::set<std::string> out;
  if (!snapshot.is_object() || !snapshot.contains("devices")) return out;
  const Json& devs = snapshot.at("devices");
  for (auto r = devs.begin(); r != devs.end(); ++r) {
    for (auto d = r.value().begin(); d != r.value().end(); ++d) out.insert(d.key());
  }
  return out;
}

void ReplaceInStrings(Json* j, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  if (j->is_object() || j->is_array()) {
    for (auto it = j->begin(); it != j->end(); ++it) ReplaceInStrings(&it.value(), from, to);
    return;
  }
  if (!j->is_string()) return;
  std::string s = j->get<std::string>();
  bool changed = false;
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
    changed = true;
  }
  if (changed) *j = s;
}

void SortStringArrays(Json* j) {
  if (j->is_object()) {
    for (auto it = j->begin(); it != j->end(); ++it) SortStringArrays(&it.value());
  } else if (j->is_array()) {
    bool strings = !j->empty();
    for (Json& e : *j) {
      SortStringArrays(&e);
      strings &= e.is_string();
    }
    if (strings) std::sort(j->begin(), j->end());
  }
}

void DeviceMap::RenameJson(Json* j) const {
  if (j->is_string()) {
    *j = Rename(j->get<std::string>());
  } else if (j->is_object()) {
    Json renamed = Json::object();
    for (auto it = j->begin(); it != j->end(); ++it) {
      Json v = it.value();
      RenameJson(&v);
      renamed[Rename(it.key())] = std::move(v);
    }
    *j = std::move(renamed);
  } else if (j->is_array()) {
    for (Json& e : *j) RenameJson(&e);
  }
  SortStringArrays(j);
}

namespace {

// resource -> device -> "pod/container,..." (+ "|numa" unless numa_blind).
std::map<std::string, std::map<std::string, std::string>> Signatures(const Json& snap,
                                                                     bool numa_blind) {
  std::map<std::string, std::map<std::string, std::set<std::string>>> holders;
  const Json& alloc = snap.contains("allocations") ? snap.at("allocations") : Json::object();
  for (auto p = alloc.begin(); p != alloc.end(); ++p) {
    for (auto c = p.value().begin(); c != p.value().end(); ++c) {
      for (auto r = c.value().begin(); r != c.value().end(); ++r) {
        for (const Json& id : r.value()) {
          holders[r.key()][id.get<std::string>()].insert(p.key() + "/" + c.key());
        }
      }
    }
  }
  const Json& devs = snap.contains("devices") ? snap.at("devices") : Json::object();
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const auto& [res, ids] : holders) {
    for (const auto& [id, hs] : ids) {
      std::string sig;
      for (const std::string& h : hs) sig += h + ",";
      if (!numa_blind && devs.contains(res) && devs.at(res).contains(id)) {
        sig += "|" + devs.at(res).at(id).value("numa", Json::array()).dump();
      }
      out[res][id] = sig;
    }
  }
  return out;
}

}  // namespace

void ExtendFromAllocations(const Json& oracle, const Json& devmgr, bool numa_blind,
                           DeviceMap* map) {
  if (!oracle.is_object() || !devmgr.is_object()) return;
  auto os = Signatures(oracle, numa_blind);
  auto ds = Signatures(devmgr, numa_blind);
  for (const auto& [res, sigs] : os) {
    auto it = ds.find(res);
    if (it != ds.end()) map->Extend(res, sigs, it->second);
  }
}

void FlattenCheckpointNuma(Json* snapshot) {
  if (!snapshot->contains("checkpoint")) return;
  Json& cp = (*snapshot)["checkpoint"];
  if (!cp.is_object() || !cp.contains("entries")) return;
  for (Json& e : cp["entries"]) {
    Json all = Json::array();
    for (auto it = e["devices"].begin(); it != e["devices"].end(); ++it) {
      for (const Json& id : it.value()) all.push_back(id);
    }
    std::sort(all.begin(), all.end());
    e["devices"] = Json{{"any", all}};
  }
}

std::vector<Failure> Diff(const Json& kubelet, const Json& devmgr, const Location& loc) {
  std::vector<Failure> out;
  DiffInto(kubelet, devmgr, "", loc, &out);
  return out;
}

}  // namespace devmgr::scenario::compare
