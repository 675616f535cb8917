#include "scenario/expectations.h"

#include <algorithm>
#include <iterator>
#include <regex>
#include <set>

#include "checkpoint/checkpoint.h"
#include "fmt/format.h"
#include "scenario/health_check.h"

namespace devmgr::scenario {
namespace {

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::string Int(int64_t v) { return std::to_string(v); }
std::string Bool(bool b) { return b ? "true" : "false"; }

struct CheckpointEntry {
  std::string pod, container, resource;
  std::vector<std::string> devices;  // sorted, every NUMA node's
};

std::vector<CheckpointEntry> CheckpointEntries(const checkpoint::Checkpoint& cp) {
  std::vector<CheckpointEntry> entries;
  if (!cp.data.pod_device_entries) return entries;
  for (const auto& e : *cp.data.pod_device_entries) {
    CheckpointEntry x{e.pod_uid, e.container_name, e.resource_name, {}};
    if (e.device_ids) {
      for (const auto& [numa, ids] : *e.device_ids) {
        if (ids) x.devices.insert(x.devices.end(), ids->begin(), ids->end());
      }
    }
    std::sort(x.devices.begin(), x.devices.end());
    x.devices.erase(std::unique(x.devices.begin(), x.devices.end()), x.devices.end());
    entries.push_back(std::move(x));
  }
  return entries;
}

class Checker {
 public:
  Checker(const Observed& o, std::vector<Failure>* out) : o_(o), out_(out) {}

  void Fail(const Location& loc, std::string what, std::string expected, std::string actual) {
    out_->push_back(Failure{loc, std::move(what), std::move(expected), std::move(actual)});
  }

  void Resource(const ResourceExpect& r) {
    const std::string w = fmt::format("resources['{}']", r.resource);
    const manager::ResourceStatus* rs = nullptr;
    for (const auto& s : o_.resources) {
      if (s.resource_name == r.resource) rs = &s;
    }
    auto quantity = [&](const std::optional<QuantityExpect>& want,
                        const std::map<std::string, int64_t>& m, const std::string& what) {
      if (!want) return;
      auto it = m.find(r.resource);
      const std::string got = it == m.end() ? "absent (not on the node)" : Int(it->second);
      const std::string exp = want->absent ? "absent" : Int(want->value);
      if (want->absent ? it != m.end() : (it == m.end() || it->second != want->value)) {
        Fail(r.loc, w + "." + what, exp, got);
      }
    };
    quantity(r.capacity, o_.node.capacity, "capacity");
    quantity(r.allocatable, o_.node.allocatable, "allocatable");
    if (r.registered && (rs != nullptr) != *r.registered) {
      Fail(r.loc, w + ".registered", Bool(*r.registered), Bool(rs != nullptr));
    }
    const bool connected =
        rs != nullptr && rs->has_endpoint && !rs->stopped && !rs->endpoint_socket.empty();
    if (r.connected && connected != *r.connected) {
      Fail(r.loc, w + ".connected", Bool(*r.connected), Bool(connected));
    }
    static const std::vector<std::string> kNone;
    const auto& healthy = rs ? rs->healthy : kNone;
    const auto& unhealthy = rs ? rs->unhealthy : kNone;
    // A healthy set exists when the manager reports an allocatable count.
    using Ids = std::optional<std::vector<std::string>>;
    if (r.healthy) {
      CheckSet(*r.healthy, r.loc, w + ".healthy",
               rs != nullptr && rs->allocatable ? Ids(rs->healthy) : Ids(), o_.captures, out_);
    }
    if (r.unhealthy) {
      CheckSet(*r.unhealthy, r.loc, w + ".unhealthy", rs ? Ids(rs->unhealthy) : Ids(), o_.captures,
               out_);
    }
    if (r.allocated) {
      CheckSet(*r.allocated, r.loc, w + ".allocated",
               rs != nullptr && !rs->allocated.empty() ? Ids(rs->allocated) : Ids(), o_.captures,
               out_);
    }
    if (r.healthy_count && static_cast<int64_t>(healthy.size()) != *r.healthy_count) {
      Fail(r.loc, w + ".healthy_count", Int(*r.healthy_count),
           fmt::format("{} {}", healthy.size(), ListString(healthy)));
    }
    if (r.unhealthy_count && static_cast<int64_t>(unhealthy.size()) != *r.unhealthy_count) {
      Fail(r.loc, w + ".unhealthy_count", Int(*r.unhealthy_count),
           fmt::format("{} {}", unhealthy.size(), ListString(unhealthy)));
    }
  }

  const manager::ContainerAllocation* Allocation(const std::string& uid,
                                                 const std::string& container) const {
    for (const auto& p : o_.allocations) {
      if (p.pod_uid != uid) continue;
      for (const auto& c : p.containers) {
        if (c.container_name == container) return &c;
      }
    }
    return nullptr;
  }

  void KeyValues(const Location& loc, const std::string& w, const KeyValueExpect& want,
                 const std::vector<std::pair<std::string, std::string>>& got) {
    std::string actual = "{";
    for (size_t i = 0; i < got.size(); ++i) {
      actual += fmt::format("{}{}={}", i ? ", " : "", got[i].first, got[i].second);
    }
    actual += "}";
    for (const auto& [k, m] : want.entries) {
      // [&k = k]: clang 14 cannot capture a structured binding by [&].
      auto it =
          std::find_if(got.begin(), got.end(), [&k = k](const auto& kv) { return kv.first == k; });
      if (it == got.end()) {
        Fail(loc, fmt::format("{}['{}']", w, k), m.Describe(), "absent; all: " + actual);
      } else if (!m.Matches(it->second)) {
        Fail(loc, fmt::format("{}['{}']", w, k), m.Describe(), fmt::format("\"{}\"", it->second));
      }
    }
    if (want.exact) {
      for (const auto& [k, v] : got) {
        const bool listed = std::any_of(want.entries.begin(), want.entries.end(),
                                        [&k = k](const auto& e) { return e.first == k; });
        if (!listed) Fail(loc, w, "exactly the listed keys", fmt::format("also {}={}", k, v));
      }
    }
  }

  // Matches listed items one-to-one against actual ones, in any order;
  // with `exact`, no other item may be there.
  template <typename Want, typename Got, typename Match, typename Show>
  void Items(const Location& loc, const std::string& w, const std::vector<Want>& want, bool exact,
             const std::vector<Got>& got, Match match, Show show) {
    std::string actual = "[";
    for (size_t i = 0; i < got.size(); ++i) actual += (i ? ", " : "") + show(got[i]);
    actual += "]";
    if (exact && want.size() != got.size()) {
      Fail(loc, w, fmt::format("exactly {} item(s), in any order", want.size()), actual);
      return;
    }
    if (MatchUnordered(want, got, match)) return;
    // Name the first item that matches nothing at all, else the overlap.
    for (size_t i = 0; i < want.size(); ++i) {
      const bool any =
          std::any_of(got.begin(), got.end(), [&](const Got& g) { return match(want[i], g); });
      if (!any) {
        Fail(loc, fmt::format("{}[{}]", w, i), "an item matching the expectation (any order)",
             actual);
        return;
      }
    }
    Fail(loc, w, fmt::format("{} distinct items matching the listed ones", want.size()), actual);
  }

  static bool Opt(const std::optional<StringMatcher>& m, const std::string& s) {
    return !m || m->Matches(s);
  }

  void Container(const Location& pod_loc, const std::string& pw, const node::PodRecord& rec,
                 const ContainerExpect& c) {
    const std::string w = fmt::format("{}.containers['{}']", pw, c.name);
    const node::ContainerRecord* cr = nullptr;
    for (const auto& x : rec.containers) {
      if (x.name == c.name) cr = &x;
    }
    if (cr == nullptr) {
      std::vector<std::string> names;
      for (const auto& x : rec.containers) names.push_back(x.name);
      Fail(c.loc, w, "a container of the pod",
           "no such container; the pod has " + ListString(names));
      return;
    }
    ContainerDevices(w, rec, c);
    RuntimeOptions(w, *cr, c);
    if (c.running && cr->running != *c.running) {
      Fail(c.loc, w + ".running", Bool(*c.running), Bool(cr->running));
    }
    if (c.restart_count && cr->restart_count != *c.restart_count) {
      Fail(c.loc, w + ".restart_count", Int(*c.restart_count), Int(cr->restart_count));
    }
    if (c.start_error && !c.start_error->Matches(cr->start_error)) {
      Fail(c.loc, w + ".start_error", c.start_error->Describe(),
           fmt::format("\"{}\"", cr->start_error));
    }
    if (c.has_numa_affinity) {
      auto it = o_.numa_affinity.find({rec.pod.uid, c.name});
      const std::optional<std::vector<int>> got =
          it == o_.numa_affinity.end() ? std::nullopt : it->second;
      if (got != c.numa_affinity) {
        Fail(c.loc, w + ".numa_affinity", Ints(c.numa_affinity), Ints(got));
      }
    }
    if (c.topology_hints || !c.absent_hints.empty()) {
      Hints(c.loc, w, c.topology_hints.value_or(std::map<std::string, ResourceHints>{}),
            c.absent_hints, rec.pod.uid, c.name);
    }
    if (c.allocated_resources_status) {
      CheckResourceHealth(c.loc, w, *c.allocated_resources_status,
                          ObservedResourceStatus(o_.pod_statuses, rec.pod.uid, c.name), out_);
    }
  }

  // The container's devices: none, or per resource (ids, counts, NUMA nodes).
  void ContainerDevices(const std::string& w, const node::PodRecord& rec,
                        const ContainerExpect& c) {
    const manager::ContainerAllocation* alloc = Allocation(rec.pod.uid, c.name);
    if (c.no_devices && alloc != nullptr) {
      for (const auto& [r, ids] : alloc->devices) {
        if (!ids.empty())
          Fail(c.loc, w + ".devices", "none", fmt::format("{} {}", r, ListString(ids)));
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
      CheckDevices(d, fmt::format("{}.devices['{}']", w, d.resource), std::move(ids), numa,
                   o_.captures, out_);
    }
  }

  // What the runtime was handed: envs, annotations, mounts, device specs, CDI.
  void RuntimeOptions(const std::string& w, const node::ContainerRecord& container,
                      const ContainerExpect& c) {
    const node::ContainerRecord* cr = &container;
    const std::optional<manager::RunContainerOptions>& opts = cr->run_options;
    if (c.no_options && opts)
      Fail(c.loc, w + ".options", "none", "options were handed to the runtime");
    static const manager::RunContainerOptions kEmpty;
    const manager::RunContainerOptions& ro = opts ? *opts : kEmpty;
    if (c.envs) {
      std::vector<std::pair<std::string, std::string>> got;
      for (const auto& e : ro.envs) got.emplace_back(e.name, e.value);
      KeyValues(c.loc, w + ".envs", *c.envs, got);
    }
    if (c.annotations) {
      std::vector<std::pair<std::string, std::string>> got;
      for (const auto& e : ro.annotations) got.emplace_back(e.name, e.value);
      KeyValues(c.loc, w + ".annotations", *c.annotations, got);
    }
    if (c.mounts) {
      Items(
          c.loc, w + ".mounts", *c.mounts, c.mounts_exact, ro.mounts,
          [](const MountExpect& m, const manager::MountOption& g) {
            return Opt(m.container_path, g.container_path) && Opt(m.host_path, g.host_path) &&
                   (!m.read_only || *m.read_only == g.read_only);
          },
          [](const manager::MountOption& g) {
            return fmt::format("{}:{}{}", g.host_path, g.container_path, g.read_only ? ":ro" : "");
          });
    }
    if (c.device_specs) {
      Items(
          c.loc, w + ".device_specs", *c.device_specs, c.device_specs_exact, ro.devices,
          [](const DeviceSpecExpect& m, const manager::DeviceOption& g) {
            return Opt(m.container_path, g.path_in_container) && Opt(m.host_path, g.path_on_host) &&
                   Opt(m.permissions, g.permissions);
          },
          [](const manager::DeviceOption& g) {
            return fmt::format("{}:{}:{}", g.path_on_host, g.path_in_container, g.permissions);
          });
    }
    if (c.cdi_devices) {
      Items(
          c.loc, w + ".cdi_devices", *c.cdi_devices, c.cdi_devices_exact, ro.cdi_devices,
          [](const StringMatcher& m, const std::string& g) { return m.Matches(g); },
          [](const std::string& g) { return g; });
    }
  }

  static std::string Ints(const std::optional<std::vector<int>>& v) {
    if (!v) return "<nil>";
    std::vector<std::string> s;
    for (int x : *v) s.push_back(std::to_string(x));
    return ListString(s);
  }

  void Hints(const Location& loc, const std::string& w,
             const std::map<std::string, ResourceHints>& want,
             const std::map<std::string, std::vector<std::string>>& absent, const std::string& uid,
             const std::string& container) {
    auto it = o_.merges.find(uid);
    const MergeObs* merge = nullptr;
    if (it != o_.merges.end()) {
      for (const auto& m : it->second) {
        if (m.container == container) merge = &m;
      }
    }
    if (merge == nullptr) {
      Fail(loc, w + ".topology_hints",
           container.empty() ? "a pod-scope merge" : "a merge for this container",
           "none recorded (policy none, or the other scope?)");
      return;
    }
    for (const auto& [provider, resources] : want) {
      auto pit = merge->providers.find(provider);
      if (pit == merge->providers.end()) {
        std::vector<std::string> names;
        for (const auto& [n, unused] : merge->providers) names.push_back(n);
        Fail(loc, fmt::format("{}.topology_hints['{}']", w, provider), "hints from this provider",
             "no such provider; providers: " + ListString(names));
        continue;
      }
      for (const auto& [resource, hints] : resources) {
        auto rit = pit->second.find(resource);
        const HintList got = rit == pit->second.end() ? HintList{} : rit->second;
        if (rit == pit->second.end() || got != hints) {
          Fail(loc, fmt::format("{}.topology_hints['{}']['{}']", w, provider, resource),
               HintListString(hints),
               rit == pit->second.end() ? "absent (no hints for this resource)"
                                        : HintListString(got));
        }
      }
    }
    for (const auto& [provider, resources] : absent) {
      auto pit = merge->providers.find(provider);
      if (pit == merge->providers.end()) continue;  // no provider: no hint either
      for (const std::string& resource : resources) {
        auto rit = pit->second.find(resource);
        if (rit != pit->second.end()) {
          Fail(loc, fmt::format("{}.topology_hints['{}']['{}']", w, provider, resource),
               "absent (no hint entry)", HintListString(rit->second));
        }
      }
    }
  }

  void Pod(const PodExpect& p) {
    const std::string w = fmt::format("pods['{}']", p.ref);
    const node::PodRecord* rec = FindPod(o_.pods, p.ref);
    if (p.exists && (rec != nullptr) != *p.exists) {
      Fail(p.loc, w + ".exists", Bool(*p.exists), Bool(rec != nullptr));
      return;
    }
    if (rec == nullptr) {
      if (!p.exists) {
        std::vector<std::string> names;
        for (const auto& r : o_.pods) names.push_back(r.pod.namespace_ + "/" + r.pod.name);
        Fail(p.loc, w, "a pod admitted by an earlier step",
             "no such pod; pods: " + ListString(names));
      }
      return;
    }
    const bool admitted = !(rec->phase == pod::Phase::kFailed && !rec->reason.empty());
    if (p.admitted && admitted != *p.admitted) {
      Fail(p.loc, w + ".admitted", Bool(*p.admitted),
           admitted ? "true" : fmt::format("false ({}: {})", rec->reason, rec->message));
    }
    const std::string phase(pod::PhaseName(rec->phase));
    if (p.phase && *p.phase != phase) Fail(p.loc, w + ".phase", *p.phase, phase);
    if (p.reason && !p.reason->Matches(rec->reason)) {
      Fail(p.loc, w + ".reason", p.reason->Describe(), fmt::format("\"{}\"", rec->reason));
    }
    if (p.message && !p.message->Matches(rec->message)) {
      Fail(p.loc, w + ".message", p.message->Describe(), fmt::format("\"{}\"", rec->message));
    }
    if (p.status_message) {
      const std::string sm = admitted ? "" : RejectedStatusMessage(rec->message);
      if (!p.status_message->Matches(sm)) {
        Fail(p.loc, w + ".status_message", p.status_message->Describe(), fmt::format("\"{}\"", sm));
      }
    }
    for (const ContainerExpect& c : p.containers) Container(p.loc, w, *rec, c);
    if (p.topology_hints || !p.absent_hints.empty()) {
      Hints(p.loc, w, p.topology_hints.value_or(std::map<std::string, ResourceHints>{}),
            p.absent_hints, rec->pod.uid, "");
    }
  }

  void Disjoint(const Location& loc, const std::vector<std::string>& resources) {
    std::set<std::string> active(o_.active_pod_uids.begin(), o_.active_pod_uids.end());
    // resource -> device -> (pod uid, container)
    std::map<std::string, std::map<std::string, std::pair<std::string, std::string>>> owner;
    for (const auto& p : o_.allocations) {
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
              Fail(loc, fmt::format("disjoint['{}']", r), "no device held by two pods",
                   fmt::format("{} held by pod {} container {} and pod {} container {}", id,
                               it->second.first, it->second.second, p.pod_uid, c.container_name));
            }
          }
        }
      }
    }
  }

  std::string PodUid(const std::string& ref) const {
    const node::PodRecord* r = FindPod(o_.pods, ref);
    return r ? r->pod.uid : ref;
  }

  void Checkpoint(const CheckpointExpect& c) {
    const bool exists = o_.checkpoint_bytes.has_value();
    if (c.exists && exists != *c.exists) {
      Fail(c.loc, "checkpoint.exists", Bool(*c.exists), Bool(exists));
      return;
    }
    if (!exists) {
      if (c.valid || c.entry_count || !c.entries.empty() || c.registered ||
          !c.registered_sets.empty()) {
        Fail(c.loc, "checkpoint", "a checkpoint file", "no file");
      }
      return;
    }
    const checkpoint::VerifyResult v = checkpoint::Verify(*o_.checkpoint_bytes);
    if (c.valid && v.valid != *c.valid) {
      Fail(c.loc, "checkpoint.valid", Bool(*c.valid),
           v.valid ? "true"
           : !v.parsed
               ? "false (" + v.error + ")"
               : fmt::format("false (checksum {} stored, {} computed)", v.stored, v.computed));
    }
    if (!v.parsed) {
      if (c.entry_count || !c.entries.empty() || c.registered || !c.registered_sets.empty()) {
        Fail(c.loc, "checkpoint", "a readable checkpoint", v.error);
      }
      return;
    }
    const checkpoint::Checkpoint cp = v.format == checkpoint::FormatVersion::kV1
                                          ? checkpoint::ConvertV1ToV2(v.checkpoint)
                                          : v.checkpoint;
    const std::vector<CheckpointEntry> entries = CheckpointEntries(cp);
    auto show_all = [&] {
      std::string s;
      for (const auto& e : entries) {
        s += fmt::format("{}{}/{}/{}={}", s.empty() ? "" : ", ", e.pod, e.container, e.resource,
                         ListString(e.devices));
      }
      return "[" + s + "]";
    };
    if (c.entry_count && static_cast<int64_t>(entries.size()) != *c.entry_count) {
      Fail(c.loc, "checkpoint.entry_count", Int(*c.entry_count),
           fmt::format("{} {}", entries.size(), show_all()));
    }
    for (const auto& want : c.entries) {
      const std::string uid = PodUid(want.pod);
      auto it = std::find_if(entries.begin(), entries.end(), [&](const CheckpointEntry& e) {
        return e.pod == uid && e.container == want.container && e.resource == want.resource;
      });
      const std::string w =
          fmt::format("checkpoint.entries[{}/{}/{}]", want.pod, want.container, want.resource);
      if (want.devices.absent) {
        if (it != entries.end()) {
          Fail(want.loc, w, "absent (no such entry)", ListString(it->devices));
        }
      } else if (it == entries.end()) {
        Fail(want.loc, w, "an entry", "absent; entries: " + show_all());
      } else {
        CheckSet(want.devices, want.loc, w + ".devices", it->devices, o_.captures, out_);
      }
    }
    if (c.entries_exact && entries.size() != c.entries.size()) {
      Fail(c.loc, "checkpoint.entries_exact", fmt::format("exactly {} entries", c.entries.size()),
           show_all());
    }
    Registered(c, cp);
  }

  void Registered(const CheckpointExpect& c, const checkpoint::Checkpoint& cp) {
    std::map<std::string, std::vector<std::string>> got;
    if (cp.data.registered_devices) {
      for (const auto& [r, ids] : *cp.data.registered_devices) {
        got[r] = ids ? Sorted(*ids) : std::vector<std::string>{};
      }
    }
    for (const auto& [r, want] : c.registered_sets) {
      auto it = got.find(r);
      CheckSet(want, c.loc, fmt::format("checkpoint.registered['{}']", r),
               it == got.end() ? std::nullopt : std::optional(it->second), o_.captures, out_);
    }
    if (c.registered) {
      std::map<std::string, std::vector<std::string>> want;
      for (const auto& [r, ids] : *c.registered) want[r] = Sorted(ids);
      if (got != want) {
        auto show = [](const std::map<std::string, std::vector<std::string>>& m) {
          std::string s;
          for (const auto& [r, ids] : m)
            s += fmt::format("{}{}={}", s.empty() ? "" : " ", r, ListString(ids));
          return "{" + s + "}";
        };
        Fail(c.loc, "checkpoint.registered", show(want), show(got));
      }
    }
  }

  void Calls(const CallsExpect& c) {
    const auto& src = c.since_start ? o_.calls_since_start : o_.calls_since_step;
    static const std::vector<nlohmann::json> kNone;
    auto it = src.find(c.plugin);
    const std::vector<nlohmann::json>& calls = it == src.end() ? kNone : it->second;
    const std::string w = fmt::format("calls['{}']", c.plugin);
    std::set<std::string> methods(c.methods.begin(), c.methods.end());
    if (methods.empty()) {
      for (const auto& ce : c.sequence) methods.insert(ce.method);
    }
    std::vector<const nlohmann::json*> considered;
    for (const auto& j : calls) {
      if (methods.count(j.value("method", ""))) considered.push_back(&j);
    }
    auto show = [&](size_t from) {
      std::string s;
      for (size_t i = from; i < considered.size() && i < from + 8; ++i) {
        const nlohmann::json& j = *considered[i];
        s += fmt::format("\n      {} {}", j.value("method", ""),
                         j.value("args", nlohmann::json::object()).dump());
        if (j.contains("error") || j.contains("code")) {
          s += fmt::format(" -> error {} \"{}\"", j.value("code", ""), j.value("error", ""));
        }
      }
      if (considered.size() > from + 8)
        s += fmt::format("\n      ... {} more", considered.size() - from - 8);
      return s.empty() ? std::string(" (none)") : s;
    };
    size_t next = 0;
    for (size_t i = 0; i < c.sequence.size(); ++i) {
      const CallExpect& want = c.sequence[i];
      bool found = false;
      size_t j = next;
      for (; j < considered.size(); ++j) {
        const nlohmann::json& got = *considered[j];
        const bool ok =
            got.value("method", "") == want.method &&
            (!want.args || JsonMatches(*want.args, got.value("args", nlohmann::json::object()))) &&
            ResultMatches(want, got);
        if (ok) {
          found = true;
          break;
        }
        if (c.exact) break;
      }
      if (!found) {
        Fail(want.loc, fmt::format("{}.sequence[{}]", w, i),
             want.method + (want.args ? " " + want.args->dump() : "") + DescribeResult(want),
             fmt::format("calls{}:{}", next ? fmt::format(" after #{}", next) : "", show(next)));
        return;
      }
      next = j + 1;
    }
    if (c.exact && !c.sequence.empty() && next != considered.size()) {
      Fail(c.loc, w, fmt::format("exactly {} call(s)", c.sequence.size()),
           fmt::format("{} more after the sequence:{}", considered.size() - next, show(next)));
    }
    for (const auto& [m, n] : c.counts) {
      int64_t got = 0;
      for (const auto& j : calls) got += j.value("method", "") == m;
      if (got != n) Fail(c.loc, fmt::format("{}.counts['{}']", w, m), Int(n), Int(got));
    }
  }

  static bool ResultMatches(const CallExpect& want, const nlohmann::json& got) {
    const std::string error = got.value("error", "");
    const std::string code = got.value("code", "");
    const bool failed = !error.empty() || !code.empty();
    if (want.ok && *want.ok == failed) return false;
    if (want.error && !want.error->Matches(error)) return false;
    if (want.code && *want.code != code) return false;
    return true;
  }

  static std::string DescribeResult(const CallExpect& want) {
    std::string s;
    if (want.ok) s += *want.ok ? " -> ok" : " -> an error";
    if (want.code) s += " -> code " + *want.code;
    if (want.error) s += " -> error " + want.error->Describe();
    return s;
  }

  void Log(const Location& loc, const std::string& re) {
    std::regex r(re, std::regex::ECMAScript);
    for (const auto& l : o_.log_lines) {
      if (std::regex_search(l, r)) return;
    }
    Fail(loc, "log", fmt::format("a devmgr log line matching /{}/", re),
         fmt::format("none in the last {} lines", o_.log_lines.size()));
  }

 private:
  const Observed& o_;
  std::vector<Failure>* out_;
};

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

std::string RejectedStatusMessage(const std::string& message) {
  return "Pod was rejected: " + message;
}

std::string ListString(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + v[i];
  return s + "]";
}

const node::PodRecord* FindPod(const std::vector<node::PodRecord>& pods, const std::string& ref) {
  const node::PodRecord* by_name = nullptr;
  int named = 0;
  // The latest record wins (a pod re-created with the same name).
  for (auto it = pods.rbegin(); it != pods.rend(); ++it) {
    const node::PodRecord& r = *it;
    if (r.pod.uid == ref || r.pod.namespace_ + "/" + r.pod.name == ref) return &r;
    if (r.pod.name == ref) {
      if (by_name == nullptr) by_name = &r;
      if (by_name->pod.namespace_ != r.pod.namespace_) ++named;
    }
  }
  return named > 0 ? nullptr : by_name;
}

bool JsonMatches(const nlohmann::json& expected, const nlohmann::json& actual) {
  if (expected.is_object()) {
    if (expected.size() == 1 && expected.contains("regex") && expected["regex"].is_string()) {
      if (!actual.is_string()) return false;
      try {
        return std::regex_search(actual.get<std::string>(),
                                 std::regex(expected["regex"].get<std::string>()));
      } catch (const std::regex_error&) {
        return false;
      }
    }
    if (expected.size() == 1 && expected.contains("any_order") &&
        expected["any_order"].is_array()) {
      // The same elements in any order (each expected one matched once).
      const nlohmann::json& want = expected["any_order"];
      if (!actual.is_array() || actual.size() != want.size()) return false;
      std::vector<bool> used(actual.size(), false);
      for (const auto& w : want) {
        bool found = false;
        for (size_t i = 0; i < actual.size() && !found; ++i) {
          if (!used[i] && JsonMatches(w, actual[i])) used[i] = found = true;
        }
        if (!found) return false;
      }
      return true;
    }
    if (!actual.is_object()) return false;
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      // A missing key reads as the proto default (Go omits empty fields).
      const nlohmann::json got = actual.contains(it.key()) ? actual[it.key()] : nlohmann::json();
      if (!actual.contains(it.key())) {
        const nlohmann::json& e = it.value();
        const bool default_ok = e.is_null() || (e.is_array() && e.empty()) ||
                                (e.is_number() && e == 0) || (e.is_string() && e == "") ||
                                (e.is_boolean() && !e.get<bool>());
        if (default_ok) continue;
        return false;
      }
      if (!JsonMatches(it.value(), got)) return false;
    }
    return true;
  }
  if (expected.is_array()) {
    if (!actual.is_array() || actual.size() != expected.size()) return false;
    for (size_t i = 0; i < expected.size(); ++i) {
      if (!JsonMatches(expected[i], actual[i])) return false;
    }
    return true;
  }
  if (expected.is_string() && actual.is_number())
    return expected.get<std::string>() == actual.dump();
  if (expected.is_number() && actual.is_string())
    return expected.dump() == actual.get<std::string>();
  if (expected.is_number() && actual.is_number()) return expected.dump() == actual.dump();
  return expected == actual;
}

namespace internal {
bool Augment(size_t i, const std::vector<std::vector<bool>>& ok, std::vector<bool>* seen,
             std::vector<int64_t>* owner) {
  for (size_t j = 0; j < ok[i].size(); ++j) {
    if (!ok[i][j] || (*seen)[j]) continue;
    (*seen)[j] = true;
    if ((*owner)[j] < 0 || Augment(static_cast<size_t>((*owner)[j]), ok, seen, owner)) {
      (*owner)[j] = static_cast<int64_t>(i);
      return true;
    }
  }
  return false;
}
}  // namespace internal

void CheckSet(const SetExpect& e, const Location& loc, const std::string& where,
              const std::optional<std::vector<std::string>>& got_opt,
              const std::map<std::string, std::vector<std::string>>& captures,
              std::vector<Failure>* out) {
  auto fail = [&](std::string what, std::string expected, std::string actual) {
    out->push_back(Failure{loc, std::move(what), std::move(expected), std::move(actual)});
  };
  if (e.absent) {
    if (got_opt) fail(where, "absent", ListString(Sorted(*got_opt)));
    return;
  }
  const std::vector<std::string> got = got_opt ? Sorted(*got_opt) : std::vector<std::string>{};
  const std::string shown = got_opt ? ListString(got) : "absent";
  // A reference's ids and its description ("[a b]" or "$name [a b]").
  auto resolve = [&](const SetRef& r, std::vector<std::string>* ids) -> std::optional<std::string> {
    if (r.capture.empty()) {
      *ids = Sorted(r.ids);
      return ListString(*ids);
    }
    auto it = captures.find(r.capture);
    if (it == captures.end()) {
      fail(where, "$" + r.capture, "no value captured under that name");
      return std::nullopt;
    }
    *ids = it->second;
    return fmt::format("${} {}", r.capture, ListString(*ids));
  };
  if (e.count && static_cast<int64_t>(got.size()) != *e.count) {
    fail(where, fmt::format("{} device(s)", *e.count), fmt::format("{} {}", got.size(), shown));
  }
  if (e.count_of) {
    std::vector<std::string> ids;
    if (auto d = resolve(SetRef{{}, *e.count_of}, &ids); d && ids.size() != got.size()) {
      fail(where, fmt::format("{} device(s), as many as {}", ids.size(), *d),
           fmt::format("{} {}", got.size(), shown));
    }
  }
  std::vector<std::string> ids;
  if (e.ids) {
    if (auto d = resolve(*e.ids, &ids); d && ids != got) fail(where, *d, shown);
  }
  auto missing = [](const std::vector<std::string>& from, const std::vector<std::string>& in) {
    std::vector<std::string> m;
    std::set_difference(from.begin(), from.end(), in.begin(), in.end(), std::back_inserter(m));
    return m;
  };
  if (e.subset_of) {
    if (auto d = resolve(*e.subset_of, &ids); d && !missing(got, ids).empty()) {
      fail(where, "ids within " + *d,
           fmt::format("{} ({} not within)", shown, ListString(missing(got, ids))));
    }
  }
  if (e.superset_of) {
    if (auto d = resolve(*e.superset_of, &ids); d && !missing(ids, got).empty()) {
      fail(where, "ids including " + *d,
           fmt::format("{} ({} missing)", shown, ListString(missing(ids, got))));
    }
  }
  if (e.disjoint_from) {
    if (auto d = resolve(*e.disjoint_from, &ids)) {
      std::vector<std::string> common;
      std::set_intersection(got.begin(), got.end(), ids.begin(), ids.end(),
                            std::back_inserter(common));
      if (!common.empty()) {
        fail(where, "no id in common with " + *d,
             fmt::format("{} ({} in common)", shown, ListString(common)));
      }
    }
  }
}

void CheckDevices(const DeviceExpect& d, const std::string& where, std::vector<std::string> ids,
                  const std::set<int64_t>& numa,
                  const std::map<std::string, std::vector<std::string>>& captures,
                  std::vector<Failure>* out) {
  CheckSet(d.set, d.loc, where, std::move(ids), captures, out);
  if (d.numa) {
    const std::set<int64_t> want(d.numa->begin(), d.numa->end());
    if (numa != want) {
      auto show = [](const std::set<int64_t>& s) {
        std::vector<std::string> v;
        for (int64_t x : s) v.push_back(Int(x));
        return ListString(v);
      };
      out->push_back(Failure{d.loc, where + ".numa", show(want), show(numa)});
    }
  }
}

std::vector<Failure> CheckExpectations(const Expectations& e, const Observed& o) {
  std::vector<Failure> out;
  Checker c(o, &out);
  for (const auto& r : e.resources) c.Resource(r);
  for (const auto& p : e.pods) c.Pod(p);
  if (e.disjoint) c.Disjoint(e.loc, *e.disjoint);
  if (e.checkpoint) c.Checkpoint(*e.checkpoint);
  for (const auto& calls : e.calls) c.Calls(calls);
  if (e.pod_resources) {
    if (o.pod_resources) {
      CheckPodResources(*e.pod_resources, *o.pod_resources, &out, o.captures);
    } else {
      out.push_back(
          Failure{e.pod_resources->loc, "pod_resources", "PodResources answers", "not observed"});
    }
  }
  for (const auto& [loc, re] : e.log) c.Log(loc, re);
  return out;
}

}  // namespace devmgr::scenario
