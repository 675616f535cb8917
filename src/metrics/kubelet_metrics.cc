#include "metrics/kubelet_metrics.h"

#include <utility>

namespace devmgr::metrics {
namespace {

constexpr char kVersionLabel[] = "server_api_version";

MetricOpts Opts(const char* name, const char* help, std::vector<std::string> labels = {}) {
  MetricOpts o;
  o.name = name;
  o.help = help;
  o.stability = Stability::kAlpha;
  o.labels = std::move(labels);
  return o;
}

}  // namespace

KubeletMetricsOptions KubeletMetricsOptionsFor(const Profile& profile, bool pod_resources_get) {
  KubeletMetricsOptions o;
  o.pod_resources_get = pod_resources_get;
  o.aligned_compute_resources = profile.minor >= 32;
  return o;
}

KubeletMetrics::KubeletMetrics(KubeletMetricsOptions opts) : opts_(opts) {
  registration_ = registry_.AddCounter(
      Opts(kRegistrationTotal,
           "Cumulative number of device plugin registrations. Broken down by resource name.",
           {"resource_name"}));
  alloc_duration_ = registry_.AddHistogram(
      Opts(kAllocDuration,
           "Duration in seconds to serve a device plugin Allocation request. Broken down by "
           "resource name.",
           {"resource_name"}),
      DefBuckets());
  pr_requests_total_ = registry_.AddCounter(
      Opts(kPodResourcesRequestsTotal,
           "Cumulative number of requests to the PodResource endpoint. Broken down by server "
           "api version.",
           {kVersionLabel}));
  pr_requests_list_ = registry_.AddCounter(
      Opts(kPodResourcesRequestsList,
           "Number of requests to the PodResource List endpoint. Broken down by server api "
           "version.",
           {kVersionLabel}));
  pr_requests_get_allocatable_ = registry_.AddCounter(
      Opts(kPodResourcesRequestsGetAllocatable,
           "Number of requests to the PodResource GetAllocatableResources endpoint. Broken "
           "down by server api version.",
           {kVersionLabel}));
  pr_errors_list_ = registry_.AddCounter(
      Opts(kPodResourcesErrorsList,
           "Number of requests to the PodResource List endpoint which returned error. Broken "
           "down by server api version.",
           {kVersionLabel}));
  pr_errors_get_allocatable_ = registry_.AddCounter(
      Opts(kPodResourcesErrorsGetAllocatable,
           "Number of requests to the PodResource GetAllocatableResources endpoint which "
           "returned error. Broken down by server api version.",
           {kVersionLabel}));
  if (opts_.pod_resources_get) {
    pr_requests_get_ = registry_.AddCounter(
        Opts(kPodResourcesRequestsGet,
             "Number of requests to the PodResource Get endpoint. Broken down by server api "
             "version.",
             {kVersionLabel}));
    pr_errors_get_ = registry_.AddCounter(
        Opts(kPodResourcesErrorsGet,
             "Number of requests to the PodResource Get endpoint which returned error. Broken "
             "down by server api version.",
             {kVersionLabel}));
  }
  topo_requests_ = registry_.AddCounter(
      Opts(kTopologyAdmissionRequests,
           "The number of admission requests where resources have to be aligned."));
  topo_errors_ = registry_.AddCounter(
      Opts(kTopologyAdmissionErrors,
           "The number of admission request failures where resources could not be aligned."));
  topo_duration_ =
      registry_.AddHistogram(Opts(kTopologyAdmissionDuration,
                                  "Duration in milliseconds to serve a pod admission request."),
                             ExponentialBuckets(.05, 2, 15));
  if (opts_.aligned_compute_resources) {
    aligned_ = registry_.AddCounter(
        Opts(kAlignedComputeResources,
             "Cumulative number of aligned compute resources allocated to containers by "
             "alignment type.",
             {"boundary", "scope"}));
  }
  registry_.AddCollectHook([this] {
    std::function<std::map<std::string, int64_t>()> reg;
    std::function<std::map<std::string, int64_t>()> aligned;
    {
      absl::MutexLock l(&source_mu_);
      reg = registration_source_;
      aligned = aligned_source_;
    }
    if (reg) {
      for (const auto& [name, n] : reg()) registration_->Set({name}, static_cast<double>(n));
    }
    if (aligned && aligned_ != nullptr) {
      for (const auto& [scope, n] : aligned()) {
        if (n > 0) aligned_->Set({"numa_node", scope}, static_cast<double>(n));
      }
    }
  });
}

void KubeletMetrics::CountRegistration(const std::string& resource) {
  registration_->Inc({resource});
}

void KubeletMetrics::SetRegistrationCountsSource(
    std::function<std::map<std::string, int64_t>()> source) {
  absl::MutexLock l(&source_mu_);
  registration_source_ = std::move(source);
}

void KubeletMetrics::ObserveAllocDuration(const std::string& resource, absl::Duration d) {
  alloc_duration_->Observe({resource}, absl::ToDoubleSeconds(d));
}

void KubeletMetrics::CountPodResourcesRequest(PodResourcesMethod m, const std::string& version) {
  pr_requests_total_->Inc({version});
  switch (m) {
    case PodResourcesMethod::kList:
      pr_requests_list_->Inc({version});
      break;
    case PodResourcesMethod::kGetAllocatableResources:
      pr_requests_get_allocatable_->Inc({version});
      break;
    case PodResourcesMethod::kGet:
      if (pr_requests_get_ != nullptr) pr_requests_get_->Inc({version});
      break;
  }
}

void KubeletMetrics::CountPodResourcesError(PodResourcesMethod m, const std::string& version) {
  switch (m) {
    case PodResourcesMethod::kList:
      pr_errors_list_->Inc({version});
      break;
    case PodResourcesMethod::kGetAllocatableResources:
      pr_errors_get_allocatable_->Inc({version});
      break;
    case PodResourcesMethod::kGet:
      if (pr_errors_get_ != nullptr) pr_errors_get_->Inc({version});
      break;
  }
}

void KubeletMetrics::CountTopologyAdmissionRequest() { topo_requests_->Inc({}); }
void KubeletMetrics::CountTopologyAdmissionError() { topo_errors_->Inc({}); }

void KubeletMetrics::ObserveTopologyAdmissionDuration(absl::Duration d) {
  topo_duration_->Observe({}, static_cast<double>(absl::ToInt64Milliseconds(d)));
}

void KubeletMetrics::ObservePodAdmission(bool admitted, absl::Duration d) {
  CountTopologyAdmissionRequest();
  if (!admitted) CountTopologyAdmissionError();
  ObserveTopologyAdmissionDuration(d);
}

void KubeletMetrics::SetAlignedComputeResourcesSource(
    std::function<std::map<std::string, int64_t>()> source) {
  absl::MutexLock l(&source_mu_);
  aligned_source_ = std::move(source);
}

void KubeletMetrics::CountAlignedComputeResources(const std::string& scope,
                                                  const std::string& boundary) {
  // Label names are {"boundary", "scope"}.
  if (aligned_ != nullptr) aligned_->Inc({boundary, scope});
}

double KubeletMetrics::RegistrationCount(const std::string& resource) const {
  // Brings mirrored counts up to date first.
  (void)registry_.Render();
  return registration_->Value({resource});
}

uint64_t KubeletMetrics::AllocCount(const std::string& resource) const {
  auto d = alloc_duration_->Get({resource});
  return d.has_value() ? d->count : 0;
}

KubeletMetrics& DefaultKubeletMetrics() {
  static KubeletMetrics* m = new KubeletMetrics();
  return *m;
}

}  // namespace devmgr::metrics
