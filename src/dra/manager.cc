#include "dra/manager.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_util.h"
#include "dra/checkpoint.h"
#include "dra/json_access.h"

namespace devmgr::dra {

namespace {

using nlohmann::json;

// A claim of the pod as PrepareResources gathers it before the cache is
// touched (the kubelet's validation pass).
struct PlannedClaim {
  ClaimRef ref;
  std::vector<std::string> drivers;  // of status.allocation.devices.results, first-seen order
};

// `s` with `prefix` before its message, same code.
absl::Status Prefixed(const absl::Status& s, const std::string& prefix) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

bool IsReservedForPod(const json& claim, const PodRef& pod) {
  const json& reserved = Member(Member(claim, "status"), "reservedFor");
  if (!reserved.is_array()) return false;
  return std::any_of(reserved.begin(), reserved.end(),
                     [&](const json& r) { return StringField(r, "uid") == pod.uid; });
}

// A claim of the pod: its reference, the drivers of its allocation, and the
// kubelet's checks that it is allocated and reserved for the pod
// (resourceclaim.IsReservedForPod compares the pod UID).
absl::StatusOr<PlannedClaim> ReadClaim(const json& claim, const PodRef& pod) {
  PlannedClaim out;
  const json& meta = Member(claim, "metadata");
  out.ref =
      ClaimRef{StringField(meta, "uid"), StringField(meta, "name"), StringField(meta, "namespace")};
  if (out.ref.namespace_.empty()) out.ref.namespace_ = pod.namespace_;
  if (out.ref.uid.empty() || out.ref.name.empty()) {
    return absl::InvalidArgumentError("ResourceClaim without metadata.name or metadata.uid");
  }
  const json& allocation = Member(Member(claim, "status"), "allocation");
  if (!allocation.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ResourceClaim ", out.ref.name, ": not allocated"));
  }
  if (!IsReservedForPod(claim, pod)) {
    return absl::FailedPreconditionError(absl::StrCat("pod ", pod.name, " (", pod.uid,
                                                      ") is not allowed to use ResourceClaim ",
                                                      out.ref.name, " (", out.ref.uid, ")"));
  }
  const json& results = Member(Member(allocation, "devices"), "results");
  if (results.is_array()) {
    for (const json& r : results) {
      const std::string driver = StringField(r, "driver");
      if (driver.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("ResourceClaim ", out.ref.name, ": allocation result without driver"));
      }
      if (std::find(out.drivers.begin(), out.drivers.end(), driver) == out.drivers.end()) {
        out.drivers.push_back(driver);
      }
    }
  }
  return out;
}

// The error of a driver that has no registered plugin (the kubelet's
// plugin manager GetPlugin, returned unwrapped).
absl::Status NotRegistered(const std::string& driver) {
  return absl::FailedPreconditionError(absl::StrCat("DRA driver ", driver, " is not registered"));
}

// A new cache entry for a claim: the kubelet's newClaimInfoFromClaim gives
// each driver of the allocation an empty DriverState (Devices nil).
ClaimInfo NewClaimInfo(const PlannedClaim& claim) {
  ClaimInfo info;
  info.state.claim_uid = claim.ref.uid;
  info.state.claim_name = claim.ref.name;
  info.state.namespace_ = claim.ref.namespace_;
  info.state.pod_uids.emplace();
  info.state.driver_state.emplace();
  for (const std::string& driver : claim.drivers) (*info.state.driver_state)[driver];
  return info;
}

// The kubelet keys its cache by namespace and name: a cached claim of the
// same name with another UID is refused (manager.go, prepareResources).
absl::Status CheckSameName(const std::map<std::string, ClaimInfo>& cache, const ClaimRef& ref) {
  for (const auto& [uid, info] : cache) {
    if (uid != ref.uid && info.state.claim_name == ref.name &&
        info.state.namespace_ == ref.namespace_) {
      return absl::FailedPreconditionError(
          absl::StrCat("old ResourceClaim with same name ", ref.name, " and different UID ", uid,
                       " still exists (previous pod force-deleted?!)"));
    }
  }
  return absl::OkStatus();
}

// A device of the response as the state stores it: the wire has no nil
// list, and the kubelet's decoded message holds nil for an empty one, which
// json.Marshal writes as null.
Device ToStateDevice(const PreparedDevice& d) {
  Device out;
  out.pool_name = d.pool;
  out.device_name = d.device;
  out.share_id = d.share_id;
  if (!d.request_names.empty()) out.request_names = d.request_names;
  if (!d.cdi_device_ids.empty()) out.cdi_device_ids = d.cdi_device_ids;
  return out;
}

const ClaimRef* FindRef(const std::vector<ClaimRef>& claims, const std::string& uid) {
  for (const ClaimRef& c : claims) {
    if (c.uid == uid) return &c;
  }
  return nullptr;
}

// The ResourceClaim name of a pod claim: resourceClaimName, or the name
// recorded in status.resourceClaimStatuses for a template (the kubelet's
// resourceclaim.Name); nullopt when no claim is needed or none is recorded.
std::optional<std::string> ClaimNameOf(const PodClaims& pod, const PodResourceClaim& c) {
  if (!c.resource_claim_name.empty()) return c.resource_claim_name;
  auto it = pod.claim_statuses.find(c.name);
  if (it == pod.claim_statuses.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

// The cached claim with this name in this namespace (the kubelet's cache is
// keyed by both), or nullptr.
const ClaimInfo* FindByName(const std::map<std::string, ClaimInfo>& cache, const std::string& name,
                            const std::string& namespace_) {
  for (const auto& [uid, info] : cache) {
    if (info.state.claim_name == name && info.state.namespace_ == namespace_) return &info;
  }
  return nullptr;
}

// Walks the pod's claims in spec.resourceClaims order: `check(claim)` first
// (its error ends the walk), then `use(info, entry)` for each entry of
// container `container_name`'s resources.claims that names the claim, with
// the claim's cached info. Pod claims without a claim (template entries with
// none recorded) are skipped. A claim the cache does not hold: Internal
// "<missing_prefix><name>".
template <typename Check, typename Use>
absl::Status ForEachContainerClaim(const std::map<std::string, ClaimInfo>& cache,
                                   const PodClaims& pod, const std::string& container_name,
                                   const char* missing_prefix, Check check, Use use) {
  for (const PodResourceClaim& rc : pod.resource_claims) {
    DEVMGR_RETURN_IF_ERROR(check(rc));
    std::optional<std::string> name = ClaimNameOf(pod, rc);
    if (!name) continue;
    for (const ContainerClaim& cc : pod.container_claims) {
      if (cc.container_name != container_name || cc.name != rc.name) continue;
      const ClaimInfo* info = FindByName(cache, *name, pod.pod.namespace_);
      if (info == nullptr) return absl::InternalError(absl::StrCat(missing_prefix, *name));
      use(*info, cc);
    }
  }
  return absl::OkStatus();
}

// claimInfo.cdiDevicesAsList: devices of every driver whose request names
// include `request` (all when `request` is empty or the device names none).
void AppendCdiIds(const ClaimInfo& info, const std::string& request,
                  std::vector<std::string>& out) {
  if (!info.state.driver_state) return;
  for (const auto& [driver, ds] : *info.state.driver_state) {
    if (!ds.devices) continue;
    for (const Device& d : *ds.devices) {
      const bool match = request.empty() || !d.request_names || d.request_names->empty() ||
                         std::find(d.request_names->begin(), d.request_names->end(), request) !=
                             d.request_names->end();
      if (match && d.cdi_device_ids) {
        out.insert(out.end(), d.cdi_device_ids->begin(), d.cdi_device_ids->end());
      }
    }
  }
}

}  // namespace

Manager::Manager(DriverCalls* drivers, ManagerOptions options)
    : drivers_(drivers),
      options_(std::move(options)),
      layout_(LayoutForMinor(options_.kubelet_minor)),
      store_(options_.state_dir, options_.fsync, options_.filesystem),
      encoder_(layout_) {}

absl::Status Manager::Start() {
  absl::MutexLock op(&op_mu_);
  absl::StatusOr<CheckpointData> data = ReadAndVerify(store_, layout_);
  Cache restored;
  absl::Status status;
  if (absl::IsNotFound(data.status())) {
    // checkpointer.GetOrCreate writes NewCheckpoint(nil) when there is none.
    status = store_.Write(kCheckpointName, EncodeFile(NewCheckpoint(std::nullopt, layout_)));
  } else if (!data.ok()) {
    status = data.status();
  } else if (data->claim_info_state_list) {
    // "prepared" is not part of the state: every restored claim is prepared
    // again when its pod is (profiles.md, "Prepare after a restart").
    for (ClaimInfoState& s : *data->claim_info_state_list) {
      std::string uid = s.claim_uid;
      restored[uid] = ClaimInfo{std::move(s), false};
    }
  }
  absl::MutexLock lock(&mu_);
  cache_ = std::move(restored);
  return status;
}

absl::Status Manager::PrepareResources(const json& pod, const std::vector<json>& claims) {
  absl::MutexLock op(&op_mu_);
  return Prefixed(PrepareLocked(pod, claims), "prepare dynamic resources: ");
}

absl::Status Manager::PrepareLocked(const json& pod, const std::vector<json>& claims) {
  // Validation before the cache is touched: a pod whose driver is missing
  // fails here and leaves nothing to unprepare.
  absl::StatusOr<PodClaims> parsed = ParsePodClaims(pod);
  if (!parsed.ok()) return parsed.status();
  const PodRef& pod_ref = parsed->pod;
  std::vector<PlannedClaim> planned;
  for (const json& c : claims) {
    absl::StatusOr<PlannedClaim> claim = ReadClaim(c, pod_ref);
    if (!claim.ok()) return claim.status();
    for (const std::string& driver : claim->drivers) {
      if (!drivers_->IsRegistered(driver)) return NotRegistered(driver);
    }
    planned.push_back(std::move(*claim));
  }

  // As the kubelet (cm/dra/manager.go prepareResources, v1.34.4 and
  // v1.37.2): each claim is added to the cache, or the pod to its entry, and
  // the checkpoint written, one claim after the other, before any driver is
  // called. So a prepare that fails later (a driver's error, the same name
  // with another UID) leaves those entries, not prepared, in the cache and
  // in dra_manager_state, for the reconcile loop or the next sync.
  Cache next = Snapshot();
  std::map<std::string, std::vector<ClaimRef>> batches;  // by driver
  std::set<std::string> to_prepare;
  for (const PlannedClaim& claim : planned) {
    DEVMGR_RETURN_IF_ERROR(CheckSameName(next, claim.ref));
    auto [it, added] = next.try_emplace(claim.ref.uid, ClaimInfo{});
    if (added) it->second = NewClaimInfo(claim);
    ClaimInfoState& state = it->second.state;
    if (!state.pod_uids) state.pod_uids.emplace();
    state.pod_uids->insert(pod_ref.uid);
    DEVMGR_RETURN_IF_ERROR(Commit(next, "checkpoint ResourceClaim cache: "));  // a copy
    if (it->second.prepared || !to_prepare.insert(claim.ref.uid).second) continue;
    // The cached entry's drivers (after a restart: the checkpoint's).
    const ClaimRef ref{state.claim_uid, state.claim_name, state.namespace_};
    if (!state.driver_state) continue;
    for (const auto& [driver, ds] : *state.driver_state) batches[driver].push_back(ref);
  }
  for (const auto& [driver, refs] : batches) {
    if (absl::Status s = CallPrepare(driver, refs, next); !s.ok()) {
      // The devices of the drivers that answered stay in memory, not in the
      // checkpoint (the kubelet writes it again only when all succeeded).
      Keep(std::move(next));
      return s;
    }
  }
  for (const std::string& uid : to_prepare) next[uid].prepared = true;
  return Commit(std::move(next));
}

absl::Status Manager::CallPrepare(const std::string& driver, const std::vector<ClaimRef>& claims,
                                  Cache& next) const {
  // A restored claim's driver may have gone since the validation pass.
  if (!drivers_->IsRegistered(driver)) return NotRegistered(driver);
  absl::StatusOr<std::map<std::string, PrepareResult>> response = drivers_->Prepare(driver, claims);
  if (!response.ok()) {
    return Prefixed(response.status(), "NodePrepareResources: ");
  }
  // 1.37 resets a driver's devices before adding the answer's; 1.34-1.36
  // append them, so a prepare after a restart doubles the restored devices
  // (profiles.md, "Checkpoint after that second prepare").
  const bool reset = options_.kubelet_minor >= 37;
  for (const auto& [uid, result] : *response) {
    const ClaimRef* ref = FindRef(claims, uid);
    if (ref == nullptr) {
      return absl::InternalError(
          absl::StrCat("NodePrepareResources returned result for unknown claim UID ", uid));
    }
    if (!result.error.empty()) {
      return absl::InternalError(absl::StrCat("NodePrepareResources failed for ResourceClaim ",
                                              ref->name, ": ", result.error));
    }
    DriverState& ds = (*next[uid].state.driver_state)[driver];
    if (reset) ds.devices.reset();
    for (const PreparedDevice& d : result.devices) {
      if (!ds.devices) ds.devices.emplace();
      ds.devices->push_back(ToStateDevice(d));
    }
  }
  if (response->size() < claims.size()) {
    return absl::InternalError(absl::StrCat("NodePrepareResources skipped ",
                                            claims.size() - response->size(), " ResourceClaims"));
  }
  return absl::OkStatus();
}

absl::Status Manager::UnprepareResources(const json& pod) {
  absl::MutexLock op(&op_mu_);
  return Prefixed(UnprepareLocked(pod), "unprepare dynamic resources: ");
}

absl::Status Manager::UnprepareLocked(const json& pod) {
  absl::StatusOr<PodClaims> parsed = ParsePodClaims(pod);
  if (!parsed.ok()) return parsed.status();
  const std::string& pod_uid = parsed->pod.uid;
  // The pod's claims: those of its spec in spec order (the order of the
  // kubelet's batches up to 1.36), then any other cached claim holding the
  // pod (1.37 takes the pod's claims from the cache).
  Cache next = Snapshot();
  std::vector<std::string> uids;
  auto holds_pod = [&](const ClaimInfo& info) {
    return info.state.pod_uids && info.state.pod_uids->count(pod_uid) > 0;
  };
  for (const PodResourceClaim& rc : parsed->resource_claims) {
    std::optional<std::string> name = ClaimNameOf(*parsed, rc);
    for (const auto& [uid, info] : next) {
      if (name && info.state.claim_name == *name &&
          info.state.namespace_ == parsed->pod.namespace_ && holds_pod(info) &&
          std::find(uids.begin(), uids.end(), uid) == uids.end()) {
        uids.push_back(uid);
      }
    }
  }
  for (const auto& [uid, info] : next) {
    if (holds_pod(info) && std::find(uids.begin(), uids.end(), uid) == uids.end()) {
      uids.push_back(uid);
    }
  }

  return UnprepareClaimsLocked(pod_uid, uids, std::move(next));
}

absl::Status Manager::UnprepareClaimsLocked(const std::string& pod_uid,
                                            const std::vector<std::string>& uids, Cache next) {
  // As the kubelet (unprepareResources, v1.34.4 and v1.37.2): a claim other
  // pods still hold loses this pod's reference in memory only; the last
  // holder's claims are unprepared and only then deleted and checkpointed.
  std::map<std::string, std::vector<ClaimRef>> batches;  // by driver
  std::vector<std::string> to_delete;
  for (const std::string& uid : uids) {
    ClaimInfoState& state = next[uid].state;
    if (state.pod_uids->size() > 1) {
      state.pod_uids->erase(pod_uid);
      continue;  // other pods still use it: no call
    }
    to_delete.push_back(uid);
    if (!state.driver_state) continue;
    for (const auto& [driver, ds] : *state.driver_state) {
      batches[driver].push_back(ClaimRef{state.claim_uid, state.claim_name, state.namespace_});
    }
  }
  for (const auto& [driver, refs] : batches) {
    if (absl::Status s = CallUnprepare(driver, refs); !s.ok()) {
      Keep(std::move(next));
      return s;
    }
  }
  for (const std::string& uid : to_delete) next.erase(uid);
  return Commit(std::move(next));
}

std::vector<std::string> Manager::ReconcileInactive(const std::set<std::string>& active) {
  absl::MutexLock op(&op_mu_);
  // Inactive pod UID -> the cached claims that hold it, in claim-UID order
  // (the kubelet walks its cache map: Go map order).
  std::map<std::string, std::vector<std::string>> inactive;
  for (const auto& [uid, info] : Snapshot()) {
    if (!info.state.pod_uids) continue;
    for (const std::string& pod_uid : *info.state.pod_uids) {
      if (active.count(pod_uid) == 0) inactive[pod_uid].push_back(uid);
    }
  }
  std::vector<std::string> done;
  for (const auto& [pod_uid, uids] : inactive) {
    // Each pod against the cache as the previous one left it.
    absl::Status s =
        Prefixed(UnprepareClaimsLocked(pod_uid, uids, Snapshot()), "unprepare dynamic resources: ");
    if (s.ok()) {
      done.push_back(pod_uid);
      continue;
    }
    DM_INFO("Unpreparing pod resources in reconcile loop failed, will retry", {"podUID", pod_uid},
            {"err", std::string(s.message())});
  }
  return done;
}

absl::Status Manager::CallUnprepare(const std::string& driver,
                                    const std::vector<ClaimRef>& claims) const {
  if (!drivers_->IsRegistered(driver)) return NotRegistered(driver);
  absl::StatusOr<std::map<std::string, std::string>> response = drivers_->Unprepare(driver, claims);
  if (!response.ok()) return Prefixed(response.status(), "NodeUnprepareResources: ");
  for (const auto& [uid, error] : *response) {
    const ClaimRef* ref = FindRef(claims, uid);
    if (ref == nullptr) {
      return absl::InternalError(
          absl::StrCat("NodeUnprepareResources returned result for unknown claim UID ", uid));
    }
    if (!error.empty()) {
      return absl::InternalError(
          absl::StrCat("NodeUnprepareResources failed for ResourceClaim ", ref->name, ": ", error));
    }
  }
  if (response->size() < claims.size()) {
    return absl::InternalError(absl::StrCat("NodeUnprepareResources skipped ",
                                            claims.size() - response->size(), " ResourceClaims"));
  }
  return absl::OkStatus();
}

absl::Status Manager::Commit(Cache cache, std::string_view error_prefix) {
  // syncToCheckpoint: every entry, as a list that is never nil (an empty
  // cache is written as [], profiles.md "Empty list after the last
  // unprepare").
  // Only the claims that changed are encoded again (CheckpointEncoder).
  std::vector<const ClaimInfoState*> states;
  states.reserve(cache.size());
  for (const auto& [uid, info] : cache) states.push_back(&info.state);
  const std::string_view bytes = encoder_.Encode(states);
  // The kubelet changes its cache in memory first and then writes it: a
  // failed write leaves the change in memory (and the file as it was).
  Keep(std::move(cache));
  return Prefixed(store_.Write(kCheckpointName, bytes), std::string(error_prefix));
}

void Manager::Keep(Cache cache) {
  absl::MutexLock lock(&mu_);
  cache_ = std::move(cache);
}

Manager::Cache Manager::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return cache_;
}

std::map<std::string, ClaimInfo> Manager::ClaimInfos() const { return Snapshot(); }

absl::StatusOr<std::vector<std::string>> Manager::ContainerCdiIds(
    const json& pod, const std::string& container_name) const {
  absl::StatusOr<PodClaims> parsed = ParsePodClaims(pod);
  if (!parsed.ok()) return parsed.status();
  std::vector<std::string> out;
  absl::MutexLock lock(&mu_);
  DEVMGR_RETURN_IF_ERROR(ForEachContainerClaim(
      cache_, *parsed, container_name,
      "internal error: unable to get claim info for ResourceClaim ",
      [](const PodResourceClaim&) { return absl::OkStatus(); },
      [&](const ClaimInfo& info, const ContainerClaim& cc) {
        AppendCdiIds(info, cc.request, out);
      }));
  return out;
}

absl::StatusOr<std::vector<ClaimInfoState>> Manager::ContainerClaimInfos(
    const json& pod, const std::string& container_name) const {
  absl::StatusOr<PodClaims> parsed = ParsePodClaims(pod);
  if (!parsed.ok()) return parsed.status();
  std::vector<ClaimInfoState> out;
  absl::MutexLock lock(&mu_);
  DEVMGR_RETURN_IF_ERROR(ForEachContainerClaim(
      cache_, *parsed, container_name, "unable to get information for ResourceClaim ",
      // resourceclaim.Name: a template entry the pod's status does not list
      // yet fails the whole container, whether or not the container names it.
      [&](const PodResourceClaim& rc) {
        if (rc.resource_claim_name.empty() && parsed->claim_statuses.count(rc.name) == 0) {
          return absl::FailedPreconditionError(
              absl::StrCat("pod \"", parsed->pod.String(), "\": ResourceClaim not created yet"));
        }
        return absl::OkStatus();
      },
      [&](const ClaimInfo& info, const ContainerClaim&) { out.push_back(info.state); }));
  return out;
}

}  // namespace devmgr::dra
