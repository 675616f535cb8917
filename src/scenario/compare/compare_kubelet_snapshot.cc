#include "scenario/compare/compare_kubelet_snapshot.h"

#include <algorithm>
#include <cctype>
#include <functional>
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
  std::map<std::string, std::string>& o2d = o2d_[resource];
  std::map<std::string, std::string> next;  // the new pairing of `resource`
  std::set<std::string> taken;              // devmgr IDs in `next`
  // Earlier pairs whose devices still look alike.
  for (const auto& [oid, did] : o2d) {
    auto os = o.find(oid);
    auto ds = d.find(did);
    if (os == o.end() || ds == d.end() || os->second != ds->second) continue;
    next[oid] = did;
    taken.insert(did);
  }
  std::map<std::string, std::vector<std::string>> og, dg;  // signature -> unpaired ids
  for (const auto& [id, sig] : o) {
    if (!next.count(id)) og[sig].push_back(id);
  }
  for (const auto& [id, sig] : d) {
    if (!taken.count(id)) dg[sig].push_back(id);
  }
  for (auto& [sig, ids] : og) {
    auto it = dg.find(sig);
    if (it == dg.end() || it->second.size() != ids.size()) continue;
    std::vector<std::string> rest_o, rest_d = it->second;
    for (const std::string& id : ids) {
      auto same = std::find(rest_d.begin(), rest_d.end(), id);
      if (same != rest_d.end()) {
        next[id] = id;
        rest_d.erase(same);
      } else {
        rest_o.push_back(id);
      }
    }
    for (size_t i = 0; i < rest_o.size() && i < rest_d.size(); ++i) next[rest_o[i]] = rest_d[i];
  }
  // Devices neither side lists any more keep their pairs (strings of
  // earlier steps may still name them).
  for (const auto& [oid, did] : o2d) {
    if (!o.count(oid) && !d.count(did) && !next.count(oid)) next[oid] = did;
  }
  if (next != o2d) {
    o2d = std::move(next);
    Rebuild();
  }
}

std::string DeviceMap::Partner(const std::string& resource, const std::string& id) const {
  auto r = o2d_.find(resource);
  if (r == o2d_.end()) return "";
  auto it = r->second.find(id);
  return it == r->second.end() ? "" : it->second;
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

// resource -> device -> the containers ("pod/name") holding it.
using Holders = std::map<std::string, std::map<std::string, std::set<std::string>>>;

Holders HoldersOf(const Json* snap) {
  Holders out;
  if (snap == nullptr || !snap->is_object() || !snap->contains("allocations")) return out;
  const Json& alloc = snap->at("allocations");
  for (auto p = alloc.begin(); p != alloc.end(); ++p) {
    for (auto c = p.value().begin(); c != p.value().end(); ++c) {
      for (auto r = c.value().begin(); r != c.value().end(); ++r) {
        for (const Json& id : r.value()) {
          out[r.key()][id.get<std::string>()].insert(p.key() + "/" + c.key());
        }
      }
    }
  }
  return out;
}

// The device's NUMA nodes as listed by `snap`'s device sets (null: not
// listed, e.g. unhealthy).
Json NumaOf(const Json* snap, const std::string& res, const std::string& id) {
  if (snap == nullptr || !snap->is_object() || !snap->contains("devices")) return Json();
  const Json& devs = snap->at("devices");
  if (!devs.contains(res) || !devs.at(res).contains(id)) return Json();
  return devs.at(res).at(id).value("numa", Json::array());
}

// The stored affinity of "pod/name" (null: none).
Json AffinityOf(const Json& snap, const std::string& holder) {
  const size_t slash = holder.find('/');
  const std::string uid = holder.substr(0, slash), name = holder.substr(slash + 1);
  if (!snap.contains("affinity") || !snap.at("affinity").contains(uid)) return Json();
  const Json& pod = snap.at("affinity").at(uid);
  return pod.contains(name) ? pod.at(name) : Json();
}

// filterByAffinity's three sets: a NUMA node inside the affinity, only
// nodes outside it, no NUMA node; with no affinity every device is alike.
std::string AffinityClass(const Json& numa, const Json& affinity) {
  if (!affinity.is_array()) return "*";
  if (!numa.is_array() || numa.empty()) return "none";
  for (const Json& n : numa) {
    if (std::find(affinity.begin(), affinity.end(), n) != affinity.end()) return "in";
  }
  return "out";
}

using NumaFn = std::function<Json(const std::string& res, const std::string& id)>;

std::string Join(const std::set<std::string>& s) {
  std::string out;
  for (const std::string& x : s) out += x + ",";
  return out;
}

// One side of a step being paired.
struct Side {
  const Json* before;
  const Json* after;
  Holders pre, post;
  // resource -> every device the two observations name
  std::map<std::string, std::set<std::string>> ids;
  NumaFn own;   // the device's own NUMA nodes
  Holders cur;  // the holdings replayed so far
  // pod -> resource -> its devices later containers take first
  std::map<std::string, std::map<std::string, std::set<std::string>>> reuse;

  Side(const Json* b, const Json& a)
      : before(b), after(&a), pre(HoldersOf(b)), post(HoldersOf(&a)) {
    for (const Holders* h : {&pre, &post}) {
      for (const auto& [res, m] : *h) {
        for (const auto& [id, hs] : m) ids[res].insert(id);
      }
    }
    for (const Json* snap : {b, &a}) {
      if (snap == nullptr || !snap->is_object() || !snap->contains("devices")) continue;
      const Json& devs = snap->at("devices");
      for (auto r = devs.begin(); r != devs.end(); ++r) {
        for (auto d = r.value().begin(); d != r.value().end(); ++d) ids[r.key()].insert(d.key());
      }
    }
    own = [this](const std::string& res, const std::string& id) {
      Json n = NumaOf(after, res, id);
      return n.is_null() ? NumaOf(before, res, id) : n;
    };
    cur = pre;
  }

  // The devices of `res` the container "uid/name" holds after the step.
  std::set<std::string> Took(const std::string& res, const std::string& holder) const {
    std::set<std::string> out;
    auto r = post.find(res);
    if (r == post.end()) return out;
    for (const auto& [id, hs] : r->second) {
      if (hs.count(holder)) out.insert(id);
    }
    return out;
  }
  bool Held(const std::string& res, const std::string& id) const {
    auto r = cur.find(res);
    if (r == cur.end()) return false;
    auto it = r->second.find(id);
    return it != r->second.end() && !it->second.empty();
  }
  // Whether "uid/name" got devices in this step.
  bool Picked(const std::string& holder) const {
    for (const auto& [res, m] : post) {
      for (const auto& [id, hs] : m) {
        if (!hs.count(holder)) continue;
        auto r = pre.find(res);
        if (r == pre.end() || !r->second.count(id) || !r->second.at(id).count(holder)) return true;
      }
    }
    return false;
  }
};

// The pods holding `id` after the step.
std::string PodsHolding(const Holders& h, const std::string& res, const std::string& id) {
  std::set<std::string> pods;
  auto r = h.find(res);
  if (r != h.end() && r->second.count(id)) {
    for (const std::string& c : r->second.at(id)) pods.insert(c.substr(0, c.find('/')));
  }
  return Join(pods);
}

}  // namespace

const DeviceMap& Pairing::For(const std::string& uid, const std::string& name) const {
  auto it = containers.find(uid + "/" + name);
  return it == containers.end() ? global : it->second;
}

void PairStep(const Json* oracle_before, const Json& oracle, const Json* devmgr_before,
              const Json& devmgr, const std::vector<PodOrder>& order, bool numa_blind, Pairing* p) {
  if (!oracle.is_object() || !devmgr.is_object()) return;
  Side o(oracle_before, oracle), d(devmgr_before, devmgr);
  DeviceMap& map = p->global;
  std::set<std::string> resources;
  for (const Side* side : {&o, &d}) {
    for (const auto& [res, ids] : side->ids) resources.insert(res);
  }
  // A device held before keeps its partner; the oracle's side names the
  // partner, devmgr's the device itself.
  auto fixed = [&map](const std::string& res, const std::string& id, bool oracle_side) {
    if (!oracle_side) return "=" + id;
    const std::string partner = map.Partner(res, id);
    return partner.empty() ? "=?" + id : "=" + partner;
  };
  // Each container that got devices, in the kubelet's order.
  for (const PodOrder& pod : order) {
    for (const auto& [name, reuses] : pod.containers) {
      const std::string holder = pod.uid + "/" + name;
      if (!o.Picked(holder) && !d.Picked(holder)) continue;
      for (const std::string& res : resources) {
        std::map<std::string, std::string> sigs[2];
        for (int i = 0; i < 2; ++i) {
          Side& side = i == 0 ? o : d;
          const std::set<std::string> took = side.Took(res, holder);
          const std::set<std::string>& reusable = side.reuse[pod.uid][res];
          const Json affinity = AffinityOf(*side.after, holder);
          for (const std::string& id : side.ids[res]) {
            std::string sig;
            if (reusable.count(id)) {
              sig = "reuse";
            } else if (side.Held(res, id)) {
              sig = fixed(res, id, i == 0);
            } else {
              sig = "free:" + (numa_blind ? "*" : AffinityClass(side.own(res, id), affinity));
            }
            if (took.count(id)) sig += "|took";
            sigs[i][id] = sig;
          }
          for (const std::string& id : took) side.cur[res][id].insert(holder);
          std::set<std::string>& next = side.reuse[pod.uid][res];
          for (const std::string& id : took) {
            if (reuses) {
              next.insert(id);
            } else {
              next.erase(id);
            }
          }
        }
        map.Extend(res, sigs[0], sigs[1]);
      }
      if (!p->containers.count(holder)) p->allocation_order.push_back(holder);
      p->containers[holder] = map;
    }
  }
  // The step's other changes.
  const NumaFn o_numa = [&](const std::string& res, const std::string& id) {
    const std::string partner = map.Partner(res, id);
    return partner.empty() ? o.own(res, id) : d.own(res, partner);
  };
  for (const std::string& res : resources) {
    std::map<std::string, std::string> sigs[2];
    for (int i = 0; i < 2; ++i) {
      Side& side = i == 0 ? o : d;
      for (const std::string& id : side.ids[res]) {
        std::string sig;
        if (side.Held(res, id)) {
          sig = fixed(res, id, i == 0);
        } else {
          sig = "free:" + (numa_blind ? std::string("*")
                                      : (i == 0 ? o_numa(res, id) : d.own(res, id)).dump());
        }
        sigs[i][id] = sig + "|" + PodsHolding(side.post, res, id);
      }
    }
    map.Extend(res, sigs[0], sigs[1]);
  }
}

// RPCs: an Allocate call is renamed as the container whose devices it asks
// for; everything else globally.
void RenameCalls(const Pairing& p, const Json& oracle, Json* out) {
  if (!out->contains("calls")) return;
  const Json& alloc = oracle.contains("allocations") ? oracle["allocations"] : Json::object();
  std::set<std::string> used;
  for (auto plugin = (*out)["calls"].begin(); plugin != (*out)["calls"].end(); ++plugin) {
    for (auto list = plugin.value().begin(); list != plugin.value().end(); ++list) {
      for (Json& call : list.value()) {
        const DeviceMap* m = &p.global;
        if (call.value("method", "") == "Allocate" && call.contains("args") &&
            call["args"].contains("container_requests") &&
            call["args"]["container_requests"].size() == 1) {
          std::set<std::string> asked;
          for (const Json& id :
               call["args"]["container_requests"][0].value("devices_ids", Json::array())) {
            asked.insert(id.get<std::string>());
          }
          // In the kubelet's order: init containers that reuse devices ask
          // for the same IDs as the app containers after them.
          for (const std::string& holder : p.allocation_order) {
            if (used.count(holder)) continue;
            const DeviceMap& cm = p.containers.at(holder);
            const size_t slash = holder.find('/');
            const std::string uid = holder.substr(0, slash), name = holder.substr(slash + 1);
            if (!alloc.contains(uid) || !alloc[uid].contains(name)) continue;
            bool match = false;
            for (auto r = alloc[uid][name].begin(); r != alloc[uid][name].end(); ++r) {
              std::set<std::string> ids;
              for (const Json& id : r.value()) ids.insert(id.get<std::string>());
              match |= ids == asked;
            }
            if (!match) continue;
            used.insert(holder);
            m = &cm;
            break;
          }
        }
        m->RenameJson(&call);
      }
    }
  }
}

Json RenameOracle(const Pairing& p, const Json& oracle, const Json& devmgr, bool* crossed_numa) {
  Json out = oracle;
  // Container-owned data.
  if (out.contains("allocations")) {
    for (auto pod = out["allocations"].begin(); pod != out["allocations"].end(); ++pod) {
      for (auto c = pod.value().begin(); c != pod.value().end(); ++c) {
        p.For(pod.key(), c.key()).RenameJson(&c.value());
      }
    }
  }
  if (out.contains("options")) {
    for (auto pod = out["options"].begin(); pod != out["options"].end(); ++pod) {
      for (auto c = pod.value().begin(); c != pod.value().end(); ++c) {
        p.For(pod.key(), c.key()).RenameJson(&c.value());
      }
    }
  }
  // Which devices of which partner: devmgr ID -> its NUMA nodes, for the
  // pairs whose oracle device lies elsewhere.
  std::map<std::string, Json> crossed;
  auto note = [&](const DeviceMap& m) {
    for (const auto& [res, pairs] : m.pairs()) {
      for (const auto& [oid, did] : pairs) {
        const Json mine = NumaOf(&oracle, res, oid), theirs = NumaOf(&devmgr, res, did);
        if (!mine.is_null() && !theirs.is_null() && mine != theirs) crossed[did] = theirs;
      }
    }
  };
  note(p.global);
  for (const auto& [holder, m] : p.containers) note(m);
  if (crossed_numa != nullptr) *crossed_numa = !crossed.empty();
  if (out.contains("checkpoint") && out["checkpoint"].is_object() &&
      out["checkpoint"].contains("entries")) {
    for (Json& e : out["checkpoint"]["entries"]) {
      const DeviceMap& m = p.For(e.value("pod", ""), e.value("container", ""));
      for (const char* k : {"devices", "alloc_resp"}) {
        if (e.contains(k)) m.RenameJson(&e[k]);
      }
      if (crossed.empty()) continue;
      std::map<std::string, std::set<std::string>> by_numa;
      for (auto it = e["devices"].begin(); it != e["devices"].end(); ++it) {
        for (const Json& id : it.value()) {
          const std::string s = id.get<std::string>();
          auto c = crossed.find(s);
          if (c == crossed.end()) {
            by_numa[it.key()].insert(s);
          } else if (c->second.empty()) {
            by_numa["-1"].insert(s);
          } else {
            for (const Json& n : c->second) by_numa[n.dump()].insert(s);
          }
        }
      }
      Json devs = Json::object();
      for (const auto& [k, v] : by_numa) {
        devs[k] = Json(std::vector<std::string>(v.begin(), v.end()));
      }
      e["devices"] = devs;
    }
  }
  RenameCalls(p, oracle, &out);
  SortStringArrays(&out);
  return out;
}

Json HolderAffinities(const Json& allocations,
                      const std::function<Json(const std::string&, const std::string&)>& affinity) {
  Json out = Json::object();
  for (auto p = allocations.begin(); p != allocations.end(); ++p) {
    for (auto c = p.value().begin(); c != p.value().end(); ++c) {
      Json a = affinity(p.key(), c.key());
      if (!a.is_null()) out[p.key()][c.key()] = std::move(a);
    }
  }
  return out;
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
