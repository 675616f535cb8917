#include "scenario/pod_resources_check.h"

#include <utility>

#include "fmt/format.h"
#include "scenario/expectations.h"

namespace devmgr::scenario {
namespace {

void AddDevices(const google::protobuf::RepeatedPtrField<v1::ContainerDevices>& in,
                PrDevices* out) {
  for (const v1::ContainerDevices& d : in) {
    for (const std::string& id : d.device_ids()) {
      std::set<int64_t>& numa = (*out)[d.resource_name()][id];
      if (d.has_topology()) {
        for (const v1::NUMANode& n : d.topology().nodes()) numa.insert(n.id());
      }
    }
  }
}

std::vector<std::string> Ids(const PrDevices& d, const std::string& resource) {
  std::vector<std::string> ids;
  auto it = d.find(resource);
  if (it == d.end()) return ids;
  for (const auto& [id, numa] : it->second) ids.push_back(id);
  return ids;
}

std::set<int64_t> Numa(const PrDevices& d, const std::string& resource) {
  std::set<int64_t> out;
  auto it = d.find(resource);
  if (it == d.end()) return out;
  for (const auto& [id, numa] : it->second) out.insert(numa.begin(), numa.end());
  return out;
}

std::string PodName(const PrPodObs& p) { return p.namespace_ + "/" + p.name; }

std::string Names(const std::vector<PrPodObs>& pods) {
  std::vector<std::string> names;
  for (const auto& p : pods) names.push_back(PodName(p));
  return ListString(names);
}

// "ns/name" matches exactly; "name" matches a pod of that name in any
// namespace (the first one listed).
const PrPodObs* FindListed(const std::vector<PrPodObs>& pods, const std::string& ref) {
  const bool qualified = ref.find('/') != std::string::npos;
  for (const auto& p : pods) {
    if (qualified ? PodName(p) == ref : p.name == ref) return &p;
  }
  return nullptr;
}

using Captures = std::map<std::string, std::vector<std::string>>;

void Containers(const std::string& where, const PrPodExpect& want, const PrPodObs& got,
                const Captures& captures, std::vector<Failure>* out) {
  for (const PrContainerExpect& c : want.containers) {
    const std::string w = fmt::format("{}.containers['{}']", where, c.name);
    const PrContainerObs* gc = nullptr;
    for (const auto& x : got.containers) {
      if (x.name == c.name) gc = &x;
    }
    if (c.absent) {
      if (gc != nullptr) out->push_back(Failure{c.loc, w, "absent (not listed)", "listed"});
      continue;
    }
    if (gc == nullptr) {
      std::vector<std::string> names;
      for (const auto& x : got.containers) names.push_back(x.name);
      out->push_back(Failure{c.loc, w, "a listed container",
                             "not listed; the pod lists " + ListString(names)});
      continue;
    }
    if (c.no_devices) {
      for (const auto& [resource, devices] : gc->devices) {
        out->push_back(
            Failure{c.loc, w, "no devices",
                    fmt::format("{} {}", resource, ListString(Ids(gc->devices, resource)))});
      }
    }
    for (const DeviceExpect& d : c.devices) {
      CheckDevices(d, fmt::format("{}['{}']", w, d.resource), Ids(gc->devices, d.resource),
                   Numa(gc->devices, d.resource), captures, out);
    }
  }
}

}  // namespace

PrPodObs FromProto(const v1::PodResources& p) {
  PrPodObs o;
  o.namespace_ = p.namespace_();
  o.name = p.name();
  for (const v1::ContainerResources& c : p.containers()) {
    PrContainerObs co;
    co.name = c.name();
    AddDevices(c.devices(), &co.devices);
    o.containers.push_back(std::move(co));
  }
  return o;
}

PodResourcesObs FromProto(const v1::ListPodResourcesResponse& list,
                          const v1::AllocatableResourcesResponse& allocatable) {
  PodResourcesObs o;
  for (const v1::PodResources& p : list.pod_resources()) o.list.push_back(FromProto(p));
  AddDevices(allocatable.devices(), &o.allocatable);
  return o;
}

std::pair<std::string, std::string> SplitGetRef(const std::string& ref) {
  const size_t slash = ref.find('/');
  if (slash == std::string::npos) return {"default", ref};
  return {ref.substr(0, slash), ref.substr(slash + 1)};
}

void CheckPodResources(const PodResourcesExpect& e, const PodResourcesObs& o,
                       std::vector<Failure>* out, const Captures& captures) {
  for (const DeviceExpect& d : e.allocatable) {
    CheckDevices(d, fmt::format("pod_resources.allocatable['{}']", d.resource),
                 Ids(o.allocatable, d.resource), Numa(o.allocatable, d.resource), captures, out);
  }
  if (e.pod_count && static_cast<int64_t>(o.list.size()) != *e.pod_count) {
    out->push_back(Failure{e.loc, "pod_resources.pod_count", std::to_string(*e.pod_count),
                           fmt::format("{} {}", o.list.size(), Names(o.list))});
  }
  for (const PrPodExpect& p : e.pods) {
    const std::string w = fmt::format("pod_resources.pods['{}']", p.ref);
    const PrPodObs* got = FindListed(o.list, p.ref);
    if (p.absent) {
      if (got != nullptr) out->push_back(Failure{p.loc, w, "not listed", "listed"});
      continue;
    }
    if (got == nullptr) {
      out->push_back(Failure{p.loc, w, "listed", "not listed; List returned " + Names(o.list)});
      continue;
    }
    Containers(w, p, *got, captures, out);
  }
  for (const PrPodExpect& p : e.get) {
    const std::string w = fmt::format("pod_resources.get['{}']", p.ref);
    auto it = o.get.find(p.ref);
    if (it == o.get.end()) {
      out->push_back(Failure{p.loc, w, "an answer", "Get was not called"});
      continue;
    }
    const PrGetObs& g = it->second;
    if (p.error) {
      if (g.pod) {
        out->push_back(Failure{p.loc, w + ".error", p.error->Describe(), "the call succeeded"});
      } else if (!p.error->Matches(g.error)) {
        out->push_back(
            Failure{p.loc, w + ".error", p.error->Describe(), fmt::format("\"{}\"", g.error)});
      }
      continue;
    }
    if (!g.pod) {
      out->push_back(Failure{p.loc, w, "the pod", fmt::format("error \"{}\"", g.error)});
      continue;
    }
    Containers(w, p, *g.pod, captures, out);
  }
}

}  // namespace devmgr::scenario
