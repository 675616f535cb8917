#include "dra/pod_claims.h"

#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "apiserver/resource_type.h"
#include "apiserver/validation.h"
#include "common/go_format.h"
#include "common/status_util.h"
#include "dra/json_access.h"
#include "pod/uid.h"

namespace devmgr::dra {
namespace {

using nlohmann::json;

absl::Status PodError(const PodRef& pod, const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("pod ", pod.String(), ": ", field, ": ", what));
}

PodRef ReadPodRef(const json& pod) {
  const json& meta = Member(pod, "metadata");
  PodRef ref;
  ref.name = StringField(meta, "name");
  ref.namespace_ = StringField(meta, "namespace");
  if (ref.namespace_.empty()) ref.namespace_ = "default";
  ref.uid = StringField(meta, "uid");
  if (ref.uid.empty()) ref.uid = pod::DeterministicPodUid(ref.namespace_, ref.name);
  return ref;
}

absl::Status ReadResourceClaims(const json& spec, PodClaims* out) {
  const json& list = Member(spec, "resourceClaims");
  if (list.is_null()) return absl::OkStatus();
  if (!list.is_array()) return PodError(out->pod, "spec.resourceClaims", "must be a list");
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string field = absl::StrCat("spec.resourceClaims[", i, "]");
    PodResourceClaim c;
    c.name = StringField(list[i], "name");
    c.resource_claim_name = StringField(list[i], "resourceClaimName");
    c.resource_claim_template_name = StringField(list[i], "resourceClaimTemplateName");
    if (c.name.empty()) return PodError(out->pod, field + ".name", "Required value");
    if (std::vector<std::string> errs = apiserver::IsDNS1123Label(c.name); !errs.empty()) {
      return PodError(out->pod, field + ".name",
                      absl::StrCat("Invalid value: ", GoQuote(c.name), ": ", errs.front()));
    }
    if (!names.insert(c.name).second) {
      return PodError(out->pod, field + ".name", "Duplicate value: " + GoQuote(c.name));
    }
    if (c.resource_claim_name.empty() == c.resource_claim_template_name.empty()) {
      return PodError(out->pod, field,
                      "exactly one of resourceClaimName and resourceClaimTemplateName must be set");
    }
    out->resource_claims.push_back(std::move(c));
  }
  return absl::OkStatus();
}

absl::Status ReadContainerClaims(const json& spec, const char* key, PodClaims* out) {
  const json& containers = Member(spec, key);
  if (!containers.is_array()) return absl::OkStatus();
  std::vector<std::string> known;
  for (const PodResourceClaim& c : out->resource_claims) known.push_back(GoQuote(c.name));
  for (size_t i = 0; i < containers.size(); ++i) {
    const json& claims = Member(Member(containers[i], "resources"), "claims");
    if (claims.is_null()) continue;
    const std::string base = absl::StrCat("spec.", key, "[", i, "].resources.claims");
    if (!claims.is_array()) return PodError(out->pod, base, "must be a list");
    for (size_t j = 0; j < claims.size(); ++j) {
      ContainerClaim cc;
      cc.field = absl::StrCat(base, "[", j, "]");
      cc.container_name = StringField(containers[i], "name");
      cc.init_container = std::string(key) == "initContainers";
      cc.name = StringField(claims[j], "name");
      cc.request = StringField(claims[j], "request");
      bool found = false;
      for (const PodResourceClaim& c : out->resource_claims) found |= c.name == cc.name;
      if (!found) {
        return PodError(
            out->pod, cc.field + ".name",
            absl::StrCat(GoQuote(cc.name), " is not the name of an entry of spec.resourceClaims (",
                         known.empty() ? "none" : absl::StrJoin(known, ", "), ")"));
      }
      out->container_claims.push_back(std::move(cc));
    }
  }
  return absl::OkStatus();
}

void ReadClaimStatuses(const json& pod, PodClaims* out) {
  const json& statuses = Member(Member(pod, "status"), "resourceClaimStatuses");
  if (!statuses.is_array()) return;
  for (const json& s : statuses) {
    out->claim_statuses[StringField(s, "name")] = StringField(s, "resourceClaimName");
  }
}

// generateName for a template's claim, as the resource claim controller
// makes it (k8s.io/kubernetes v1.34.4-v1.37.2,
// pkg/controller/resourceclaim/controller.go, handleClaim): `<pod>-<claim>-`
// while that is at most 57 bytes (a hyphen and the 5 random characters fit
// in 63); longer, each name keeps the share `len * 57 / len(whole)` of its
// bytes (integer division, the whole's length taken before the cut) and the
// two are joined with one hyphen, without a trailing one. The result is at
// most 57 bytes, so the name generator's own cut at 58 never applies.
std::string GenerateNameBase(const std::string& pod_name, const std::string& claim_name) {
  constexpr size_t kMaxBaseLen = 57;
  const std::string whole = pod_name + "-" + claim_name + "-";
  if (whole.size() <= kMaxBaseLen) return whole;
  return pod_name.substr(0, pod_name.size() * kMaxBaseLen / whole.size()) + "-" +
         claim_name.substr(0, claim_name.size() * kMaxBaseLen / whole.size());
}

json ClaimFromTemplate(const json& tmpl, const PodRef& pod, const std::string& pod_claim_name) {
  const json& spec = Member(tmpl, "spec");
  const json& tmeta = Member(spec, "metadata");
  json meta = json::object();
  meta["generateName"] = GenerateNameBase(pod.name, pod_claim_name);
  if (Member(tmeta, "labels").is_object()) meta["labels"] = tmeta["labels"];
  meta["annotations"] =
      Member(tmeta, "annotations").is_object() ? tmeta["annotations"] : json::object();
  meta["annotations"][kPodClaimNameAnnotation] = pod_claim_name;
  meta["ownerReferences"] = json::array({{{"apiVersion", "v1"},
                                          {"kind", "Pod"},
                                          {"name", pod.name},
                                          {"uid", pod.uid},
                                          {"controller", true},
                                          {"blockOwnerDeletion", true}}});
  json claim = {
      {"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceClaim"}, {"metadata", meta}};
  claim["spec"] = Member(spec, "spec").is_object() ? spec["spec"] : json::object();
  return claim;
}

// A claim the pod already owns for its claim `name` (the controller looks
// for one before creating, in case the pod's status update was lost).
std::optional<json> FindOwnedClaim(const apiserver::Store& store, const PodRef& pod,
                                   const std::string& name) {
  apiserver::ApiOr<apiserver::Store::ListResult> list =
      store.List(apiserver::ResourceClaims(), pod.namespace_, apiserver::FieldSelector());
  if (!list.ok()) return std::nullopt;
  for (const json& claim : list.value.items) {
    if (IsClaimOwnedByPod(claim, pod) &&
        StringField(Member(Member(claim, "metadata"), "annotations"), kPodClaimNameAnnotation) ==
            name) {
      return claim;
    }
  }
  return std::nullopt;
}

absl::StatusOr<json> CreateFromTemplate(apiserver::Store& store, const PodRef& pod,
                                        const PodResourceClaim& c, const std::string& field) {
  apiserver::ApiOr<json> tmpl = store.Get(apiserver::ResourceClaimTemplates(), pod.namespace_,
                                          c.resource_claim_template_name);
  if (!tmpl.ok()) {
    return FromApiError(
        *tmpl.error, absl::StrCat("pod ", pod.String(), ": ", field, ".resourceClaimTemplateName"));
  }
  apiserver::ApiOr<json> created = store.Create(apiserver::ResourceClaims(), pod.namespace_,
                                                ClaimFromTemplate(tmpl.value, pod, c.name));
  if (!created.ok()) {
    return FromApiError(*created.error, absl::StrCat("pod ", pod.String(), ": ", field,
                                                     ": creating the ResourceClaim from template ",
                                                     GoQuote(c.resource_claim_template_name)));
  }
  return created.value;
}

absl::StatusOr<std::optional<ResolvedClaim>> ResolveTemplateClaim(apiserver::Store& store,
                                                                  const PodClaims& pod,
                                                                  const PodResourceClaim& c,
                                                                  const std::string& field) {
  ResolvedClaim r{c.name, json(), true};
  auto recorded = pod.claim_statuses.find(c.name);
  if (recorded != pod.claim_statuses.end() && recorded->second.empty()) return std::nullopt;
  if (recorded != pod.claim_statuses.end()) {
    apiserver::ApiOr<json> got =
        store.Get(apiserver::ResourceClaims(), pod.pod.namespace_, recorded->second);
    if (got.ok() && !IsClaimOwnedByPod(got.value, pod.pod)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "pod ", pod.pod.String(), ": status.resourceClaimStatuses: ResourceClaim ",
          pod.pod.namespace_, "/", recorded->second, " for pod claim ", GoQuote(c.name),
          " was not created for the pod (no controller ownerReference to uid ", pod.pod.uid, ")"));
    }
    if (got.ok()) {
      r.claim = std::move(got.value);
      return r;
    }
    // Recorded but gone (deleted by accident): made again, as the controller does.
  }
  if (std::optional<json> owned = FindOwnedClaim(store, pod.pod, c.name)) {
    r.claim = std::move(*owned);
    return r;
  }
  absl::StatusOr<json> created = CreateFromTemplate(store, pod.pod, c, field);
  if (!created.ok()) return created.status();
  r.claim = std::move(*created);
  return r;
}

absl::StatusOr<ResolvedClaim> ResolveNamedClaim(const apiserver::Store& store, const PodRef& pod,
                                                const PodResourceClaim& c,
                                                const std::string& field) {
  apiserver::ApiOr<json> got =
      store.Get(apiserver::ResourceClaims(), pod.namespace_, c.resource_claim_name);
  if (!got.ok()) {
    return FromApiError(*got.error,
                        absl::StrCat("pod ", pod.String(), ": ", field, ".resourceClaimName"));
  }
  return ResolvedClaim{c.name, std::move(got.value), false};
}

// The request names of a claim: each request's name, and "<request>/<sub>"
// for the subrequests of a firstAvailable request.
std::set<std::string> RequestNames(const json& claim) {
  std::set<std::string> names;
  const json& requests = Member(Member(Member(claim, "spec"), "devices"), "requests");
  if (!requests.is_array()) return names;
  for (const json& r : requests) {
    const std::string name = StringField(r, "name");
    names.insert(name);
    const json& subs = Member(r, "firstAvailable");
    if (!subs.is_array()) continue;
    for (const json& s : subs) names.insert(name + "/" + StringField(s, "name"));
  }
  return names;
}

absl::Status CheckContainerRequests(const PodClaimResolution& r) {
  for (const ContainerClaim& cc : r.pod.container_claims) {
    if (cc.request.empty()) continue;
    for (const ResolvedClaim& claim : r.claims) {
      if (claim.pod_claim_name != cc.name || RequestNames(claim.claim).count(cc.request)) continue;
      const json& meta = Member(claim.claim, "metadata");
      return PodError(r.pod.pod, cc.field + ".request",
                      absl::StrCat("claim ", GoQuote(cc.name), " (ResourceClaim ",
                                   StringField(meta, "namespace"), "/", StringField(meta, "name"),
                                   ") has no request ", GoQuote(cc.request)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PodClaimResolution> ResolvePodClaims(apiserver::Store& store, const json& pod) {
  absl::StatusOr<PodClaims> parsed = ParsePodClaims(pod);
  if (!parsed.ok()) return parsed.status();
  PodClaimResolution r;
  r.pod = std::move(*parsed);
  for (size_t i = 0; i < r.pod.resource_claims.size(); ++i) {
    const PodResourceClaim& c = r.pod.resource_claims[i];
    const std::string field = absl::StrCat("spec.resourceClaims[", i, "]");
    if (!c.resource_claim_name.empty()) {
      absl::StatusOr<ResolvedClaim> named = ResolveNamedClaim(store, r.pod.pod, c, field);
      if (!named.ok()) return named.status();
      r.claims.push_back(std::move(*named));
      continue;
    }
    absl::StatusOr<std::optional<ResolvedClaim>> t = ResolveTemplateClaim(store, r.pod, c, field);
    if (!t.ok()) return t.status();
    json status = {{"name", c.name}};
    if (t->has_value()) {
      status["resourceClaimName"] = (*t)->claim["metadata"]["name"];
      r.claims.push_back(std::move(**t));
    }
    r.resource_claim_statuses.push_back(std::move(status));
  }
  DEVMGR_RETURN_IF_ERROR(CheckContainerRequests(r));
  return r;
}

absl::StatusOr<PodClaims> ParsePodClaims(const json& pod) {
  PodClaims out;
  out.pod = ReadPodRef(pod);
  if (!pod.is_object()) return absl::InvalidArgumentError("pod: the manifest is not an object");
  if (out.pod.name.empty()) {
    return absl::InvalidArgumentError("pod: metadata.name: Required value");
  }
  const json& spec = Member(pod, "spec");
  DEVMGR_RETURN_IF_ERROR(ReadResourceClaims(spec, &out));
  DEVMGR_RETURN_IF_ERROR(ReadContainerClaims(spec, "initContainers", &out));
  DEVMGR_RETURN_IF_ERROR(ReadContainerClaims(spec, "containers", &out));
  ReadClaimStatuses(pod, &out);
  return out;
}

bool IsClaimOwnedByPod(const json& claim, const PodRef& pod) {
  const json& owners = Member(Member(claim, "metadata"), "ownerReferences");
  if (!owners.is_array()) return false;
  for (const json& o : owners) {
    if (StringField(o, "uid") == pod.uid && StringField(o, "kind") == "Pod" &&
        StringField(o, "apiVersion") == "v1" && Member(o, "controller") == true) {
      return true;
    }
  }
  return false;
}

absl::Status FromApiError(const apiserver::ApiError& error, const std::string& context) {
  const std::string message = context.empty() ? error.message : context + ": " + error.message;
  switch (error.code) {
    case 404:
      return absl::NotFoundError(message);
    case 409:
      return error.reason == "AlreadyExists" ? absl::AlreadyExistsError(message)
                                             : absl::AbortedError(message);
    case 400:
    case 422:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

json WithResourceClaimStatuses(json pod, const PodClaimResolution& resolution) {
  if (resolution.resource_claim_statuses.empty()) {
    if (pod.contains("status")) pod["status"].erase("resourceClaimStatuses");
    return pod;
  }
  pod["status"]["resourceClaimStatuses"] = resolution.resource_claim_statuses;
  return pod;
}

}  // namespace devmgr::dra
