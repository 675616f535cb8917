#include "scenario/expect/pod_resources_check.h"

#include <utility>

#include "common/status_util.h"
#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"
#include "scenario/expect/expectations.h"

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

const Keys kPodResourcesKeys = {"allocatable", "pod_count", "pods", "get"};

// The containers of a listed pod or of Get's answer: resource -> set, `none`
// (no devices) or `absent` (not listed).
absl::Status ParsePrContainers(const ExpectReader& r, const YAML::Node& cs,
                               const std::string& where, PrPodExpect* p) {
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(cs, where + ".containers"));
  for (auto it = cs.begin(); it != cs.end(); ++it) {
    PrContainerExpect c;
    DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(it->first, "container name", &c.name));
    c.loc = r.Loc(it->first);
    const YAML::Node d = it->second;
    if (d.IsScalar() && d.Scalar() == "none") {
      c.no_devices = true;
    } else if (d.IsScalar() && d.Scalar() == "absent") {
      c.absent = true;
    } else if (!d.IsNull()) {
      DEVMGR_RETURN_IF_ERROR(r.ExpectMap(
          d, fmt::format("container '{}' (resource -> count, ids or a mapping; none; absent)",
                         c.name)));
      for (auto dt = d.begin(); dt != d.end(); ++dt) {
        DeviceExpect de;
        DEVMGR_RETURN_IF_ERROR(r.Device(dt->first, dt->second, &de));
        c.devices.push_back(std::move(de));
      }
    }
    p->containers.push_back(std::move(c));
  }
  return absl::OkStatus();
}

// List (`get` false): `absent`, or {containers}; Get: {containers} or {error}.
absl::Status ParsePrPod(const ExpectReader& r, const YAML::Node& k, const YAML::Node& v, bool get,
                        PrPodExpect* p) {
  DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(k, "pod name", &p->ref));
  p->loc = r.Loc(k);
  const std::string where = fmt::format("pod_resources.{}['{}']", get ? "get" : "pods", p->ref);
  const size_t slash = p->ref.find('/');
  if (slash != std::string::npos && (slash == 0 || slash + 1 == p->ref.size() ||
                                     p->ref.find('/', slash + 1) != std::string::npos)) {
    return r.Error(k, fmt::format("{}: a pod is NAME or NAMESPACE/NAME", where));
  }
  if (!get && v.IsScalar() && v.Scalar() == "absent") {
    p->absent = true;
    return absl::OkStatus();
  }
  DEVMGR_RETURN_IF_ERROR(
      r.ExpectMap(v, get ? where + " ({containers: ...} or {error: ...})"
                         : where + " ({containers: ...}, or absent: not listed)"));
  DEVMGR_RETURN_IF_ERROR(
      r.CheckKeys(v, get ? Keys{"containers", "error"} : Keys{"containers"}, where));
  if (v["error"]) {
    if (v["containers"]) return r.Error(v["error"], "give containers or error, not both");
    DEVMGR_RETURN_IF_ERROR(r.OptMatcher(v["error"], "error", &p->error));
  }
  if (v["containers"]) DEVMGR_RETURN_IF_ERROR(ParsePrContainers(r, v["containers"], where, p));
  return absl::OkStatus();
}

absl::Status ParsePodResources(const ExpectReader& r, const YAML::Node& n, PodResourcesExpect* e) {
  e->loc = r.Loc(n);
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(n, "expect.pod_resources"));
  DEVMGR_RETURN_IF_ERROR(r.CheckKeys(n, kPodResourcesKeys, "expect.pod_resources"));
  if (n["allocatable"]) {
    const YAML::Node a = n["allocatable"];
    DEVMGR_RETURN_IF_ERROR(
        r.ExpectMap(a, "pod_resources.allocatable (resource -> count, ids or a mapping)"));
    for (auto it = a.begin(); it != a.end(); ++it) {
      DeviceExpect d;
      DEVMGR_RETURN_IF_ERROR(r.Device(it->first, it->second, &d));
      e->allocatable.push_back(std::move(d));
    }
  }
  if (n["pod_count"])
    DEVMGR_RETURN_IF_ERROR(r.OptInt(n["pod_count"], "pod_count", 0, &e->pod_count));
  for (const bool get : {false, true}) {
    const char* key = get ? "get" : "pods";
    if (!n[key]) continue;
    const YAML::Node ps = n[key];
    DEVMGR_RETURN_IF_ERROR(
        r.ExpectMap(ps, fmt::format("pod_resources.{} (pod -> expectations)", key)));
    for (auto it = ps.begin(); it != ps.end(); ++it) {
      PrPodExpect p;
      DEVMGR_RETURN_IF_ERROR(ParsePrPod(r, it->first, it->second, get, &p));
      (get ? e->get : e->pods).push_back(std::move(p));
    }
  }
  if (e->allocatable.empty() && !e->pod_count && e->pods.empty() && e->get.empty()) {
    return r.Error(n, "expect.pod_resources: has nothing to check");
  }
  return absl::OkStatus();
}

absl::Status Parse(const ExpectReader& r, const YAML::Node& n, Expectations* e) {
  if (!n["pod_resources"]) return absl::OkStatus();
  PodResourcesExpect pr;
  DEVMGR_RETURN_IF_ERROR(ParsePodResources(r, n["pod_resources"], &pr));
  e->pod_resources = std::move(pr);
  return absl::OkStatus();
}

void Check(const Expectations& e, const Observed& o, std::vector<Failure>* out) {
  if (!e.pod_resources) return;
  if (o.pod_resources) {
    CheckPodResources(*e.pod_resources, *o.pod_resources, out, o.captures);
  } else {
    out->push_back(
        Failure{e.pod_resources->loc, "pod_resources", "PodResources answers", "not observed"});
  }
}

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

const ExpectKind& PodResourcesExpectKind() {
  static const ExpectKind kKind = {
      .name = "pod_resources",
      .expect_keys = {"pod_resources"},
      .parse = Parse,
      .check = Check,
  };
  return kKind;
}

}  // namespace devmgr::scenario
