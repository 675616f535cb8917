// Topology: the hints each provider gave the topology manager's merge for a
// pod (pod scope) or a container (`topology_hints`, or `absent` for no hint
// entry at all), and the NUMA affinity stored for a container
// (`numa_affinity`, null for none).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status_util.h"
#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

// provider -> resource -> hints, or `absent` (no hint entry at all).
absl::Status ProviderHints(const ExpectReader& r, const YAML::Node& n,
                           std::optional<std::map<std::string, ResourceHints>>* out,
                           std::map<std::string, std::vector<std::string>>* absent) {
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(n, "topology_hints (provider -> resource -> hints)"));
  std::map<std::string, ResourceHints> m;
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string p;
    DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(it->first, "provider name", &p));
    const YAML::Node rs = it->second;
    DEVMGR_RETURN_IF_ERROR(r.ExpectMap(rs, "topology_hints (resource -> list of hints or absent)"));
    YAML::Node present(YAML::NodeType::Map);
    for (auto res = rs.begin(); res != rs.end(); ++res) {
      const YAML::Node v = res->second;
      if (v.IsScalar() && v.Scalar() == "absent") {
        std::string name;
        DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(res->first, "resource name", &name));
        (*absent)[p].push_back(name);
      } else {
        present[res->first] = v;
      }
    }
    if (present.size() > 0 || (*absent)[p].empty()) {
      DEVMGR_RETURN_IF_ERROR(r.ResHints(present, "topology_hints", &m[p]));
    }
  }
  if (!m.empty()) *out = std::move(m);
  return absl::OkStatus();
}

absl::Status ParsePod(const ExpectReader& r, const YAML::Node& v, PodExpect* p) {
  if (!v["topology_hints"]) return absl::OkStatus();
  return ProviderHints(r, v["topology_hints"], &p->topology_hints, &p->absent_hints);
}

absl::Status ParseContainer(const ExpectReader& r, const YAML::Node& v, ContainerExpect* c) {
  if (v["numa_affinity"]) {
    c->has_numa_affinity = true;
    if (!v["numa_affinity"].IsNull()) {
      std::vector<int64_t> ids;
      DEVMGR_RETURN_IF_ERROR(r.IntList(v["numa_affinity"], "numa_affinity", &ids));
      c->numa_affinity = std::vector<int>(ids.begin(), ids.end());
    }
  }
  if (v["topology_hints"]) {
    DEVMGR_RETURN_IF_ERROR(
        ProviderHints(r, v["topology_hints"], &c->topology_hints, &c->absent_hints));
  }
  return absl::OkStatus();
}

std::string Ints(const std::optional<std::vector<int>>& v) {
  if (!v) return "<nil>";
  std::vector<std::string> s;
  for (int x : *v) s.push_back(std::to_string(x));
  return ListString(s);
}

// Hints of absent-listed resources must not be there at all.
void CheckAbsent(const Location& loc, const std::string& w, const MergeObs& merge,
                 const std::map<std::string, std::vector<std::string>>& absent,
                 std::vector<Failure>* out) {
  for (const auto& [provider, resources] : absent) {
    auto pit = merge.providers.find(provider);
    if (pit == merge.providers.end()) continue;  // no provider: no hint either
    for (const std::string& resource : resources) {
      auto rit = pit->second.find(resource);
      if (rit != pit->second.end()) {
        Fail(out, loc, fmt::format("{}.topology_hints['{}']['{}']", w, provider, resource),
             "absent (no hint entry)", HintListString(rit->second));
      }
    }
  }
}

void CheckHints(const Observed& o, const Location& loc, const std::string& w,
                const std::map<std::string, ResourceHints>& want,
                const std::map<std::string, std::vector<std::string>>& absent,
                const std::string& uid, const std::string& container, std::vector<Failure>* out) {
  auto it = o.merges.find(uid);
  const MergeObs* merge = nullptr;
  if (it != o.merges.end()) {
    for (const auto& m : it->second) {
      if (m.container == container) merge = &m;
    }
  }
  if (merge == nullptr) {
    Fail(out, loc, w + ".topology_hints",
         container.empty() ? "a pod-scope merge" : "a merge for this container",
         "none recorded (policy none, or the other scope?)");
    return;
  }
  for (const auto& [provider, resources] : want) {
    auto pit = merge->providers.find(provider);
    if (pit == merge->providers.end()) {
      std::vector<std::string> names;
      for (const auto& [n, unused] : merge->providers) names.push_back(n);
      Fail(out, loc, fmt::format("{}.topology_hints['{}']", w, provider),
           "hints from this provider", "no such provider; providers: " + ListString(names));
      continue;
    }
    for (const auto& [resource, hints] : resources) {
      auto rit = pit->second.find(resource);
      const HintList got = rit == pit->second.end() ? HintList{} : rit->second;
      if (rit == pit->second.end() || got != hints) {
        Fail(
            out, loc, fmt::format("{}.topology_hints['{}']['{}']", w, provider, resource),
            HintListString(hints),
            rit == pit->second.end() ? "absent (no hints for this resource)" : HintListString(got));
      }
    }
  }
  CheckAbsent(loc, w, *merge, absent, out);
}

void CheckPod(const PodCheck& pc, std::vector<Failure>* out) {
  const PodExpect& p = pc.want;
  if (!p.topology_hints && p.absent_hints.empty()) return;
  CheckHints(pc.observed, p.loc, pc.where,
             p.topology_hints.value_or(std::map<std::string, ResourceHints>{}), p.absent_hints,
             pc.pod.pod.uid, "", out);
}

void CheckContainer(const ContainerCheck& cc, std::vector<Failure>* out) {
  const ContainerExpect& c = cc.want;
  const Observed& o = cc.observed;
  if (c.has_numa_affinity) {
    auto it = o.numa_affinity.find({cc.pod.pod.uid, c.name});
    const std::optional<std::vector<int>> got =
        it == o.numa_affinity.end() ? std::nullopt : it->second;
    if (got != c.numa_affinity) {
      Fail(out, c.loc, cc.where + ".numa_affinity", Ints(c.numa_affinity), Ints(got));
    }
  }
  if (c.topology_hints || !c.absent_hints.empty()) {
    CheckHints(o, c.loc, cc.where,
               c.topology_hints.value_or(std::map<std::string, ResourceHints>{}), c.absent_hints,
               cc.pod.pod.uid, c.name, out);
  }
}

}  // namespace

std::string HintListString(const HintList& hints) {
  if (!hints) return "<nil>";
  std::string s = "[";
  for (size_t i = 0; i < hints->size(); ++i) {
    const HintSpec& h = (*hints)[i];
    std::string mask = "<nil>";
    if (h.numa) {
      std::vector<std::string> ids;
      for (int x : *h.numa) ids.push_back(std::to_string(x));
      mask = ListString(ids);
    }
    s += fmt::format("{}{{{} {}}}", i ? " " : "", mask, h.preferred ? "true" : "false");
  }
  return s + "]";
}

const ExpectKind& TopologyExpectKind() {
  static const ExpectKind kKind = {
      .name = "topology",
      .pod_keys = {"topology_hints"},
      .container_keys = {"numa_affinity", "topology_hints"},
      .parse_pod = ParsePod,
      .parse_container = ParseContainer,
      .check_pod = CheckPod,
      .check_container = CheckContainer,
  };
  return kKind;
}

}  // namespace devmgr::scenario
