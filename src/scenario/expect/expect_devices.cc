// Devices held by containers: a container's `devices` (none, or per resource
// the ids, their count and the NUMA nodes of their topology) and
// `expect.disjoint` (no device held by containers of two active pods).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/status_util.h"
#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

absl::Status Parse(const ExpectReader& r, const YAML::Node& n, Expectations* e) {
  if (!n["disjoint"]) return absl::OkStatus();
  const YAML::Node d = n["disjoint"];
  if (d.IsSequence()) {
    std::vector<std::string> rs;
    DEVMGR_RETURN_IF_ERROR(r.StringList(d, "disjoint", &rs));
    e->disjoint = rs;
  } else {
    bool b = false;
    DEVMGR_RETURN_IF_ERROR(r.Bool(d, "disjoint (true or a list of resources)", &b));
    if (b) e->disjoint = std::vector<std::string>{};
  }
  return absl::OkStatus();
}

absl::Status ParseContainer(const ExpectReader& r, const YAML::Node& v, ContainerExpect* c) {
  if (!v["devices"]) return absl::OkStatus();
  const YAML::Node d = v["devices"];
  if (d.IsScalar() && d.Scalar() == "none") {
    c->no_devices = true;
    return absl::OkStatus();
  }
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(d, "devices (resource -> count, ids or a mapping)"));
  for (auto it = d.begin(); it != d.end(); ++it) {
    DeviceExpect de;
    DEVMGR_RETURN_IF_ERROR(r.Device(it->first, it->second, &de));
    c->devices.push_back(std::move(de));
  }
  return absl::OkStatus();
}

const manager::ContainerAllocation* Allocation(const Observed& o, const std::string& uid,
                                               const std::string& container) {
  for (const auto& p : o.allocations) {
    if (p.pod_uid != uid) continue;
    for (const auto& c : p.containers) {
      if (c.container_name == container) return &c;
    }
  }
  return nullptr;
}

void CheckContainer(const ContainerCheck& cc, std::vector<Failure>* out) {
  const ContainerExpect& c = cc.want;
  const manager::ContainerAllocation* alloc = Allocation(cc.observed, cc.pod.pod.uid, c.name);
  if (c.no_devices && alloc != nullptr) {
    for (const auto& [r, ids] : alloc->devices) {
      if (!ids.empty())
        Fail(out, c.loc, cc.where + ".devices", "none", fmt::format("{} {}", r, ListString(ids)));
    }
  }
  for (const DeviceExpect& d : c.devices) {
    std::vector<std::string> ids;
    std::set<int64_t> numa;
    if (alloc != nullptr) {
      auto it = alloc->devices.find(d.resource);
      if (it != alloc->devices.end()) ids = it->second;
      auto t = alloc->topology.find(d.resource);
      if (t != alloc->topology.end()) {
        for (const auto& [id, nodes] : t->second) numa.insert(nodes.begin(), nodes.end());
      }
    }
    CheckDevices(d, fmt::format("{}.devices['{}']", cc.where, d.resource), std::move(ids), numa,
                 cc.observed.captures, out);
  }
}

void CheckDisjoint(const Location& loc, const std::vector<std::string>& resources,
                   const Observed& o, std::vector<Failure>* out) {
  std::set<std::string> active(o.active_pod_uids.begin(), o.active_pod_uids.end());
  // resource -> device -> (pod uid, container)
  std::map<std::string, std::map<std::string, std::pair<std::string, std::string>>> owner;
  for (const auto& p : o.allocations) {
    if (!active.count(p.pod_uid)) continue;
    for (const auto& c : p.containers) {
      for (const auto& [r, ids] : c.devices) {
        if (!resources.empty() &&
            std::find(resources.begin(), resources.end(), r) == resources.end()) {
          continue;
        }
        for (const auto& id : ids) {
          auto [it, fresh] = owner[r].emplace(id, std::make_pair(p.pod_uid, c.container_name));
          if (!fresh && it->second.first != p.pod_uid) {
            Fail(out, loc, fmt::format("disjoint['{}']", r), "no device held by two pods",
                 fmt::format("{} held by pod {} container {} and pod {} container {}", id,
                             it->second.first, it->second.second, p.pod_uid, c.container_name));
          }
        }
      }
    }
  }
}

void Check(const Expectations& e, const Observed& o, std::vector<Failure>* out) {
  if (e.disjoint) CheckDisjoint(e.loc, *e.disjoint, o, out);
}

}  // namespace

const ExpectKind& DevicesExpectKind() {
  static const ExpectKind kKind = {
      .name = "devices",
      .expect_keys = {"disjoint"},
      .container_keys = {"devices"},
      .parse = Parse,
      .parse_container = ParseContainer,
      .check = Check,
      .check_container = CheckContainer,
  };
  return kKind;
}

}  // namespace devmgr::scenario
