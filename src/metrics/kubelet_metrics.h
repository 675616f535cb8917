// The kubelet metrics devmgr reproduces, with the kubelet's names, labels,
// HELP texts, stability levels and buckets (pkg/kubelet/metrics/metrics.go): device-plugin
// registrations and Allocate durations, the PodResources endpoint counters, and the topology
// manager's admission metrics, and the DRA manager's (1.34+: operation and gRPC durations,
// claims in use, 1.37's skip counters).
#ifndef DEVMGR_METRICS_KUBELET_METRICS_H_
#define DEVMGR_METRICS_KUBELET_METRICS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "kubelet/profile.h"
#include "metrics/registry.h"

namespace devmgr::metrics {

inline constexpr char kRegistrationTotal[] = "kubelet_device_plugin_registration_total";
inline constexpr char kAllocDuration[] = "kubelet_device_plugin_alloc_duration_seconds";
inline constexpr char kPodResourcesRequestsTotal[] =
    "kubelet_pod_resources_endpoint_requests_total";
inline constexpr char kPodResourcesRequestsList[] = "kubelet_pod_resources_endpoint_requests_list";
inline constexpr char kPodResourcesRequestsGetAllocatable[] =
    "kubelet_pod_resources_endpoint_requests_get_allocatable";
inline constexpr char kPodResourcesRequestsGet[] = "kubelet_pod_resources_endpoint_requests_get";
inline constexpr char kPodResourcesErrorsList[] = "kubelet_pod_resources_endpoint_errors_list";
inline constexpr char kPodResourcesErrorsGetAllocatable[] =
    "kubelet_pod_resources_endpoint_errors_get_allocatable";
inline constexpr char kPodResourcesErrorsGet[] = "kubelet_pod_resources_endpoint_errors_get";
inline constexpr char kTopologyAdmissionRequests[] =
    "kubelet_topology_manager_admission_requests_total";
inline constexpr char kTopologyAdmissionErrors[] =
    "kubelet_topology_manager_admission_errors_total";
inline constexpr char kTopologyAdmissionDuration[] =
    "kubelet_topology_manager_admission_duration_ms";
inline constexpr char kAlignedComputeResources[] =
    "kubelet_container_aligned_compute_resources_count";
// The DRA metrics have the subsystem "dra" and no "kubelet_" prefix.
inline constexpr char kDraOperationsDuration[] = "dra_operations_duration_seconds";
inline constexpr char kDraGrpcOperationsDuration[] = "dra_grpc_operations_duration_seconds";
inline constexpr char kDraResourceClaimsInUse[] = "dra_resource_claims_in_use";
inline constexpr char kDraNodePrepareSkips[] = "dra_node_prepare_skips_total";
inline constexpr char kDraNodeUnprepareSkips[] = "dra_node_unprepare_skips_total";
// The driver_name of dra_resource_claims_in_use that counts every claim.
inline constexpr char kDraAnyDriver[] = "<any>";

// DRADurationBuckets: ExponentialBucketsRange(.1, 40, 15) as Go computes it
// (pkg/kubelet/metrics/metrics.go, v1.34.4-v1.37.2).
std::vector<double> DraDurationBuckets();

enum class PodResourcesMethod { kList, kGetAllocatableResources, kGet };

struct KubeletMetricsOptions {
  // The kubelet registers the PodResources Get counters only when the
  // KubeletPodResourcesGet gate is on.
  bool pod_resources_get = false;
  // 1.32+: kubelet_container_aligned_compute_resources_count exists.
  bool aligned_compute_resources = true;
  // The DRA metrics: registered by the kubelet while the DynamicResourceAllocation
  // gate is on (GA from 1.34; devmgr emulates DRA from 1.34).
  bool dra = false;
  // 1.34 and 1.35 label dra_operations_duration_seconds' is_error with
  // strconv.FormatBool(err == nil): "true" for an operation that succeeded.
  // 1.36 fixed it (isError := err != nil).
  bool dra_is_error_inverted = false;
  // 1.37+: dra_node_prepare_skips_total and dra_node_unprepare_skips_total.
  bool dra_skip_counters = false;
};

// The metric families `profile`'s kubelet registers, with the
// KubeletPodResourcesGet gate as configured (`pod_resources_get`).
KubeletMetricsOptions KubeletMetricsOptionsFor(const Profile& profile, bool pod_resources_get);

// Thread-safe.
class KubeletMetrics {
 public:
  explicit KubeletMetrics(KubeletMetricsOptions opts = {});

  // ---- device manager ----
  // One Register RPC (counted before validation, with the name as sent).
  void CountRegistration(const std::string& resource);
  // Mirrors registration counts kept elsewhere (e.g. the registration
  // server's RegistrationCounts()) at every render; replaces the counter
  // values for the names it returns. Empty function: none.
  void SetRegistrationCountsSource(std::function<std::map<std::string, int64_t>()> source);
  // One Allocate RPC (failed ones included).
  void ObserveAllocDuration(const std::string& resource, absl::Duration d);

  // ---- PodResources server ("v1") ----
  // requests_total and the per-method requests counter.
  void CountPodResourcesRequest(PodResourcesMethod m, const std::string& version = "v1");
  void CountPodResourcesError(PodResourcesMethod m, const std::string& version = "v1");

  // ---- topology manager (call these from its Admit) ----
  // Every Admit, all policies.
  void CountTopologyAdmissionRequest();
  // A rejection, or an allocation error during admission.
  void CountTopologyAdmissionError();
  // The admission's duration, observed as Go's Duration.Milliseconds(): whole
  // milliseconds, truncated (so most land in the le="0.05" bucket).
  void ObserveTopologyAdmissionDuration(absl::Duration d);
  // All three for one admission (NodeOptions::on_pod_admission): a request,
  // an error when not admitted, and the duration.
  void ObservePodAdmission(bool admitted, absl::Duration d);
  // 1.32+, single-numa-node only, on a successful admit: scope "container"
  // or "pod", boundary "numa_node". No-op when not registered.
  void CountAlignedComputeResources(const std::string& scope, const std::string& boundary);
  // Mirrors aligned-resource counts kept elsewhere (the topology manager's
  // own counters), scope -> count with boundary "numa_node", at every render.
  void SetAlignedComputeResourcesSource(std::function<std::map<std::string, int64_t>()> source);

  // ---- DRA manager (no-ops while opts.dra is off) ----
  // The kubelet's PrepareResources / UnprepareResources of one pod (its
  // PrepareDynamicResources at each sandbox creation, UnprepareDynamicResources
  // when the pod's termination is synced): `operation` is "PrepareResources"
  // or "UnprepareResources".
  void ObserveDraOperation(const std::string& operation, bool failed, absl::Duration d);
  // One unary gRPC call to a driver, as the kubelet's client interceptor
  // observes it: the full method ("/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/
  // NodePrepareResources") and grpc-go's code name ("OK", "DeadlineExceeded").
  void ObserveDraGrpc(const std::string& driver, const std::string& method, const std::string& code,
                      absl::Duration d);
  // Claims prepared per driver name, plus kDraAnyDriver for all, read at
  // every render (the kubelet's claimInfoCollector). Empty function: none.
  void SetDraClaimsInUseSource(std::function<std::map<std::string, int64_t>()> source);

  Registry& registry() { return registry_; }
  // The text exposition format (what /metrics serves).
  std::string Render() const { return registry_.Render(); }

  // Accessors for tests and scenario expectations.
  double RegistrationCount(const std::string& resource) const;
  uint64_t AllocCount(const std::string& resource) const;

 private:
  void AddDraFamilies();

  const KubeletMetricsOptions opts_;
  Registry registry_;
  CounterVec* registration_;
  HistogramVec* alloc_duration_;
  CounterVec* pr_requests_total_;
  CounterVec* pr_requests_list_;
  CounterVec* pr_requests_get_allocatable_;
  CounterVec* pr_requests_get_ = nullptr;
  CounterVec* pr_errors_list_;
  CounterVec* pr_errors_get_allocatable_;
  CounterVec* pr_errors_get_ = nullptr;
  CounterVec* topo_requests_;
  CounterVec* topo_errors_;
  HistogramVec* topo_duration_;
  CounterVec* aligned_ = nullptr;
  HistogramVec* dra_operations_ = nullptr;
  HistogramVec* dra_grpc_ = nullptr;
  GaugeVec* dra_claims_in_use_ = nullptr;
  absl::Mutex source_mu_;
  std::function<std::map<std::string, int64_t>()> registration_source_ ABSL_GUARDED_BY(source_mu_);
  std::function<std::map<std::string, int64_t>()> aligned_source_ ABSL_GUARDED_BY(source_mu_);
  std::function<std::map<std::string, int64_t>()> dra_claims_source_ ABSL_GUARDED_BY(source_mu_);
};

// A process-wide instance (the kubelet's legacy registry), created on first
// use with default options. Components that are not handed an instance
// (e.g. the topology manager) record here.
KubeletMetrics& DefaultKubeletMetrics();

}  // namespace devmgr::metrics

#endif  // DEVMGR_METRICS_KUBELET_METRICS_H_
