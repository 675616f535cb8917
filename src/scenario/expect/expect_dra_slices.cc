// `expect.resource_slices`: the ResourceSlices a DRA driver has in the API
// endpoint, by driver: how many, their pools, the names of their devices,
// the node they name, or `absent` (none: e.g. after the kubelet wiped them
// 30 s after the driver's last instance went, dra.md "The flow" §3).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/status_util.h"
#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

const Keys kKeys = {"slices", "pools", "devices", "node_name"};

absl::Status ParseDriver(const ExpectReader& r, const YAML::Node& v, ResourceSlicesExpect* c) {
  if (v.IsScalar() && v.Scalar() == "absent") {
    c->absent = true;
    return absl::OkStatus();
  }
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(
      v, "resource_slices of a driver ({slices, pools, devices, node_name} or absent)"));
  DEVMGR_RETURN_IF_ERROR(r.CheckKeys(v, kKeys, "resource_slices of a driver"));
  if (v["slices"]) DEVMGR_RETURN_IF_ERROR(r.OptInt(v["slices"], "slices", 0, &c->slices));
  if (v["pools"]) {
    std::vector<std::string> pools;
    DEVMGR_RETURN_IF_ERROR(r.StringList(v["pools"], "pools", &pools));
    c->pools = std::move(pools);
  }
  if (v["devices"]) DEVMGR_RETURN_IF_ERROR(r.OptSet(v["devices"], "devices", &c->devices));
  if (v["node_name"])
    DEVMGR_RETURN_IF_ERROR(r.OptMatcher(v["node_name"], "node_name", &c->node_name));
  return absl::OkStatus();
}

absl::Status Parse(const ExpectReader& r, const YAML::Node& expect, Expectations* e) {
  if (!expect["resource_slices"]) return absl::OkStatus();
  const YAML::Node n = expect["resource_slices"];
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(n, "expect.resource_slices (driver -> its slices)"));
  for (auto it = n.begin(); it != n.end(); ++it) {
    ResourceSlicesExpect c;
    c.loc = r.Loc(it->first);
    DEVMGR_RETURN_IF_ERROR(r.DraDriverKey(it->first, &c.driver));
    DEVMGR_RETURN_IF_ERROR(ParseDriver(r, it->second, &c));
    e->resource_slices.push_back(std::move(c));
  }
  return absl::OkStatus();
}

// "<name> (node <node>, pool <pool>, <n> device(s))" per slice, for reports.
std::string SlicesString(const std::vector<const nlohmann::json*>& slices) {
  std::vector<std::string> out;
  for (const nlohmann::json* s : slices) {
    const nlohmann::json spec = s->value("spec", nlohmann::json::object());
    const nlohmann::json pool = spec.value("pool", nlohmann::json::object());
    out.push_back(
        fmt::format("{} (node {}, pool {}, {} device(s))",
                    s->value("metadata", nlohmann::json::object()).value("name", std::string("?")),
                    spec.value("nodeName", std::string("-")), pool.value("name", std::string("?")),
                    spec.value("devices", nlohmann::json::array()).size()));
  }
  return ListString(out);
}

void CheckContent(const ResourceSlicesExpect& c, const std::vector<const nlohmann::json*>& slices,
                  const Observed& o, std::vector<Failure>* out) {
  const std::string w = fmt::format("resource_slices['{}']", c.driver);
  if (c.slices && static_cast<int64_t>(slices.size()) != *c.slices) {
    Fail(out, c.loc, w + ".slices", IntString(*c.slices),
         fmt::format("{} {}", slices.size(), SlicesString(slices)));
  }
  std::set<std::string> pools;
  std::vector<std::string> devices;
  for (const nlohmann::json* s : slices) {
    const nlohmann::json spec = s->value("spec", nlohmann::json::object());
    pools.insert(spec.value("pool", nlohmann::json::object()).value("name", std::string()));
    for (const nlohmann::json& d : spec.value("devices", nlohmann::json::array())) {
      devices.push_back(d.value("name", std::string()));
    }
    if (c.node_name && !c.node_name->Matches(spec.value("nodeName", std::string()))) {
      Fail(out, c.loc, w + ".node_name", c.node_name->Describe(),
           fmt::format("{} in {}", spec.value("nodeName", std::string("no nodeName")),
                       SlicesString({s})));
    }
  }
  if (c.pools) {
    const std::set<std::string> want(c.pools->begin(), c.pools->end());
    if (want != pools) {
      Fail(out, c.loc, w + ".pools", ListString(std::vector<std::string>(want.begin(), want.end())),
           ListString(std::vector<std::string>(pools.begin(), pools.end())));
    }
  }
  if (c.devices) CheckSet(*c.devices, c.loc, w + ".devices", devices, o.captures, out);
}

void CheckDriver(const ResourceSlicesExpect& c, const Observed& o, std::vector<Failure>* out) {
  std::vector<const nlohmann::json*> slices;
  for (const nlohmann::json& s : o.dra_slices) {
    if (s.value("spec", nlohmann::json::object()).value("driver", std::string()) == c.driver) {
      slices.push_back(&s);
    }
  }
  const std::string w = fmt::format("resource_slices['{}']", c.driver);
  if (c.absent) {
    if (!slices.empty()) {
      Fail(out, c.loc, w, "absent (no slice)",
           fmt::format("{} slice(s) {}", slices.size(), SlicesString(slices)));
    }
    return;
  }
  if (slices.empty() && !(c.slices && *c.slices == 0)) {
    Fail(out, c.loc, w, "slices of the driver", "none");
    return;
  }
  CheckContent(c, slices, o, out);
}

void Check(const Expectations& e, const Observed& o, std::vector<Failure>* out) {
  for (const ResourceSlicesExpect& c : e.resource_slices) CheckDriver(c, o, out);
}

}  // namespace

const ExpectKind& DraSlicesExpectKind() {
  static const ExpectKind kKind = {
      .name = "resource_slices",
      .expect_keys = {"resource_slices"},
      .parse = Parse,
      .check = Check,
  };
  return kKind;
}

}  // namespace devmgr::scenario
