#include "dra/health_status.h"

#include <algorithm>
#include <set>
#include <utility>

#include "common/logging.h"
#include "dra/pod_claims.h"

namespace devmgr::dra {
namespace {

using manager::ContainerResourceStatus;
using manager::ResourceHealth;
using manager::ResourceHealthStatus;

// The entry named `name` of the container, made (empty) when missing.
ResourceHealthStatus& EntryOf(std::vector<ResourceHealthStatus>& list, const std::string& name) {
  for (ResourceHealthStatus& e : list) {
    if (e.name == name) return e;
  }
  list.push_back(ResourceHealthStatus{name, {}});
  return list.back();
}

std::string ResourceNameOf(const ContainerClaim& cc) {
  return cc.request.empty() ? "claim:" + cc.name : "claim:" + cc.name + "/" + cc.request;
}

// resourceclaim.BaseRequestRef: "request/subrequest" -> "request".
std::string BaseRequest(const std::string& request) { return request.substr(0, request.find('/')); }

struct DeviceRules {
  // 1.36+: only the devices of this request ("" for all), each ID once.
  std::string request;
  bool filter_and_dedupe = false;
  bool messages = false;
};

// The claim's devices as ResourceHealth, drivers by name (the kubelet
// iterates its DriverState map), devices in stored order.
std::vector<ResourceHealth> DevicesOf(const ClaimInfoState& claim, const HealthInfoCache& health,
                                      const DeviceRules& rules) {
  std::vector<ResourceHealth> out;
  std::set<std::string> seen;
  if (!claim.driver_state) return out;
  const std::string base = BaseRequest(rules.request);
  for (const auto& [driver, ds] : *claim.driver_state) {
    if (!ds.devices) continue;
    for (const Device& d : *ds.devices) {
      if (rules.filter_and_dedupe && !rules.request.empty() && d.request_names &&
          !d.request_names->empty() &&
          std::find(d.request_names->begin(), d.request_names->end(), base) ==
              d.request_names->end()) {
        continue;
      }
      const DeviceHealth h = health.Get(driver, d.pool_name, d.device_name);
      ResourceHealth rh;
      rh.health = std::string(HealthName(h.health));
      if (rules.messages && !h.message.empty()) rh.message = h.message;
      if (d.cdi_device_ids && !d.cdi_device_ids->empty()) {
        rh.resource_id = d.cdi_device_ids->front();
      } else {
        rh.resource_id = driver + "/" + d.pool_name + "/" + d.device_name;
      }
      if (rules.filter_and_dedupe && !seen.insert(rh.resource_id).second) continue;
      out.push_back(std::move(rh));
    }
  }
  return out;
}

const ClaimInfo* FindClaim(const std::map<std::string, ClaimInfo>& cache, const std::string& name,
                           const std::string& namespace_) {
  for (const auto& [uid, info] : cache) {
    if (info.state.claim_name == name && info.state.namespace_ == namespace_) return &info;
  }
  return nullptr;
}

// The claim name the container's entry refers to, per release ("" when the
// kubelet finds none and skips the entry).
std::string ActualClaimName(const PodClaims& pod, const ContainerClaim& cc, int minor) {
  auto st = pod.claim_statuses.find(cc.name);
  if (st != pod.claim_statuses.end() && !st->second.empty()) return st->second;
  // 1.35 reads the status only; 1.36 falls back to resourceclaim.Name,
  // which gives a resourceClaimName as is (a template entry without a
  // status entry fails there and is skipped).
  if (minor < 36) return "";
  for (const PodResourceClaim& rc : pod.resource_claims) {
    if (rc.name == cc.name) return rc.resource_claim_name;
  }
  return "";
}

void Finish(ContainerResourceStatus& cs) {
  if (!cs.allocated_resources_status) return;
  std::vector<ResourceHealthStatus>& list = *cs.allocated_resources_status;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [](const ResourceHealthStatus& e) { return e.resources.empty(); }),
             list.end());
  std::sort(
      list.begin(), list.end(),
      [](const ResourceHealthStatus& a, const ResourceHealthStatus& b) { return a.name < b.name; });
  if (list.empty()) cs.allocated_resources_status.reset();
}

// 1.34: GetContainerClaimInfos, then a name match against the claims' own
// names.
void Update134(const nlohmann::json& pod, const PodClaims& parsed, const Manager& manager,
               const HealthInfoCache& health, ContainerResourceStatus& cs) {
  absl::StatusOr<std::vector<ClaimInfoState>> infos = manager.ContainerClaimInfos(pod, cs.name);
  if (!infos.ok()) {
    DM_ERROR(std::string(infos.status().message()), "Failed to get claim infos for container",
             {"pod", parsed.pod.String()}, {"container", cs.name});
    return;
  }
  if (infos->empty()) return;
  if (!cs.allocated_resources_status) cs.allocated_resources_status.emplace();
  for (const ClaimInfoState& info : *infos) {
    const ContainerClaim* match = nullptr;
    for (const ContainerClaim& cc : parsed.container_claims) {
      if (!cc.init_container && cc.container_name == cs.name && cc.name == info.claim_name) {
        match = &cc;
        break;
      }
    }
    if (match == nullptr) {
      DM_VINFO(4, "Could not find matching resource claim in container spec",
               {"pod", parsed.pod.String()}, {"container", cs.name},
               {"claimName", info.claim_name});
      continue;
    }
    EntryOf(*cs.allocated_resources_status, ResourceNameOf(*match)).resources =
        DevicesOf(info, health, DeviceRules{});
  }
}

}  // namespace

void UpdateAllocatedResourcesStatus(const nlohmann::json& pod, const Manager& manager,
                                    const HealthInfoCache& health, const HealthStatusOptions& opts,
                                    std::vector<ContainerResourceStatus>* statuses) {
  absl::StatusOr<PodClaims> parsed = ParsePodClaims(pod);
  if (!parsed.ok()) return;
  std::map<std::string, ClaimInfo> cache;
  if (opts.kubelet_minor >= 35) cache = manager.ClaimInfos();
  for (ContainerResourceStatus& cs : *statuses) {
    std::vector<const ContainerClaim*> claims;
    for (const ContainerClaim& cc : parsed->container_claims) {
      if (!cc.init_container && cc.container_name == cs.name) claims.push_back(&cc);
    }
    if (claims.empty()) continue;
    if (opts.kubelet_minor < 35) {
      Update134(pod, *parsed, manager, health, cs);
      Finish(cs);
      continue;
    }
    for (const ContainerClaim* cc : claims) {
      const std::string name = ActualClaimName(*parsed, *cc, opts.kubelet_minor);
      if (name.empty()) {
        DM_VINFO(4, "Could not find generated name for resource claim",
                 {"pod", parsed->pod.String()}, {"container", cs.name}, {"claimName", cc->name});
        continue;
      }
      const ClaimInfo* info = FindClaim(cache, name, parsed->pod.namespace_);
      if (info == nullptr) {
        DM_VINFO(4, "Could not find claim info for resource claim", {"pod", parsed->pod.String()},
                 {"container", cs.name}, {"claimName", name});
        continue;
      }
      DeviceRules rules;
      if (opts.kubelet_minor >= 36) {
        rules.request = cc->request;
        rules.filter_and_dedupe = true;
        rules.messages = opts.message_gate;
      }
      if (!cs.allocated_resources_status) cs.allocated_resources_status.emplace();
      EntryOf(*cs.allocated_resources_status, ResourceNameOf(*cc)).resources =
          DevicesOf(info->state, health, rules);
    }
    Finish(cs);
  }
}

std::vector<std::string> PodsUsingDevices(const std::map<std::string, ClaimInfo>& claims,
                                          const std::string& driver,
                                          const std::vector<DeviceHealth>& changed) {
  std::set<std::pair<std::string, std::string>> keys;
  for (const DeviceHealth& d : changed) keys.emplace(d.pool_name, d.device_name);
  std::set<std::string> pods;
  for (const auto& [uid, info] : claims) {
    if (!info.state.driver_state || !info.state.pod_uids) continue;
    auto ds = info.state.driver_state->find(driver);
    if (ds == info.state.driver_state->end() || !ds->second.devices) continue;
    for (const Device& d : *ds->second.devices) {
      if (keys.count({d.pool_name, d.device_name}) == 0) continue;
      pods.insert(info.state.pod_uids->begin(), info.state.pod_uids->end());
      break;
    }
  }
  return std::vector<std::string>(pods.begin(), pods.end());
}

}  // namespace devmgr::dra
