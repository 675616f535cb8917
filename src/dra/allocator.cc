#include "dra/allocator.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "apiserver/field_selector.h"
#include "apiserver/resource_type.h"
#include "common/go_format.h"
#include "common/status_util.h"
#include "dra/cel_selector.h"
#include "dra/json_access.h"

namespace devmgr::dra {
namespace {

using nlohmann::json;
using DeviceId = std::tuple<std::string, std::string, std::string>;  // driver, pool, device

std::string Str(const json& object, const char* key) {
  const json& v = Member(object, key);
  return v.is_string() ? v.get<std::string>() : "";
}

std::string ClaimKey(const json& claim) {
  return Str(claim["metadata"], "namespace") + "/" + Str(claim["metadata"], "name");
}

// One device of the node's pools, in (driver, pool, slice name, index) order.
struct Device {
  DeviceId id;
  json object;  // the slice's spec.devices[] entry
};

struct Inventory {
  std::vector<Device> devices;
  std::set<std::pair<std::string, std::string>> incomplete_pools;  // (driver, pool)
};

struct Pool {
  int64_t generation = -1;
  int64_t slice_count = 0;
  std::vector<const json*> slices;
};

Inventory LoadInventory(const apiserver::Store& store, const std::string& node) {
  apiserver::FieldSelector selector;
  apiserver::ApiOr<apiserver::FieldSelector> parsed =
      apiserver::FieldSelector::Parse("spec.nodeName=" + node, apiserver::ResourceSlices());
  if (parsed.ok()) selector = parsed.value;
  apiserver::ApiOr<apiserver::Store::ListResult> list =
      store.List(apiserver::ResourceSlices(), "", selector);
  std::map<std::pair<std::string, std::string>, Pool> pools;
  for (const json& slice : list.value.items) {
    const json& spec = Member(slice, "spec");
    const json& pool_json = Member(spec, "pool");
    Pool& pool = pools[{Str(spec, "driver"), Str(pool_json, "name")}];
    const int64_t generation = Member(pool_json, "generation").is_number_integer()
                                   ? pool_json["generation"].get<int64_t>()
                                   : 0;
    if (generation > pool.generation) {
      pool = Pool{generation, 0, {}};
      const json& count = Member(pool_json, "resourceSliceCount");
      pool.slice_count = count.is_number_integer() ? count.get<int64_t>() : 1;
    }
    if (generation == pool.generation) pool.slices.push_back(&slice);
  }
  Inventory inv;
  for (auto& [key, pool] : pools) {
    if (static_cast<int64_t>(pool.slices.size()) < pool.slice_count) {
      inv.incomplete_pools.insert(key);
    }
    for (const json* slice : pool.slices) {  // List returns slices in name order
      const json& devices = Member(Member(*slice, "spec"), "devices");
      if (!devices.is_array()) continue;
      for (const json& d : devices)
        inv.devices.push_back({{key.first, key.second, Str(d, "name")}, d});
    }
  }
  return inv;
}

// Devices in the allocation results of every claim not in `skip` (claim
// keys); adminAccess results do not hold a device.
std::set<DeviceId> DevicesInUse(const apiserver::Store& store, const std::set<std::string>& skip) {
  std::set<DeviceId> used;
  apiserver::ApiOr<apiserver::Store::ListResult> list =
      store.List(apiserver::ResourceClaims(), "", apiserver::FieldSelector());
  for (const json& claim : list.value.items) {
    if (skip.count(ClaimKey(claim))) continue;
    const json& results =
        Member(Member(Member(Member(claim, "status"), "allocation"), "devices"), "results");
    if (!results.is_array()) continue;
    for (const json& r : results) {
      if (Member(r, "adminAccess") == true) continue;
      used.insert({Str(r, "driver"), Str(r, "pool"), Str(r, "device")});
    }
  }
  return used;
}

// One request of a claim being allocated.
struct Request {
  size_t claim = 0;  // index into the resolution's claims
  std::string name;
  std::string class_name;
  bool all = false;
  int64_t count = 1;
  std::vector<size_t> candidates;  // inventory indices of fitting devices
  json class_config;               // the DeviceClass's spec.config
};

struct Context {
  const std::string& node;
  const PodClaimResolution& resolution;
  const Inventory& inventory;
  std::string Where(const Request& r) const {
    return absl::StrCat("pod ", resolution.pod.pod.String(), ": claim ",
                        ClaimKey(resolution.claims[r.claim].claim), ", request ", GoQuote(r.name));
  }
};

absl::StatusOr<std::vector<CelSelector>> CompileSelectors(const json& selectors,
                                                          const std::string& where) {
  std::vector<CelSelector> out;
  if (selectors.is_null()) return out;
  for (size_t i = 0; i < selectors.size(); ++i) {
    const std::string expr = Str(Member(selectors[i], "cel"), "expression");
    if (expr.empty()) {
      return absl::UnimplementedError(
          absl::StrCat(where, ": selectors[", i, "]: only CEL selectors are supported"));
    }
    absl::StatusOr<CelSelector> s = CelSelector::Compile(expr);
    if (!s.ok())
      return absl::InvalidArgumentError(where + ": " + std::string(s.status().message()));
    out.push_back(std::move(*s));
  }
  return out;
}

// Fills r.candidates: the devices every class selector, then every request
// selector, accepts.
absl::Status FindCandidates(const Context& ctx, const std::vector<CelSelector>& selectors,
                            Request& r) {
  for (size_t i = 0; i < ctx.inventory.devices.size(); ++i) {
    const Device& d = ctx.inventory.devices[i];
    bool fits = true;
    for (const CelSelector& s : selectors) {
      absl::StatusOr<bool> m = s.Matches(std::get<0>(d.id), d.object);
      if (!m.ok()) {
        return absl::FailedPreconditionError(absl::StrCat(
            ctx.Where(r), ": device ", std::get<0>(d.id), "/", std::get<1>(d.id), "/",
            std::get<2>(d.id), ": selector ", GoQuote(s.expression()), ": ", m.status().message()));
      }
      if (!*m) {
        fits = false;
        break;
      }
    }
    if (fits) r.candidates.push_back(i);
  }
  return absl::OkStatus();
}

absl::Status CheckSupported(const json& exactly, const std::string& where) {
  for (const char* key : {"adminAccess", "tolerations", "capacity"}) {
    const json& v = Member(exactly, key);
    if (!v.is_null() && v != false && !(v.is_array() && v.empty())) {
      return absl::UnimplementedError(absl::StrCat(where, ": exactly.", key, " is not supported"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Request> PlanRequest(apiserver::Store& store, const Context& ctx, size_t claim,
                                    const json& request) {
  Request r;
  r.claim = claim;
  r.name = Str(request, "name");
  const std::string where = ctx.Where(r);
  if (!Member(request, "firstAvailable").is_null()) {
    return absl::UnimplementedError(where + ": firstAvailable is not supported");
  }
  const json& exactly = Member(request, "exactly");
  if (!exactly.is_object()) return absl::InvalidArgumentError(where + ": exactly: Required value");
  DEVMGR_RETURN_IF_ERROR(CheckSupported(exactly, where));
  r.class_name = Str(exactly, "deviceClassName");
  if (r.class_name.empty()) {
    return absl::InvalidArgumentError(where + ": exactly.deviceClassName: Required value");
  }
  const std::string mode = Str(exactly, "allocationMode");
  if (mode != "" && mode != "ExactCount" && mode != "All") {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": exactly.allocationMode: Unsupported value: ", GoQuote(mode)));
  }
  r.all = mode == "All";
  if (Member(exactly, "count").is_number_integer()) r.count = exactly["count"].get<int64_t>();
  if (!r.all && r.count < 1) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": exactly.count: must be at least 1"));
  }
  apiserver::ApiOr<json> cls = store.Get(apiserver::DeviceClasses(), "", r.class_name);
  if (!cls.ok()) return FromApiError(*cls.error, where + ": exactly.deviceClassName");
  r.class_config = Member(Member(cls.value, "spec"), "config");
  absl::StatusOr<std::vector<CelSelector>> selectors = CompileSelectors(
      Member(Member(cls.value, "spec"), "selectors"), where + ": DeviceClass " + r.class_name);
  if (!selectors.ok()) return selectors.status();
  absl::StatusOr<std::vector<CelSelector>> own =
      CompileSelectors(Member(exactly, "selectors"), where);
  if (!own.ok()) return own.status();
  selectors->insert(selectors->end(), own->begin(), own->end());
  DEVMGR_RETURN_IF_ERROR(FindCandidates(ctx, *selectors, r));
  return r;
}

bool IsAllocated(const json& claim) {
  return !Member(Member(claim, "status"), "allocation").is_null();
}

absl::StatusOr<std::vector<Request>> PlanRequests(apiserver::Store& store, const Context& ctx) {
  std::vector<Request> plan;
  std::set<std::string> seen;
  for (size_t c = 0; c < ctx.resolution.claims.size(); ++c) {
    const json& claim = ctx.resolution.claims[c].claim;
    if (IsAllocated(claim) || !seen.insert(ClaimKey(claim)).second) continue;
    const json& devices = Member(Member(claim, "spec"), "devices");
    const json& constraints = Member(devices, "constraints");
    if (constraints.is_array() && !constraints.empty()) {
      return absl::UnimplementedError(absl::StrCat("pod ", ctx.resolution.pod.pod.String(),
                                                   ": claim ", ClaimKey(claim),
                                                   ": spec.devices.constraints is not supported"));
    }
    const json& requests = Member(devices, "requests");
    if (!requests.is_array()) continue;
    for (const json& request : requests) {
      absl::StatusOr<Request> r = PlanRequest(store, ctx, c, request);
      if (!r.ok()) return r.status();
      plan.push_back(std::move(*r));
    }
  }
  return plan;
}

// The devices of each request: All requests first (every candidate, each
// free), then a backtracking search over ExactCount requests that takes
// candidates in inventory order.
class Search {
 public:
  Search(const Context& ctx, const std::vector<Request>& plan, const std::set<DeviceId>& in_use)
      : ctx_(ctx), plan_(plan), used_(ctx.inventory.devices.size()), chosen_(plan.size()) {
    for (size_t i = 0; i < used_.size(); ++i) used_[i] = in_use.count(ctx.inventory.devices[i].id);
  }

  // The chosen inventory indices per request, or the reason there are none.
  absl::StatusOr<std::vector<std::vector<size_t>>> Run() {
    for (size_t r = 0; r < plan_.size(); ++r) {
      if (plan_[r].all) DEVMGR_RETURN_IF_ERROR(TakeAll(r));
    }
    if (!Next(0, 0, FirstCount(0))) return Exhausted();
    return chosen_;
  }

 private:
  std::string Unschedulable() const {
    return absl::StrCat("pod ", ctx_.resolution.pod.pod.String(),
                        ": cannot allocate all claims on node ", ctx_.node, ": ");
  }

  absl::Status TakeAll(size_t r) {
    const Request& req = plan_[r];
    const std::string where = ctx_.Where(req).substr(ctx_.Where(req).find(": ") + 2);
    if (!ctx_.inventory.incomplete_pools.empty()) {
      const auto& [driver, pool] = *ctx_.inventory.incomplete_pools.begin();
      return absl::FailedPreconditionError(
          absl::StrCat(Unschedulable(), where, ": asks for all devices, but resource pool ", driver,
                       "/", pool, " is incomplete (being updated)"));
    }
    if (req.candidates.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(Unschedulable(), where, ": asks for all devices, and none matches"));
    }
    for (size_t i : req.candidates) {
      if (used_[i]) {
        const DeviceId& id = ctx_.inventory.devices[i].id;
        return absl::FailedPreconditionError(absl::StrCat(
            Unschedulable(), where, ": asks for all devices, but device ", std::get<0>(id), "/",
            std::get<1>(id), "/", std::get<2>(id), " is already allocated"));
      }
      used_[i] = true;
    }
    chosen_[r] = req.candidates;
    return absl::OkStatus();
  }

  // The first ExactCount request at or after r (plan_.size() when none).
  size_t NextExact(size_t r) const {
    while (r < plan_.size() && plan_[r].all) ++r;
    return r;
  }
  int64_t FirstCount(size_t r) const {
    r = NextExact(r);
    return r < plan_.size() ? plan_[r].count : 0;
  }

  // Picks `left` more devices for request r from its candidates[start...].
  bool Next(size_t r, size_t start, int64_t left) {
    r = NextExact(r);
    if (r == plan_.size()) return true;
    if (left == 0) return Next(r + 1, 0, FirstCount(r + 1));
    if (--budget_ < 0) return false;
    const std::vector<size_t>& cands = plan_[r].candidates;
    for (size_t k = start; k < cands.size(); ++k) {
      const size_t i = cands[k];
      if (used_[i]) continue;
      used_[i] = true;
      chosen_[r].push_back(i);
      if (Next(r, k + 1, left - 1)) return true;
      chosen_[r].pop_back();
      used_[i] = false;
    }
    return false;
  }

  absl::Status Exhausted() const {
    for (const Request& req : plan_) {
      if (req.all) continue;
      int64_t free = 0;
      for (size_t i : req.candidates) free += used_[i] ? 0 : 1;
      if (free >= req.count) continue;
      return absl::FailedPreconditionError(
          absl::StrCat(Unschedulable(), ctx_.Where(req).substr(ctx_.Where(req).find(": ") + 2),
                       ": ", req.count, " device(s) requested, ", free, " of the ",
                       req.candidates.size(), " matching device(s) free"));
    }
    if (budget_ < 0) {
      return absl::ResourceExhaustedError(Unschedulable() +
                                          "the search for a combination of devices gave up");
    }
    return absl::FailedPreconditionError(Unschedulable() +
                                         "the free devices cannot satisfy every request at once");
  }

  const Context& ctx_;
  const std::vector<Request>& plan_;
  std::vector<bool> used_;
  std::vector<std::vector<size_t>> chosen_;
  int64_t budget_ = 1000000;
};

json NodeSelector(const std::string& node) {
  return {{"nodeSelectorTerms",
           json::array({{{"matchFields", json::array({{{"key", "metadata.name"},
                                                       {"operator", "In"},
                                                       {"values", json::array({node})}}})}}})}};
}

// status.allocation for claim c from the chosen devices.
json Allocation(const Context& ctx, size_t c, const std::vector<Request>& plan,
                const std::vector<std::vector<size_t>>& chosen) {
  json results = json::array();
  json config = json::array();
  for (size_t r = 0; r < plan.size(); ++r) {
    if (plan[r].claim != c) continue;
    for (size_t i : chosen[r]) {
      const DeviceId& id = ctx.inventory.devices[i].id;
      results.push_back({{"request", plan[r].name},
                         {"driver", std::get<0>(id)},
                         {"pool", std::get<1>(id)},
                         {"device", std::get<2>(id)}});
    }
    if (!plan[r].class_config.is_array()) continue;
    for (const json& cfg : plan[r].class_config) {
      json entry = {{"source", "FromClass"}, {"requests", json::array({plan[r].name})}};
      if (cfg.contains("opaque")) entry["opaque"] = cfg["opaque"];
      config.push_back(std::move(entry));
    }
  }
  const json& own =
      Member(Member(Member(ctx.resolution.claims[c].claim, "spec"), "devices"), "config");
  if (own.is_array()) {
    for (const json& cfg : own) {
      json entry = {{"source", "FromClaim"}};
      if (cfg.contains("requests")) entry["requests"] = cfg["requests"];
      if (cfg.contains("opaque")) entry["opaque"] = cfg["opaque"];
      config.push_back(std::move(entry));
    }
  }
  json devices = {{"results", results}};
  if (!config.empty()) devices["config"] = config;
  return {{"devices", devices}, {"nodeSelector", NodeSelector(ctx.node)}};
}

// An allocated claim must be usable on the node: its nodeSelector, when it
// has one, must have a term selecting the node by metadata.name.
absl::Status CheckAllocatedForNode(const Context& ctx, const json& claim) {
  const json& selector = Member(Member(Member(claim, "status"), "allocation"), "nodeSelector");
  if (selector.is_null()) return absl::OkStatus();
  const std::string where =
      absl::StrCat("pod ", ctx.resolution.pod.pod.String(), ": claim ", ClaimKey(claim));
  const json& terms = Member(selector, "nodeSelectorTerms");
  for (const json& term : terms.is_array() ? terms : json::array()) {
    const json& exprs = Member(term, "matchExpressions");
    if (exprs.is_array() && !exprs.empty()) {
      return absl::UnimplementedError(
          where + ": status.allocation.nodeSelector selects by node labels, which are not checked");
    }
    const json& fields = Member(term, "matchFields");
    bool matches = fields.is_array() && !fields.empty();
    for (const json& f : fields.is_array() ? fields : json::array()) {
      const json& values = Member(f, "values");
      matches = matches && Str(f, "key") == "metadata.name" && Str(f, "operator") == "In" &&
                values.is_array() &&
                std::find(values.begin(), values.end(), json(ctx.node)) != values.end();
    }
    if (matches) return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "pod ", ctx.resolution.pod.pod.String(), ": cannot allocate all claims on node ", ctx.node,
      ": claim ", ClaimKey(claim),
      " is allocated, and its nodeSelector does not select the node: ", selector.dump()));
}

bool HasFinalizer(const json& claim) {
  const json& f = Member(Member(claim, "metadata"), "finalizers");
  return f.is_array() && std::find(f.begin(), f.end(), json(kDeleteProtectionFinalizer)) != f.end();
}

// Writes `claim` with the finalizer (when `allocation` is set), the
// allocation and the pod in reservedFor; returns the stored object.
absl::StatusOr<json> WriteClaim(apiserver::Store& store, json claim, const json* allocation,
                                const PodRef& pod) {
  const std::string ns = Str(claim["metadata"], "namespace");
  const std::string name = Str(claim["metadata"], "name");
  const std::string where = absl::StrCat("pod ", pod.String(), ": claim ", ns, "/", name);
  if (allocation && !HasFinalizer(claim)) {
    claim["metadata"]["finalizers"].push_back(kDeleteProtectionFinalizer);
    apiserver::ApiOr<json> updated = store.Update(apiserver::ResourceClaims(), ns, name, claim);
    if (!updated.ok()) return FromApiError(*updated.error, where);
    claim = std::move(updated.value);
  }
  if (allocation) claim["status"]["allocation"] = *allocation;
  json& reserved = claim["status"]["reservedFor"];
  if (!reserved.is_array()) reserved = json::array();
  for (const json& r : reserved) {
    if (Str(r, "resource") == "pods" && Str(r, "uid") == pod.uid) return claim;  // already reserved
  }
  if (reserved.size() >= kReservedForMaxSize) {
    return absl::FailedPreconditionError(absl::StrCat(where, ": status.reservedFor already holds ",
                                                      kReservedForMaxSize, " consumers"));
  }
  reserved.push_back({{"resource", "pods"}, {"name", pod.name}, {"uid", pod.uid}});
  apiserver::ApiOr<json> updated =
      store.Update(apiserver::ResourceClaims(), ns, name, claim, /*status_only=*/true);
  if (!updated.ok()) return FromApiError(*updated.error, where);
  return updated.value;
}

// Puts back the finalizers and status `original` had (unconditionally).
void Restore(apiserver::Store& store, const json& original) {
  const std::string ns = Str(original["metadata"], "namespace");
  const std::string name = Str(original["metadata"], "name");
  apiserver::ApiOr<json> current = store.Get(apiserver::ResourceClaims(), ns, name);
  if (!current.ok()) return;
  json object = current.value;
  object["metadata"].erase("resourceVersion");
  object["metadata"]["finalizers"] = Member(original["metadata"], "finalizers");
  if (object["metadata"]["finalizers"].is_null()) object["metadata"].erase("finalizers");
  apiserver::ApiOr<json> unused = store.Update(apiserver::ResourceClaims(), ns, name, object);
  object["status"] = Member(original, "status");
  if (object["status"].is_null()) object.erase("status");
  unused = store.Update(apiserver::ResourceClaims(), ns, name, object, /*status_only=*/true);
}

// Writes every claim of the resolution: allocation where planned, then the
// reservation. On failure the claims written so far are restored.
absl::Status WriteClaims(apiserver::Store& store, const Context& ctx,
                         const std::vector<Request>& plan,
                         const std::vector<std::vector<size_t>>& chosen,
                         PodClaimResolution& resolution) {
  std::vector<json> written;  // the originals
  std::map<std::string, json> stored;
  absl::Status status;
  for (size_t c = 0; c < resolution.claims.size() && status.ok(); ++c) {
    json& claim = resolution.claims[c].claim;
    if (auto it = stored.find(ClaimKey(claim)); it != stored.end()) {
      claim = it->second;  // the same claim twice in the pod
      continue;
    }
    std::optional<json> allocation;
    if (IsAllocated(claim)) {
      status = CheckAllocatedForNode(ctx, claim);
      if (!status.ok()) break;
    } else {
      allocation = Allocation(ctx, c, plan, chosen);
    }
    absl::StatusOr<json> w =
        WriteClaim(store, claim, allocation ? &*allocation : nullptr, resolution.pod.pod);
    if (!w.ok()) {
      status = w.status();
      break;
    }
    written.push_back(claim);
    claim = std::move(*w);
    stored[ClaimKey(claim)] = claim;
  }
  if (!status.ok()) {
    for (const json& original : written) Restore(store, original);
  }
  return status;
}

}  // namespace

absl::Status AllocateAndReserve(apiserver::Store& store, const std::string& node_name,
                                PodClaimResolution& resolution) {
  const Inventory inventory = LoadInventory(store, node_name);
  const Context ctx{node_name, resolution, inventory};
  absl::StatusOr<std::vector<Request>> plan = PlanRequests(store, ctx);
  if (!plan.ok()) return plan.status();
  Search search(ctx, *plan, DevicesInUse(store, {}));
  absl::StatusOr<std::vector<std::vector<size_t>>> chosen = search.Run();
  if (!chosen.ok()) return chosen.status();
  return WriteClaims(store, ctx, *plan, *chosen, resolution);
}

namespace {

// The name of the ResourceClaim behind pod claim `c`, or "" when none.
std::string ClaimNameOf(const apiserver::Store& store, const PodClaims& pod,
                        const PodResourceClaim& c) {
  if (!c.resource_claim_name.empty()) return c.resource_claim_name;
  if (auto it = pod.claim_statuses.find(c.name); it != pod.claim_statuses.end()) return it->second;
  apiserver::ApiOr<apiserver::Store::ListResult> list =
      store.List(apiserver::ResourceClaims(), pod.pod.namespace_, apiserver::FieldSelector());
  for (const json& claim : list.value.items) {
    const json& annotations = Member(claim["metadata"], "annotations");
    if (IsClaimOwnedByPod(claim, pod.pod) && Str(annotations, kPodClaimNameAnnotation) == c.name) {
      return Str(claim["metadata"], "name");
    }
  }
  return "";
}

// Drops the pod from the claim's reservedFor; when nobody is left and the
// claim was allocated here, clears the allocation and the finalizer.
absl::Status Unreserve(apiserver::Store& store, json claim, const PodRef& pod) {
  const std::string ns = Str(claim["metadata"], "namespace");
  const std::string name = Str(claim["metadata"], "name");
  const std::string where = absl::StrCat("pod ", pod.String(), ": claim ", ns, "/", name);
  json& reserved = claim["status"]["reservedFor"];
  json kept = json::array();
  for (const json& r : reserved.is_array() ? reserved : json::array()) {
    if (!(Str(r, "resource") == "pods" && Str(r, "uid") == pod.uid)) kept.push_back(r);
  }
  const bool deallocate = kept.empty() && HasFinalizer(claim);
  if (kept.empty()) {
    claim["status"].erase("reservedFor");
  } else {
    reserved = kept;
  }
  if (deallocate) claim["status"].erase("allocation");
  apiserver::ApiOr<json> updated =
      store.Update(apiserver::ResourceClaims(), ns, name, claim, /*status_only=*/true);
  if (!updated.ok()) return FromApiError(*updated.error, where);
  if (!deallocate) return absl::OkStatus();
  json object = std::move(updated.value);
  json& finalizers = object["metadata"]["finalizers"];
  finalizers.erase(
      std::remove(finalizers.begin(), finalizers.end(), json(kDeleteProtectionFinalizer)),
      finalizers.end());
  if (finalizers.empty()) object["metadata"].erase("finalizers");
  updated = store.Update(apiserver::ResourceClaims(), ns, name, object);
  if (!updated.ok()) return FromApiError(*updated.error, where);
  return absl::OkStatus();
}

}  // namespace

absl::Status ReleasePodClaims(apiserver::Store& store, const json& pod) {
  absl::StatusOr<PodClaims> parsed = ParsePodClaims(pod);
  if (!parsed.ok()) return parsed.status();
  for (const PodResourceClaim& c : parsed->resource_claims) {
    const std::string name = ClaimNameOf(store, *parsed, c);
    if (name.empty()) continue;
    apiserver::ApiOr<json> claim =
        store.Get(apiserver::ResourceClaims(), parsed->pod.namespace_, name);
    if (!claim.ok()) continue;  // gone already
    if (c.resource_claim_name.empty() && IsClaimOwnedByPod(claim.value, parsed->pod)) {
      apiserver::Store::Preconditions pre;
      pre.uid = Str(claim.value["metadata"], "uid");
      apiserver::ApiOr<json> deleted =
          store.Delete(apiserver::ResourceClaims(), parsed->pod.namespace_, name, pre);
      if (!deleted.ok() && deleted.error->code != 404) {
        return FromApiError(*deleted.error,
                            "pod " + parsed->pod.String() + ": deleting claim " + name);
      }
      continue;
    }
    DEVMGR_RETURN_IF_ERROR(Unreserve(store, std::move(claim.value), parsed->pod));
  }
  return absl::OkStatus();
}

}  // namespace devmgr::dra
