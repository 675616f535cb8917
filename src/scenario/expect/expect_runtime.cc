// A container in the runtime: what it was handed (envs, annotations, mounts,
// device specs and CDI devices, each listed or `_exact`; or no options at
// all) and how it runs (running, restart_count, start_error).
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status_util.h"
#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

absl::Status KeyValues(const ExpectReader& r, const YAML::Node& n, const std::string& where,
                       bool exact, std::optional<KeyValueExpect>* out) {
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(n, where));
  KeyValueExpect kv;
  kv.exact = exact;
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string k;
    DEVMGR_RETURN_IF_ERROR(r.String(it->first, where + " keys", &k));
    StringMatcher m;
    DEVMGR_RETURN_IF_ERROR(r.Matcher(it->second, where + " values", &m));
    kv.entries.emplace_back(k, m);
  }
  *out = std::move(kv);
  return absl::OkStatus();
}

// Reads `name` or `name_exact` (not both); *found tells whether either is there.
absl::Status Exactable(const ExpectReader& r, const YAML::Node& v, const std::string& name,
                       YAML::Node* out, bool* exact, bool* found) {
  const std::string ex = name + "_exact";
  if (v[name] && v[ex]) return r.Error(v[ex], fmt::format("give {} or {}, not both", name, ex));
  *exact = static_cast<bool>(v[ex]);
  *found = v[ex] || v[name];
  if (v[ex]) {
    *out = v[ex];
  } else if (v[name]) {
    *out = v[name];
  }
  return absl::OkStatus();
}

// mounts: [{container_path, host_path, read_only}], each a matcher.
absl::Status Mounts(const ExpectReader& r, const YAML::Node& n,
                    std::optional<std::vector<MountExpect>>* out) {
  DEVMGR_RETURN_IF_ERROR(r.ExpectSeq(n, "mounts"));
  std::vector<MountExpect> ms;
  for (const YAML::Node& m : n) {
    DEVMGR_RETURN_IF_ERROR(r.ExpectMap(m, "a mount"));
    DEVMGR_RETURN_IF_ERROR(r.CheckKeys(m, {"container_path", "host_path", "read_only"}, "a mount"));
    MountExpect me;
    if (m["container_path"]) {
      DEVMGR_RETURN_IF_ERROR(
          r.OptMatcher(m["container_path"], "container_path", &me.container_path));
    }
    if (m["host_path"])
      DEVMGR_RETURN_IF_ERROR(r.OptMatcher(m["host_path"], "host_path", &me.host_path));
    if (m["read_only"])
      DEVMGR_RETURN_IF_ERROR(r.OptBool(m["read_only"], "read_only", &me.read_only));
    ms.push_back(std::move(me));
  }
  *out = std::move(ms);
  return absl::OkStatus();
}

// device_specs: [{container_path, host_path, permissions}], each a matcher.
absl::Status DeviceSpecs(const ExpectReader& r, const YAML::Node& n,
                         std::optional<std::vector<DeviceSpecExpect>>* out) {
  DEVMGR_RETURN_IF_ERROR(r.ExpectSeq(n, "device_specs"));
  std::vector<DeviceSpecExpect> ds;
  for (const YAML::Node& m : n) {
    DEVMGR_RETURN_IF_ERROR(r.ExpectMap(m, "a device spec"));
    DEVMGR_RETURN_IF_ERROR(
        r.CheckKeys(m, {"container_path", "host_path", "permissions"}, "a device spec"));
    DeviceSpecExpect de;
    if (m["container_path"]) {
      DEVMGR_RETURN_IF_ERROR(
          r.OptMatcher(m["container_path"], "container_path", &de.container_path));
    }
    if (m["host_path"])
      DEVMGR_RETURN_IF_ERROR(r.OptMatcher(m["host_path"], "host_path", &de.host_path));
    if (m["permissions"]) {
      DEVMGR_RETURN_IF_ERROR(r.OptMatcher(m["permissions"], "permissions", &de.permissions));
    }
    ds.push_back(std::move(de));
  }
  *out = std::move(ds);
  return absl::OkStatus();
}

absl::Status CdiDevices(const ExpectReader& r, const YAML::Node& n,
                        std::optional<std::vector<StringMatcher>>* out) {
  DEVMGR_RETURN_IF_ERROR(r.ExpectSeq(n, "cdi_devices"));
  std::vector<StringMatcher> cd;
  for (const YAML::Node& m : n) {
    StringMatcher sm;
    DEVMGR_RETURN_IF_ERROR(r.Matcher(m, "cdi_devices entries", &sm));
    cd.push_back(std::move(sm));
  }
  *out = std::move(cd);
  return absl::OkStatus();
}

// envs, annotations, mounts, device_specs, cdi_devices (each or its _exact).
absl::Status ParseOptions(const ExpectReader& r, const YAML::Node& v, ContainerExpect* c) {
  YAML::Node n1, n2, n3, n4, n5;  // distinct: assigning a bound YAML::Node rewrites it
  bool exact = false, found = false;
  DEVMGR_RETURN_IF_ERROR(Exactable(r, v, "envs", &n1, &exact, &found));
  if (found) DEVMGR_RETURN_IF_ERROR(KeyValues(r, n1, "envs", exact, &c->envs));
  DEVMGR_RETURN_IF_ERROR(Exactable(r, v, "annotations", &n2, &exact, &found));
  if (found) DEVMGR_RETURN_IF_ERROR(KeyValues(r, n2, "annotations", exact, &c->annotations));
  DEVMGR_RETURN_IF_ERROR(Exactable(r, v, "mounts", &n3, &c->mounts_exact, &found));
  if (found) DEVMGR_RETURN_IF_ERROR(Mounts(r, n3, &c->mounts));
  DEVMGR_RETURN_IF_ERROR(Exactable(r, v, "device_specs", &n4, &c->device_specs_exact, &found));
  if (found) DEVMGR_RETURN_IF_ERROR(DeviceSpecs(r, n4, &c->device_specs));
  DEVMGR_RETURN_IF_ERROR(Exactable(r, v, "cdi_devices", &n5, &c->cdi_devices_exact, &found));
  if (found) DEVMGR_RETURN_IF_ERROR(CdiDevices(r, n5, &c->cdi_devices));
  return absl::OkStatus();
}

absl::Status ParseContainer(const ExpectReader& r, const YAML::Node& v, ContainerExpect* c) {
  DEVMGR_RETURN_IF_ERROR(ParseOptions(r, v, c));
  if (v["options"]) {
    if (!v["options"].IsScalar() || v["options"].Scalar() != "none") {
      return r.Error(v["options"], "options only takes 'none' (no runtime options at all)");
    }
    c->no_options = true;
  }
  if (v["running"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(v["running"], "running", &c->running));
  if (v["restart_count"]) {
    DEVMGR_RETURN_IF_ERROR(r.OptInt(v["restart_count"], "restart_count", 0, &c->restart_count));
  }
  if (v["start_error"]) {
    DEVMGR_RETURN_IF_ERROR(r.OptMatcher(v["start_error"], "start_error", &c->start_error));
  }
  return absl::OkStatus();
}

void CheckKeyValues(const Location& loc, const std::string& w, const KeyValueExpect& want,
                    const std::vector<std::pair<std::string, std::string>>& got,
                    std::vector<Failure>* out) {
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
      Fail(out, loc, fmt::format("{}['{}']", w, k), m.Describe(), "absent; all: " + actual);
    } else if (!m.Matches(it->second)) {
      Fail(out, loc, fmt::format("{}['{}']", w, k), m.Describe(),
           fmt::format("\"{}\"", it->second));
    }
  }
  if (want.exact) {
    for (const auto& [k, v] : got) {
      const bool listed = std::any_of(want.entries.begin(), want.entries.end(),
                                      [&k = k](const auto& e) { return e.first == k; });
      if (!listed) Fail(out, loc, w, "exactly the listed keys", fmt::format("also {}={}", k, v));
    }
  }
}

// Matches listed items one-to-one against actual ones, in any order;
// with `exact`, no other item may be there.
template <typename Want, typename Got, typename Match, typename Show>
void CheckItems(const Location& loc, const std::string& w, const std::vector<Want>& want,
                bool exact, const std::vector<Got>& got, Match match, Show show,
                std::vector<Failure>* out) {
  std::string actual = "[";
  for (size_t i = 0; i < got.size(); ++i) actual += (i ? ", " : "") + show(got[i]);
  actual += "]";
  if (exact && want.size() != got.size()) {
    Fail(out, loc, w, fmt::format("exactly {} item(s), in any order", want.size()), actual);
    return;
  }
  if (MatchUnordered(want, got, match)) return;
  // Name the first item that matches nothing at all, else the overlap.
  for (size_t i = 0; i < want.size(); ++i) {
    const bool any =
        std::any_of(got.begin(), got.end(), [&](const Got& g) { return match(want[i], g); });
    if (!any) {
      Fail(out, loc, fmt::format("{}[{}]", w, i), "an item matching the expectation (any order)",
           actual);
      return;
    }
  }
  Fail(out, loc, w, fmt::format("{} distinct items matching the listed ones", want.size()), actual);
}

bool Opt(const std::optional<StringMatcher>& m, const std::string& s) {
  return !m || m->Matches(s);
}

// Mounts, device specs and CDI devices, each matched in any order.
void CheckItemLists(const ContainerExpect& c, const std::string& w,
                    const manager::RunContainerOptions& ro, std::vector<Failure>* out) {
  if (c.mounts) {
    CheckItems(
        c.loc, w + ".mounts", *c.mounts, c.mounts_exact, ro.mounts,
        [](const MountExpect& m, const manager::MountOption& g) {
          return Opt(m.container_path, g.container_path) && Opt(m.host_path, g.host_path) &&
                 (!m.read_only || *m.read_only == g.read_only);
        },
        [](const manager::MountOption& g) {
          return fmt::format("{}:{}{}", g.host_path, g.container_path, g.read_only ? ":ro" : "");
        },
        out);
  }
  if (c.device_specs) {
    CheckItems(
        c.loc, w + ".device_specs", *c.device_specs, c.device_specs_exact, ro.devices,
        [](const DeviceSpecExpect& m, const manager::DeviceOption& g) {
          return Opt(m.container_path, g.path_in_container) && Opt(m.host_path, g.path_on_host) &&
                 Opt(m.permissions, g.permissions);
        },
        [](const manager::DeviceOption& g) {
          return fmt::format("{}:{}:{}", g.path_on_host, g.path_in_container, g.permissions);
        },
        out);
  }
  if (c.cdi_devices) {
    CheckItems(
        c.loc, w + ".cdi_devices", *c.cdi_devices, c.cdi_devices_exact, ro.cdi_devices,
        [](const StringMatcher& m, const std::string& g) { return m.Matches(g); },
        [](const std::string& g) { return g; }, out);
  }
}

// What the runtime was handed: envs, annotations, mounts, device specs, CDI.
void CheckOptions(const ContainerExpect& c, const std::string& w, const node::ContainerRecord& cr,
                  std::vector<Failure>* out) {
  const std::optional<manager::RunContainerOptions>& opts = cr.run_options;
  if (c.no_options && opts)
    Fail(out, c.loc, w + ".options", "none", "options were handed to the runtime");
  static const manager::RunContainerOptions kEmpty;
  const manager::RunContainerOptions& ro = opts ? *opts : kEmpty;
  if (c.envs) {
    std::vector<std::pair<std::string, std::string>> got;
    for (const auto& e : ro.envs) got.emplace_back(e.name, e.value);
    CheckKeyValues(c.loc, w + ".envs", *c.envs, got, out);
  }
  if (c.annotations) {
    std::vector<std::pair<std::string, std::string>> got;
    for (const auto& e : ro.annotations) got.emplace_back(e.name, e.value);
    CheckKeyValues(c.loc, w + ".annotations", *c.annotations, got, out);
  }
  CheckItemLists(c, w, ro, out);
}

void CheckContainer(const ContainerCheck& cc, std::vector<Failure>* out) {
  const ContainerExpect& c = cc.want;
  const node::ContainerRecord& cr = cc.container;
  const std::string& w = cc.where;
  CheckOptions(c, w, cr, out);
  if (c.running && cr.running != *c.running) {
    Fail(out, c.loc, w + ".running", BoolString(*c.running), BoolString(cr.running));
  }
  if (c.restart_count && cr.restart_count != *c.restart_count) {
    Fail(out, c.loc, w + ".restart_count", IntString(*c.restart_count),
         IntString(cr.restart_count));
  }
  if (c.start_error && !c.start_error->Matches(cr.start_error)) {
    Fail(out, c.loc, w + ".start_error", c.start_error->Describe(),
         fmt::format("\"{}\"", cr.start_error));
  }
}

}  // namespace

const ExpectKind& RuntimeExpectKind() {
  static const ExpectKind kKind = {
      .name = "runtime",
      .container_keys = {"envs", "envs_exact", "annotations", "annotations_exact", "mounts",
                         "mounts_exact", "device_specs", "device_specs_exact", "cdi_devices",
                         "cdi_devices_exact", "options", "running", "restart_count", "start_error"},
      .parse_container = ParseContainer,
      .check_container = CheckContainer,
  };
  return kKind;
}

}  // namespace devmgr::scenario
