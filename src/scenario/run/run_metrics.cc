#include "scenario/run/run_metrics.h"

#include "podresources/observability.h"

namespace devmgr::scenario {
namespace {

void Add(const std::map<std::string, int64_t>& from, std::map<std::string, int64_t>* to) {
  for (const auto& [k, v] : from) (*to)[k] += v;
}

}  // namespace

RunMetrics::RunMetrics(const Profile& profile, bool pod_resources_get)
    : metrics_(metrics::KubeletMetricsOptionsFor(profile, pod_resources_get)) {
  metrics_.SetRegistrationCountsSource([this] {
    absl::MutexLock l(&mu_);
    std::map<std::string, int64_t> out = registrations_;
    if (node_ != nullptr) Add(node_->RegistrationCounts(), &out);
    return out;
  });
  metrics_.SetAlignedComputeResourcesSource([this] {
    absl::MutexLock l(&mu_);
    std::map<std::string, int64_t> out = aligned_;
    if (node_ != nullptr) Add(node_->AlignedComputeResourceCounts(), &out);
    return out;
  });
  // A gauge of the running kubelet: nothing carries over a restart (the
  // restored claims are not prepared).
  metrics_.SetDraClaimsInUseSource([this] {
    absl::MutexLock l(&mu_);
    return node_ != nullptr ? node_->DraClaimsInUse() : std::map<std::string, int64_t>{};
  });
}

RunMetrics::~RunMetrics() {
  metrics_.SetRegistrationCountsSource(nullptr);
  metrics_.SetAlignedComputeResourcesSource(nullptr);
  metrics_.SetDraClaimsInUseSource(nullptr);
}

void RunMetrics::Hook(node::NodeOptions* o) { podresources::HookKubeletMetrics(&metrics_, o); }

void RunMetrics::Attach(node::Node* n) {
  absl::MutexLock l(&mu_);
  node_ = n;
}

void RunMetrics::Detach(node::Node* n) {
  absl::MutexLock l(&mu_);
  if (node_ != n || n == nullptr) return;
  Add(n->RegistrationCounts(), &registrations_);
  Add(n->AlignedComputeResourceCounts(), &aligned_);
  node_ = nullptr;
}

}  // namespace devmgr::scenario
