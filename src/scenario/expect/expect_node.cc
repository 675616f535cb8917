// `expect.resources`: a resource on the node (capacity and allocatable in
// node status) and in the device manager (its healthy, unhealthy and
// allocated sets, whether it is registered and connected).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/status_util.h"
#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

const Keys kResourceKeys = {"capacity",        "allocatable", "healthy",
                            "unhealthy",       "allocated",   "healthy_count",
                            "unhealthy_count", "registered",  "connected"};

// A number, or `absent`.
absl::Status Quantity(const ExpectReader& r, const YAML::Node& n, const std::string& where,
                      std::optional<QuantityExpect>* out) {
  QuantityExpect q;
  if (n.IsScalar() && n.Scalar() == "absent") {
    q.absent = true;
  } else {
    absl::Status s = r.Int(n, where, 0, &q.value);
    if (!s.ok() && n.IsScalar() && absl::StrContains(s.message(), "must be an integer")) {
      return r.Error(n, fmt::format("{} must be an integer or absent", where));
    }
    DEVMGR_RETURN_IF_ERROR(s);
  }
  *out = q;
  return absl::OkStatus();
}

absl::Status ParseResource(const ExpectReader& r, const YAML::Node& k, const YAML::Node& v,
                           ResourceExpect* e) {
  DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(k, "resource name", &e->resource));
  e->loc = r.Loc(k);
  const std::string where = fmt::format("expect.resources['{}']", e->resource);
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(v, where));
  DEVMGR_RETURN_IF_ERROR(r.CheckKeys(v, kResourceKeys, where));
  if (v["capacity"]) DEVMGR_RETURN_IF_ERROR(Quantity(r, v["capacity"], "capacity", &e->capacity));
  if (v["allocatable"]) {
    DEVMGR_RETURN_IF_ERROR(Quantity(r, v["allocatable"], "allocatable", &e->allocatable));
  }
  if (v["healthy"]) DEVMGR_RETURN_IF_ERROR(r.OptSet(v["healthy"], where + ".healthy", &e->healthy));
  if (v["unhealthy"]) {
    DEVMGR_RETURN_IF_ERROR(r.OptSet(v["unhealthy"], where + ".unhealthy", &e->unhealthy));
  }
  if (v["allocated"]) {
    DEVMGR_RETURN_IF_ERROR(r.OptSet(v["allocated"], where + ".allocated", &e->allocated));
  }
  if (v["healthy_count"]) {
    DEVMGR_RETURN_IF_ERROR(r.OptInt(v["healthy_count"], "healthy_count", 0, &e->healthy_count));
  }
  if (v["unhealthy_count"]) {
    DEVMGR_RETURN_IF_ERROR(
        r.OptInt(v["unhealthy_count"], "unhealthy_count", 0, &e->unhealthy_count));
  }
  if (v["registered"])
    DEVMGR_RETURN_IF_ERROR(r.OptBool(v["registered"], "registered", &e->registered));
  if (v["connected"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(v["connected"], "connected", &e->connected));
  return absl::OkStatus();
}

absl::Status Parse(const ExpectReader& r, const YAML::Node& n, Expectations* e) {
  if (!n["resources"]) return absl::OkStatus();
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(n["resources"], "expect.resources"));
  for (auto it = n["resources"].begin(); it != n["resources"].end(); ++it) {
    ResourceExpect re;
    DEVMGR_RETURN_IF_ERROR(ParseResource(r, it->first, it->second, &re));
    e->resources.push_back(std::move(re));
  }
  return absl::OkStatus();
}

// A node-status quantity (capacity or allocatable) of the resource.
void CheckQuantity(const ResourceExpect& r, const std::optional<QuantityExpect>& want,
                   const std::map<std::string, int64_t>& m, const std::string& what,
                   std::vector<Failure>* out) {
  if (!want) return;
  auto it = m.find(r.resource);
  const std::string got = it == m.end() ? "absent (not on the node)" : IntString(it->second);
  const std::string exp = want->absent ? "absent" : IntString(want->value);
  if (want->absent ? it != m.end() : (it == m.end() || it->second != want->value)) {
    Fail(out, r.loc, fmt::format("resources['{}'].{}", r.resource, what), exp, got);
  }
}

void CheckResource(const ResourceExpect& r, const Observed& o, std::vector<Failure>* out) {
  const std::string w = fmt::format("resources['{}']", r.resource);
  const manager::ResourceStatus* rs = nullptr;
  for (const auto& s : o.resources) {
    if (s.resource_name == r.resource) rs = &s;
  }
  CheckQuantity(r, r.capacity, o.node.capacity, "capacity", out);
  CheckQuantity(r, r.allocatable, o.node.allocatable, "allocatable", out);
  if (r.registered && (rs != nullptr) != *r.registered) {
    Fail(out, r.loc, w + ".registered", BoolString(*r.registered), BoolString(rs != nullptr));
  }
  const bool connected =
      rs != nullptr && rs->has_endpoint && !rs->stopped && !rs->endpoint_socket.empty();
  if (r.connected && connected != *r.connected) {
    Fail(out, r.loc, w + ".connected", BoolString(*r.connected), BoolString(connected));
  }
  static const std::vector<std::string> kNone;
  const auto& healthy = rs ? rs->healthy : kNone;
  const auto& unhealthy = rs ? rs->unhealthy : kNone;
  // A healthy set exists when the manager reports an allocatable count.
  using Ids = std::optional<std::vector<std::string>>;
  if (r.healthy) {
    CheckSet(*r.healthy, r.loc, w + ".healthy",
             rs != nullptr && rs->allocatable ? Ids(rs->healthy) : Ids(), o.captures, out);
  }
  if (r.unhealthy) {
    CheckSet(*r.unhealthy, r.loc, w + ".unhealthy", rs ? Ids(rs->unhealthy) : Ids(), o.captures,
             out);
  }
  if (r.allocated) {
    CheckSet(*r.allocated, r.loc, w + ".allocated",
             rs != nullptr && !rs->allocated.empty() ? Ids(rs->allocated) : Ids(), o.captures, out);
  }
  if (r.healthy_count && static_cast<int64_t>(healthy.size()) != *r.healthy_count) {
    Fail(out, r.loc, w + ".healthy_count", IntString(*r.healthy_count),
         fmt::format("{} {}", healthy.size(), ListString(healthy)));
  }
  if (r.unhealthy_count && static_cast<int64_t>(unhealthy.size()) != *r.unhealthy_count) {
    Fail(out, r.loc, w + ".unhealthy_count", IntString(*r.unhealthy_count),
         fmt::format("{} {}", unhealthy.size(), ListString(unhealthy)));
  }
}

void Check(const Expectations& e, const Observed& o, std::vector<Failure>* out) {
  for (const ResourceExpect& r : e.resources) CheckResource(r, o, out);
}

}  // namespace

const ExpectKind& NodeExpectKind() {
  static const ExpectKind kKind = {
      .name = "resources",
      .expect_keys = {"resources"},
      .parse = Parse,
      .check = Check,
  };
  return kKind;
}

}  // namespace devmgr::scenario
