#include "scenario/run_metrics.h"

namespace devmgr::scenario {
namespace {

metrics::KubeletMetricsOptions OptionsFor(const Profile& profile, bool pod_resources_get) {
  metrics::KubeletMetricsOptions o;
  o.pod_resources_get = pod_resources_get;
  o.aligned_compute_resources = profile.minor >= 32;
  return o;
}

void Add(const std::map<std::string, int64_t>& from, std::map<std::string, int64_t>* to) {
  for (const auto& [k, v] : from) (*to)[k] += v;
}

}  // namespace

RunMetrics::RunMetrics(const Profile& profile, bool pod_resources_get)
    : metrics_(OptionsFor(profile, pod_resources_get)) {
  metrics_.SetRegistrationCountsSource([this] {
    absl::MutexLock l(&mu_);
    std::map<std::string, int64_t> out = registrations_;
    if (node_ != nullptr && node_->server() != nullptr) Add(node_->server()->RegistrationCounts(), &out);
    return out;
  });
  metrics_.SetAlignedComputeResourcesSource([this] {
    absl::MutexLock l(&mu_);
    std::map<std::string, int64_t> out = aligned_;
    if (node_ != nullptr) Add(Aligned(node_), &out);
    return out;
  });
}

RunMetrics::~RunMetrics() {
  metrics_.SetRegistrationCountsSource(nullptr);
  metrics_.SetAlignedComputeResourcesSource(nullptr);
}

void RunMetrics::Hook(node::NodeOptions* o) {
  metrics::KubeletMetrics* m = &metrics_;
  o->on_allocate_rpc = [m](const std::string& resource, absl::Duration d) {
    m->ObserveAllocDuration(resource, d);
  };
  o->on_pod_admission = [m](const manager::AdmitResult& r, absl::Duration d) {
    m->ObservePodAdmission(r.admitted, d);
  };
}

void RunMetrics::Attach(node::Node* n) {
  absl::MutexLock l(&mu_);
  node_ = n;
}

void RunMetrics::Detach(node::Node* n) {
  absl::MutexLock l(&mu_);
  if (node_ != n || n == nullptr) return;
  if (n->server() != nullptr) Add(n->server()->RegistrationCounts(), &registrations_);
  Add(Aligned(n), &aligned_);
  node_ = nullptr;
}

std::map<std::string, int64_t> RunMetrics::Aligned(node::Node* n) {
  std::map<std::string, int64_t> out;
  if (topology::TopologyManager* t = n->topology_manager(); t != nullptr) {
    const topology::TopologyMetrics tm = t->metrics();
    if (tm.aligned_container > 0) out["container"] = tm.aligned_container;
    if (tm.aligned_pod > 0) out["pod"] = tm.aligned_pod;
  }
  return out;
}

}  // namespace devmgr::scenario
