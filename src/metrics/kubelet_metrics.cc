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

constexpr char kDraOperationsHelp[] =
    "Latency histogram in seconds for the duration of handling all ResourceClaims referenced by "
    "a pod when the pod starts or stops. Identified by the name of the operation "
    "(PrepareResources or UnprepareResources) and separated by the success of the operation. The "
    "number of failed operations is provided through the histogram's overall count.";
constexpr char kDraClaimsInUseHelp[] =
    "The number of ResourceClaims that are currently in use on the node, by driver name "
    "(driver_name label value) and across all drivers (special value <any> for driver_name). "
    "Note that the sum of all by-driver counts is not the total number of in-use ResourceClaims "
    "because the same ResourceClaim might use devices from different drivers. Instead, use the "
    "count for the <any> driver_name.";

}  // namespace

std::vector<double> DraDurationBuckets() {
  // The values of client_golang's ExponentialBucketsRange(.1, 40, 15)
  // (.1 * math.Pow(growth, i)), printed by Go: C++'s pow can differ from
  // Go's math.Pow in the last bit, which would show in the le labels.
  return {0.1,
          0.1534127404634391,
          0.23535468936502524,
          0.36106407876409946,
          0.5539182980610752,
          0.849781240983936,
          1.303672689737678,
          1.9999999999999993,
          3.0682548092687805,
          4.7070937873005025,
          7.221281575281985,
          11.078365961221499,
          16.995624819678714,
          26.07345379475354,
          39.99999999999997};
}

KubeletMetricsOptions KubeletMetricsOptionsFor(const Profile& profile, bool pod_resources_get) {
  KubeletMetricsOptions o;
  o.pod_resources_get = pod_resources_get;
  o.aligned_compute_resources = profile.minor >= 32;
  // DynamicResourceAllocation is GA and locked on from 1.34, the first
  // release devmgr emulates DRA for.
  o.dra = profile.minor >= 34;
  o.dra_is_error_inverted = profile.minor <= 35;
  o.dra_skip_counters = profile.minor >= 37;
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
  if (opts_.dra) AddDraFamilies();
  registry_.AddCollectHook([this] {
    std::function<std::map<std::string, int64_t>()> reg;
    std::function<std::map<std::string, int64_t>()> aligned;
    std::function<std::map<std::string, int64_t>()> dra_claims;
    {
      absl::MutexLock l(&source_mu_);
      reg = registration_source_;
      aligned = aligned_source_;
      dra_claims = dra_claims_source_;
    }
    if (dra_claims_in_use_ != nullptr) {
      // The collector always reports kDraAnyDriver, 0 with no claim prepared.
      std::map<std::vector<std::string>, double> series{{{kDraAnyDriver}, 0}};
      if (dra_claims) {
        for (const auto& [driver, n] : dra_claims()) series[{driver}] = static_cast<double>(n);
      }
      dra_claims_in_use_->ReplaceAll(series);
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

// pkg/kubelet/metrics/metrics.go (v1.34.4-v1.37.2): the two histograms and
// 1.37's skip counters are registered with the DynamicResourceAllocation
// gate; the claims-in-use gauge is the DRA manager's collector
// (cm/dra/claiminfo.go), registered by the container manager.
void KubeletMetrics::AddDraFamilies() {
  dra_operations_ = registry_.AddHistogram(
      Opts(kDraOperationsDuration, kDraOperationsHelp, {"operation_name", "is_error"}),
      DraDurationBuckets());
  dra_grpc_ = registry_.AddHistogram(
      Opts(kDraGrpcOperationsDuration, "Duration in seconds of the DRA gRPC operations",
           {"driver_name", "method_name", "grpc_status_code"}),
      DraDurationBuckets());
  dra_claims_in_use_ =
      registry_.AddGauge(Opts(kDraResourceClaimsInUse, kDraClaimsInUseHelp, {"driver_name"}));
  if (opts_.dra_skip_counters) {
    // devmgr makes no skip (DRAOptionalNodeOperations is not emulated), so
    // these have no series and are not rendered, as in a kubelet that skips none.
    (void)registry_.AddCounter(Opts(kDraNodePrepareSkips,
                                    "Cumulative number of times NodePrepareResources gRPC calls "
                                    "were skipped due to SkipNodeOperations.",
                                    {"driver_name"}));
    (void)registry_.AddCounter(Opts(kDraNodeUnprepareSkips,
                                    "Cumulative number of times NodeUnprepareResources gRPC calls "
                                    "were skipped due to SkipNodeOperations.",
                                    {"driver_name"}));
  }
}

void KubeletMetrics::ObserveDraOperation(const std::string& operation, bool failed,
                                         absl::Duration d) {
  if (dra_operations_ == nullptr) return;
  const bool label = opts_.dra_is_error_inverted ? !failed : failed;
  dra_operations_->Observe({operation, label ? "true" : "false"}, absl::ToDoubleSeconds(d));
}

void KubeletMetrics::ObserveDraGrpc(const std::string& driver, const std::string& method,
                                    const std::string& code, absl::Duration d) {
  if (dra_grpc_ == nullptr) return;
  dra_grpc_->Observe({driver, method, code}, absl::ToDoubleSeconds(d));
}

void KubeletMetrics::SetDraClaimsInUseSource(
    std::function<std::map<std::string, int64_t>()> source) {
  absl::MutexLock l(&source_mu_);
  dra_claims_source_ = std::move(source);
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
