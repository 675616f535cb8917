#include "node/dra_pods.h"

#include <set>
#include <utility>

#include "absl/time/time.h"
#include "common/logging.h"
#include "dra/allocator.h"
#include "dra/pod_claims.h"

namespace devmgr::node {
namespace {

// How often an allocation or release that met a concurrent change (a
// driver's or another pod's write: Aborted) is tried again.
constexpr int kConflictAttempts = 5;

// The manifest as the API has it, with the UID the node gave the pod (a
// static pod's differs from what its manifest names), or null when the pod
// has no spec.resourceClaims.
nlohmann::json ManifestWithClaims(const pod::Pod& pod) {
  if (pod.manifest_json.empty()) return nullptr;
  nlohmann::json manifest = nlohmann::json::parse(pod.manifest_json, nullptr, false);
  if (!manifest.is_object()) return nullptr;
  const nlohmann::json* spec = manifest.contains("spec") ? &manifest["spec"] : nullptr;
  if (spec == nullptr || !spec->is_object() || !spec->contains("resourceClaims")) return nullptr;
  const nlohmann::json& claims = (*spec)["resourceClaims"];
  if (claims.is_null() || (claims.is_array() && claims.empty())) return nullptr;
  manifest["metadata"]["uid"] = pod.uid;
  manifest["metadata"]["name"] = pod.name;
  manifest["metadata"]["namespace"] = pod.namespace_;
  return manifest;
}

topology::AdmitResult Rejected(const char* reason, std::string message) {
  topology::AdmitResult r;
  r.admitted = false;
  r.reason = reason;
  r.message = std::move(message);
  return r;
}

}  // namespace

topology::AdmitResult DraPods::Prepare(const pod::Pod& pod) {
  const absl::Time start = absl::Now();
  nlohmann::json manifest = ManifestWithClaims(pod);
  if (manifest.is_null()) {
    Observe("PrepareResources", absl::OkStatus(), start);
    return {};
  }
  absl::MutexLock op(&op_mu_);
  {
    // Known before anything is created for it, so that a deletion finds the
    // pod to release (claims made from templates) and unprepare.
    absl::MutexLock l(&mu_);
    pods_.emplace(pod.uid, manifest);
  }
  // The resource claim controller and the scheduler.
  absl::StatusOr<dra::PodClaimResolution> resolution = dra::ResolvePodClaims(*store_, manifest);
  if (!resolution.ok()) {
    return Rejected(kDraSchedulingFailed, std::string(resolution.status().message()));
  }
  absl::Status allocated = dra::AllocateAndReserve(*store_, node_name_, *resolution);
  for (int i = 1; i < kConflictAttempts && allocated.code() == absl::StatusCode::kAborted; ++i) {
    resolution = dra::ResolvePodClaims(*store_, manifest);
    if (!resolution.ok()) {
      return Rejected(kDraSchedulingFailed, std::string(resolution.status().message()));
    }
    allocated = dra::AllocateAndReserve(*store_, node_name_, *resolution);
  }
  if (!allocated.ok()) return Rejected(kDraSchedulingFailed, std::string(allocated.message()));
  manifest = dra::WithResourceClaimStatuses(std::move(manifest), *resolution);
  {
    absl::MutexLock l(&mu_);
    pods_[pod.uid] = manifest;
  }
  // The kubelet's pod sync: PrepareDynamicResources before the containers.
  std::vector<nlohmann::json> claims;
  for (const dra::ResolvedClaim& c : resolution->claims) claims.push_back(c.claim);
  const absl::Time prepare_start = absl::Now();
  absl::Status prepared = manager_->PrepareResources(manifest, claims);
  Observe("PrepareResources", prepared, prepare_start);
  if (absl::Status s = std::move(prepared); !s.ok()) {
    DM_ERROR(std::string(s.message()), "Failed to prepare dynamic resources",
             {"pod", pod.namespace_ + "/" + pod.name});
    return Rejected(kDraPrepareFailed,
                    "Failed to prepare dynamic resources: " + std::string(s.message()));
  }
  return {};
}

void DraPods::Observe(const std::string& operation, const absl::Status& result,
                      absl::Time start) const {
  if (on_operation_) on_operation_(operation, !result.ok(), absl::Now() - start);
}

absl::Status DraPods::Unprepare(const std::string& pod_uid, bool observe) {
  const absl::Time start = absl::Now();
  absl::MutexLock op(&op_mu_);
  nlohmann::json manifest;
  {
    absl::MutexLock l(&mu_);
    auto it = pods_.find(pod_uid);
    if (it == pods_.end()) {
      if (observe) Observe("UnprepareResources", absl::OkStatus(), start);
      return absl::OkStatus();
    }
    manifest = it->second;
  }
  absl::Status unprepared = manager_->UnprepareResources(manifest);
  if (observe) Observe("UnprepareResources", unprepared, start);
  if (absl::Status s = std::move(unprepared); !s.ok()) {
    DM_ERROR(std::string(s.message()), "Failed to unprepare dynamic resources",
             {"podUID", pod_uid});
    return s;
  }
  ReleaseClaims(pod_uid, manifest);
  absl::MutexLock l(&mu_);
  pods_.erase(pod_uid);
  return absl::OkStatus();
}

// The pod leaves the API: the controller releases its claims.
void DraPods::ReleaseClaims(const std::string& pod_uid, const nlohmann::json& manifest) {
  absl::Status released = dra::ReleasePodClaims(*store_, manifest);
  for (int i = 1; i < kConflictAttempts && released.code() == absl::StatusCode::kAborted; ++i) {
    released = dra::ReleasePodClaims(*store_, manifest);
  }
  if (!released.ok()) {
    DM_ERROR(std::string(released.message()), "Failed to release the pod's ResourceClaims",
             {"podUID", pod_uid});
  }
}

absl::Status DraPods::Release(const std::string& pod_uid) {
  absl::MutexLock op(&op_mu_);
  nlohmann::json manifest;
  {
    absl::MutexLock l(&mu_);
    auto it = pods_.find(pod_uid);
    if (it == pods_.end()) return absl::OkStatus();
    manifest = std::move(it->second);
    pods_.erase(it);
  }
  ReleaseClaims(pod_uid, manifest);
  return absl::OkStatus();
}

std::vector<std::string> DraPods::ReconcileOrphans(const std::vector<std::string>& active) {
  absl::MutexLock op(&op_mu_);
  std::set<std::string> skip(active.begin(), active.end());
  {
    absl::MutexLock l(&mu_);
    for (const auto& [uid, manifest] : pods_) skip.insert(uid);
  }
  return manager_->ReconcileInactive(skip);
}

std::vector<std::string> DraPods::ContainerCdiIds(const std::string& pod_uid,
                                                  const std::string& container) const {
  nlohmann::json manifest;
  {
    absl::MutexLock l(&mu_);
    auto it = pods_.find(pod_uid);
    if (it == pods_.end()) return {};
    manifest = it->second;
  }
  absl::StatusOr<std::vector<std::string>> ids = manager_->ContainerCdiIds(manifest, container);
  return ids.ok() ? *std::move(ids) : std::vector<std::string>{};
}

absl::StatusOr<std::vector<dra::ClaimInfoState>> DraPods::ContainerClaimInfos(
    const std::string& pod_uid, const std::string& container) const {
  nlohmann::json manifest;
  {
    absl::MutexLock l(&mu_);
    auto it = pods_.find(pod_uid);
    if (it == pods_.end()) return std::vector<dra::ClaimInfoState>{};
    manifest = it->second;
  }
  return manager_->ContainerClaimInfos(manifest, container);
}

std::vector<std::string> DraPods::PodUids() const {
  absl::MutexLock l(&mu_);
  std::vector<std::string> out;
  for (const auto& [uid, manifest] : pods_) out.push_back(uid);
  return out;
}

std::optional<nlohmann::json> DraPods::PodManifest(const std::string& pod_uid) const {
  absl::MutexLock l(&mu_);
  auto it = pods_.find(pod_uid);
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

namespace {

// The status file's dra.health: per driver, its devices' stored health.
nlohmann::json HealthJson(const dra::HealthInfoCache& health) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [driver, devices] : health.Snapshot()) {
    for (const auto& [key, d] : devices) {
      nlohmann::json j = {{"driver", driver},
                          {"pool", d.pool_name},
                          {"device", d.device_name},
                          {"health", std::string(dra::HealthName(d.health))},
                          {"lastUpdated", absl::FormatTime(absl::RFC3339_full, d.last_updated,
                                                           absl::UTCTimeZone())},
                          {"timeoutSeconds", absl::ToInt64Seconds(d.timeout)}};
      if (!d.message.empty()) j["message"] = d.message;
      out.push_back(std::move(j));
    }
  }
  return out;
}

}  // namespace

nlohmann::json DraStatusJson(const dra::DraPluginHandler& handler, const dra::Manager& manager,
                             const dra::HealthInfoCache* health) {
  nlohmann::json drivers = nlohmann::json::array();
  for (const std::string& name : handler.Drivers()) {
    drivers.push_back({{"name", name}, {"endpoints", handler.Endpoints(name)}});
  }
  nlohmann::json claims = nlohmann::json::array();
  for (const auto& [uid, info] : manager.ClaimInfos()) {
    nlohmann::json devices = nlohmann::json::array();
    for (const auto& [driver, state] :
         info.state.driver_state.value_or(std::map<std::string, dra::DriverState>{})) {
      for (const dra::Device& d : state.devices.value_or(std::vector<dra::Device>{})) {
        devices.push_back(
            {{"driver", driver},
             {"pool", d.pool_name},
             {"device", d.device_name},
             {"requestNames", d.request_names.value_or(std::vector<std::string>{})},
             {"cdiDeviceIDs", d.cdi_device_ids.value_or(std::vector<std::string>{})}});
      }
    }
    const std::set<std::string> pods = info.state.pod_uids.value_or(std::set<std::string>{});
    claims.push_back({{"uid", uid},
                      {"name", info.state.claim_name},
                      {"namespace", info.state.namespace_},
                      {"podUIDs", std::vector<std::string>(pods.begin(), pods.end())},
                      {"prepared", info.prepared},
                      {"devices", std::move(devices)}});
  }
  nlohmann::json out = {{"drivers", std::move(drivers)}, {"claims", std::move(claims)}};
  if (health != nullptr) out["health"] = HealthJson(*health);
  return out;
}

}  // namespace devmgr::node
