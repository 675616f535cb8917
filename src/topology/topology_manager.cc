#include "topology/topology_manager.h"

#include "common/logging.h"
#include "fmt/format.h"

namespace devmgr::topology {
namespace {

std::string PodRef(const pod::Pod& pod) { return fmt::format("{}/{}", pod.namespace_, pod.name); }

// A klog value printed with %+v (unquoted).
log::KV Raw(std::string_view key, const std::string& value) {
  log::KV kv(key, value);
  kv.quoted = false;
  return kv;
}

AdmitResult AffinityError() {
  AdmitResult r;
  r.admitted = false;
  r.reason = kTopologyAffinityErrorReason;
  r.message = kTopologyAffinityErrorMessage;
  return r;
}

AdmitResult UnexpectedError(const absl::Status& s) {
  AdmitResult r;
  r.admitted = false;
  r.reason = "UnexpectedAdmissionError";
  r.message =
      fmt::format("Allocate failed due to {}, which is unexpected", std::string(s.message()));
  return r;
}

}  // namespace

std::string ProviderHintsString(const ProviderHints& hints) {
  std::string out = "map[";
  bool first = true;
  for (const auto& [resource, list] : hints) {
    if (!first) out += " ";
    first = false;
    // Go prints a nil slice inside a map as [].
    out += resource + ":" + (list.has_value() ? HintListString(list) : "[]");
  }
  return out + "]";
}

TopologyManager::TopologyManager(TopologyManagerConfig config, NumaInfo numa_info, Profile profile)
    : config_(std::move(config)), numa_info_(std::move(numa_info)), profile_(std::move(profile)) {}

absl::StatusOr<std::unique_ptr<TopologyManager>> TopologyManager::Create(
    const TopologyManagerConfig& config, const std::vector<NumaNode>& topology,
    const Profile& profile) {
  if (config.policy == kPolicyNone) {
    DM_INFO("Creating topology manager with none policy");
    NumaInfo info;
    for (const NumaNode& n : topology) info.nodes.push_back(n.id);
    return std::unique_ptr<TopologyManager>(new TopologyManager(config, std::move(info), profile));
  }
  absl::StatusOr<PolicyOptions> opts =
      NewPolicyOptions(config.policy_options, profile, config.gates);
  if (!opts.ok()) return opts.status();
  absl::StatusOr<NumaInfo> info = NewNumaInfo(topology, *opts);
  if (!info.ok()) {
    return absl::Status(info.status().code(), fmt::format("cannot discover NUMA topology: {}",
                                                          std::string(info.status().message())));
  }
  if (static_cast<int>(info->nodes.size()) > opts->max_allowable_numa_nodes) {
    return absl::FailedPreconditionError(fmt::format(
        "unsupported on machines with more than {} NUMA Nodes", opts->max_allowable_numa_nodes));
  }
  std::unique_ptr<TopologyManager> tm(new TopologyManager(config, std::move(*info), profile));
  tm->opts_ = *opts;
  absl::StatusOr<std::unique_ptr<Policy>> policy = NewPolicy(config.policy, &tm->numa_info_, *opts);
  if (!policy.ok()) return policy.status();
  if (config.scope != kScopeContainer && config.scope != kScopePod) {
    return absl::InvalidArgumentError(fmt::format("unknown scope: \"{}\"", config.scope));
  }
  tm->policy_ = std::move(*policy);
  DM_INFO("Creating topology manager with policy per scope", {"topologyPolicyName", config.policy},
          {"topologyScopeName", config.scope});
  return tm;
}

void TopologyManager::AddHintProvider(HintProvider* provider) { providers_.push_back(provider); }

AdmitResult TopologyManager::Admit(const pod::Pod& pod) {
  // No admission lock: the caller serialises admissions (see the header).
  {
    absl::MutexLock l(&mu_);
    ++metrics_.admission_requests_total;
  }
  AdmissionTrace trace;
  trace.pod_uid = pod.uid;
  AdmitResult r;
  if (policy_ == nullptr) {
    r = AdmitNone(pod, &trace);
  } else if (config_.scope == kScopePod) {
    r = AdmitPodScope(pod, &trace);
  } else {
    r = AdmitContainerScope(pod, &trace);
  }
  trace.result = r;
  absl::MutexLock l(&mu_);
  traces_[pod.uid] = std::move(trace);
  return r;
}

absl::Status TopologyManager::AllocateAligned(const pod::Pod& pod,
                                              const pod::Container& container) {
  for (HintProvider* p : providers_) {
    if (absl::Status s = p->Allocate(pod, container); !s.ok()) return s;
  }
  return absl::OkStatus();
}

void TopologyManager::CountError() {
  absl::MutexLock l(&mu_);
  ++metrics_.admission_errors_total;
}

AdmitResult TopologyManager::AdmitNone(const pod::Pod& pod, AdmissionTrace*) {
  for (const pod::Container* c : pod::AllContainersInKubeletOrder(pod)) {
    if (absl::Status s = AllocateAligned(pod, *c); !s.ok()) {
      CountError();
      return UnexpectedError(s);
    }
  }
  return AdmitResult{};
}

AdmitResult TopologyManager::AdmitContainerScope(const pod::Pod& pod, AdmissionTrace* trace) {
  const std::string ref = PodRef(pod);
  for (const pod::Container* c : pod::AllContainersInKubeletOrder(pod)) {
    MergeRecord rec;
    rec.container = c->name;
    std::vector<ProviderHints> all;
    for (HintProvider* p : providers_) {
      ProviderHints h = p->GetTopologyHints(pod, *c);
      DM_INFO("TopologyHints", Raw("hints", ProviderHintsString(h)), {"pod", ref},
              {"containerName", c->name});
      rec.provider_hints.emplace_back(p->Name(), h);
      all.push_back(std::move(h));
    }
    auto [best, admit] = policy_->Merge(all);
    rec.best = best;
    rec.admit = admit;
    trace->merges.push_back(std::move(rec));
    DM_INFO("Best TopologyHint", {"bestHint", best.String()}, {"pod", ref},
            {"containerName", c->name});
    if (!admit) {
      CountError();
      return AffinityError();
    }
    DM_INFO("Topology Affinity", {"bestHint", best.String()}, {"pod", ref},
            {"containerName", c->name});
    SetHint(pod.uid, c->name, best);
    if (absl::Status s = AllocateAligned(pod, *c); !s.ok()) {
      CountError();
      return UnexpectedError(s);
    }
    if (config_.policy == kPolicySingleNumaNode && profile_.minor >= 32) {
      absl::MutexLock l(&mu_);
      ++metrics_.aligned_container;
    }
  }
  return AdmitResult{};
}

AdmitResult TopologyManager::AdmitPodScope(const pod::Pod& pod, AdmissionTrace* trace) {
  const std::string ref = PodRef(pod);
  MergeRecord rec;
  std::vector<ProviderHints> all;
  for (HintProvider* p : providers_) {
    ProviderHints h = p->GetPodTopologyHints(pod);
    DM_INFO("TopologyHints", Raw("hints", ProviderHintsString(h)), {"pod", ref});
    rec.provider_hints.emplace_back(p->Name(), h);
    all.push_back(std::move(h));
  }
  auto [best, admit] = policy_->Merge(all);
  rec.best = best;
  rec.admit = admit;
  trace->merges.push_back(std::move(rec));
  DM_INFO("Best TopologyHint", {"bestHint", best.String()}, {"pod", ref});
  if (!admit) {
    CountError();
    return AffinityError();
  }
  for (const pod::Container* c : pod::AllContainersInKubeletOrder(pod)) {
    DM_INFO("Topology Affinity", {"bestHint", best.String()}, {"pod", ref},
            {"containerName", c->name});
    SetHint(pod.uid, c->name, best);
    if (absl::Status s = AllocateAligned(pod, *c); !s.ok()) {
      CountError();
      return UnexpectedError(s);
    }
  }
  if (config_.policy == kPolicySingleNumaNode && profile_.minor >= 32) {
    absl::MutexLock l(&mu_);
    ++metrics_.aligned_pod;
  }
  return AdmitResult{};
}

void TopologyManager::SetHint(const std::string& pod_uid, const std::string& container_name,
                              const TopologyHint& hint) {
  absl::MutexLock l(&mu_);
  hints_[pod_uid][container_name] = hint;
}

std::optional<BitMask> TopologyManager::GetAffinity(const std::string& pod_uid,
                                                    const std::string& container_name) const {
  return GetHint(pod_uid, container_name).numa_node_affinity;
}

TopologyHint TopologyManager::GetHint(const std::string& pod_uid,
                                      const std::string& container_name) const {
  absl::MutexLock l(&mu_);
  auto p = hints_.find(pod_uid);
  if (p == hints_.end()) return TopologyHint{};
  auto c = p->second.find(container_name);
  return c == p->second.end() ? TopologyHint{} : c->second;
}

bool TopologyManager::HasHint(const std::string& pod_uid, const std::string& container_name) const {
  absl::MutexLock l(&mu_);
  auto p = hints_.find(pod_uid);
  return p != hints_.end() && p->second.contains(container_name);
}

void TopologyManager::RemovePod(const std::string& pod_uid) {
  absl::MutexLock l(&mu_);
  hints_.erase(pod_uid);
  traces_.erase(pod_uid);
}

std::optional<AdmissionTrace> TopologyManager::LastAdmission(const std::string& pod_uid) const {
  absl::MutexLock l(&mu_);
  auto it = traces_.find(pod_uid);
  if (it == traces_.end()) return std::nullopt;
  return it->second;
}

TopologyMetrics TopologyManager::metrics() const {
  absl::MutexLock l(&mu_);
  return metrics_;
}

}  // namespace devmgr::topology
