// `expect.claims`: ResourceClaims as the API has them (allocated, reserved
// for which pods, the allocated devices) and as the node's DRA manager
// holds them (in its claim-info cache, prepared since the node started).
// A claim is named by `name` (namespace/name, or a name in "default") or by
// `pod` and `claim`, the pod's spec.resourceClaims entry: the claim it names
// (resourceClaimName), or the one made from its template for the pod.
#include <algorithm>
#include <string>
#include <vector>

#include "common/status_util.h"
#include "dra/pod_claims.h"
#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

const Keys kClaimKeys = {"name",         "pod",    "claim",    "exists", "allocated",
                         "reserved_for", "cached", "prepared", "devices"};

absl::Status ParseClaim(const ExpectReader& r, const YAML::Node& n, DraClaimExpect* c) {
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(n, "a claim expectation"));
  DEVMGR_RETURN_IF_ERROR(r.CheckKeys(n, kClaimKeys, "a claim expectation"));
  c->loc = r.Loc(n);
  if (n["name"] && (n["pod"] || n["claim"])) {
    return r.Error(n, "name a claim by name, or by pod and claim, not both");
  }
  if (n["name"]) {
    DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(n["name"], "name", &c->name));
  } else if (n["pod"] && n["claim"]) {
    DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(n["pod"], "pod", &c->pod));
    DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(n["claim"], "claim", &c->claim));
  } else {
    return r.Error(n, "a claim expectation needs name, or pod and claim");
  }
  if (n["exists"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(n["exists"], "exists", &c->exists));
  if (n["allocated"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(n["allocated"], "allocated", &c->allocated));
  if (n["reserved_for"]) {
    DEVMGR_RETURN_IF_ERROR(r.OptStringList(n["reserved_for"], "reserved_for", &c->reserved_for));
  }
  if (n["cached"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(n["cached"], "cached", &c->cached));
  if (n["prepared"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(n["prepared"], "prepared", &c->prepared));
  if (n["devices"]) DEVMGR_RETURN_IF_ERROR(r.OptSet(n["devices"], "devices", &c->devices));
  return absl::OkStatus();
}

absl::Status Parse(const ExpectReader& r, const YAML::Node& expect, Expectations* e) {
  if (!expect["claims"]) return absl::OkStatus();
  const YAML::Node n = expect["claims"];
  DEVMGR_RETURN_IF_ERROR(r.ExpectSeq(n, "expect.claims"));
  for (const YAML::Node& item : n) {
    DraClaimExpect c;
    DEVMGR_RETURN_IF_ERROR(ParseClaim(r, item, &c));
    e->claims.push_back(std::move(c));
  }
  return absl::OkStatus();
}

std::string Str(const nlohmann::json& j, const char* a, const char* b) {
  if (!j.contains(a) || !j[a].is_object() || !j[a].contains(b) || !j[a][b].is_string()) return "";
  return j[a][b].get<std::string>();
}

const nlohmann::json* FindByName(const Observed& o, const std::string& ns,
                                 const std::string& name) {
  for (const nlohmann::json& c : o.dra_claims) {
    if (Str(c, "metadata", "namespace") == ns && Str(c, "metadata", "name") == name) return &c;
  }
  return nullptr;
}

// The claim made from a template for the pod's entry `entry`: owned by the
// pod, annotated with the entry's name.
const nlohmann::json* FindGenerated(const Observed& o, const std::string& pod_uid,
                                    const std::string& entry) {
  for (const nlohmann::json& c : o.dra_claims) {
    const nlohmann::json& md = c.value("metadata", nlohmann::json::object());
    const nlohmann::json ann = md.value("annotations", nlohmann::json::object());
    if (!ann.is_object() || ann.value(dra::kPodClaimNameAnnotation, "") != entry) continue;
    for (const nlohmann::json& ref : md.value("ownerReferences", nlohmann::json::array())) {
      if (ref.is_object() && ref.value("uid", "") == pod_uid) return &c;
    }
  }
  return nullptr;
}

// The claim `c` names; `where` describes it. Null when there is none
// (`why` says so when the reference itself is wrong).
const nlohmann::json* FindClaim(const DraClaimExpect& c, const Observed& o, std::string* why) {
  if (!c.name.empty()) {
    const size_t slash = c.name.find('/');
    return slash == std::string::npos
               ? FindByName(o, "default", c.name)
               : FindByName(o, c.name.substr(0, slash), c.name.substr(slash + 1));
  }
  const node::PodRecord* pod = FindPod(o.pods, c.pod);
  if (pod == nullptr) {
    *why = fmt::format("no pod '{}'", c.pod);
    return nullptr;
  }
  const nlohmann::json manifest = nlohmann::json::parse(pod->pod.manifest_json, nullptr, false);
  absl::StatusOr<dra::PodClaims> claims = dra::ParsePodClaims(manifest);
  if (claims.ok()) {
    for (const dra::PodResourceClaim& e : claims->resource_claims) {
      if (e.name != c.claim) continue;
      if (!e.resource_claim_name.empty()) {
        return FindByName(o, pod->pod.namespace_, e.resource_claim_name);
      }
      return FindGenerated(o, pod->pod.uid, c.claim);
    }
  }
  *why = fmt::format("pod '{}' has no spec.resourceClaims entry '{}'", c.pod, c.claim);
  return nullptr;
}

std::string Describe(const DraClaimExpect& c) {
  return c.name.empty() ? fmt::format("claims[{}/{}]", c.pod, c.claim)
                        : fmt::format("claims['{}']", c.name);
}

// The pods (by name) and UIDs of status.reservedFor.
void ReservedFor(const nlohmann::json& claim, std::vector<std::string>* names,
                 std::vector<std::string>* uids) {
  const nlohmann::json status = claim.value("status", nlohmann::json::object());
  for (const nlohmann::json& r : status.value("reservedFor", nlohmann::json::array())) {
    if (!r.is_object()) continue;
    names->push_back(r.value("name", ""));
    uids->push_back(r.value("uid", ""));
  }
}

std::vector<std::string> AllocatedDevices(const nlohmann::json& claim) {
  std::vector<std::string> out;
  const nlohmann::json status = claim.value("status", nlohmann::json::object());
  const nlohmann::json alloc = status.value("allocation", nlohmann::json::object());
  const nlohmann::json devices = alloc.is_object()
                                     ? alloc.value("devices", nlohmann::json::object())
                                     : nlohmann::json::object();
  for (const nlohmann::json& r : devices.value("results", nlohmann::json::array())) {
    if (r.is_object()) out.push_back(r.value("device", ""));
  }
  return out;
}

void CheckCache(const DraClaimExpect& c, const nlohmann::json& claim, const Observed& o,
                const std::string& w, std::vector<Failure>* out) {
  auto it = o.dra_claim_infos.find(Str(claim, "metadata", "uid"));
  const bool cached = it != o.dra_claim_infos.end();
  if (c.cached && cached != *c.cached) {
    Fail(out, c.loc, w + ".cached", BoolString(*c.cached), BoolString(cached));
  }
  if (c.prepared) {
    const bool prepared = cached && it->second.prepared;
    if (prepared != *c.prepared) {
      Fail(out, c.loc, w + ".prepared", BoolString(*c.prepared),
           cached ? BoolString(prepared) : "false (not in the DRA manager's cache)");
    }
  }
}

void CheckClaim(const DraClaimExpect& c, const Observed& o, std::vector<Failure>* out) {
  const std::string w = Describe(c);
  std::string why;
  const nlohmann::json* claim = FindClaim(c, o, &why);
  if (!why.empty()) {
    Fail(out, c.loc, w, "a claim", why);
    return;
  }
  const bool exists = claim != nullptr;
  if (c.exists && exists != *c.exists) {
    Fail(out, c.loc, w + ".exists", BoolString(*c.exists), BoolString(exists));
    return;
  }
  if (!exists) {
    if (c.allocated || c.reserved_for || c.cached || c.prepared || c.devices) {
      Fail(out, c.loc, w, "a ResourceClaim in the API", "none");
    }
    return;
  }
  const std::vector<std::string> devices = AllocatedDevices(*claim);
  const nlohmann::json status = claim->value("status", nlohmann::json::object());
  const bool allocated = status.contains("allocation") && status["allocation"].is_object();
  if (c.allocated && allocated != *c.allocated) {
    Fail(out, c.loc, w + ".allocated", BoolString(*c.allocated), BoolString(allocated));
  }
  if (c.reserved_for) {
    std::vector<std::string> names, uids, want;
    ReservedFor(*claim, &names, &uids);
    for (const std::string& ref : *c.reserved_for) {
      const node::PodRecord* p = FindPod(o.pods, ref);
      want.push_back(p != nullptr ? p->pod.uid : ref);
    }
    std::sort(uids.begin(), uids.end());
    std::sort(want.begin(), want.end());
    if (uids != want) {
      Fail(out, c.loc, w + ".reserved_for", ListString(*c.reserved_for), ListString(names));
    }
  }
  if (c.devices) CheckSet(*c.devices, c.loc, w + ".devices", devices, o.captures, out);
  CheckCache(c, *claim, o, w, out);
}

void Check(const Expectations& e, const Observed& o, std::vector<Failure>* out) {
  for (const DraClaimExpect& c : e.claims) CheckClaim(c, o, out);
}

}  // namespace

const ExpectKind& DraClaimsExpectKind() {
  static const ExpectKind kKind = {
      .name = "claims",
      .expect_keys = {"claims"},
      .parse = Parse,
      .check = Check,
  };
  return kKind;
}

}  // namespace devmgr::scenario
