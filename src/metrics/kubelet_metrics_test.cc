#include "metrics/kubelet_metrics.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(KubeletMetricsTest, FreshRegistryShowsOnlyUnlabelledFamilies) {
  KubeletMetrics m;
  const std::string text = m.Render();
  EXPECT_THAT(text, Not(HasSubstr("kubelet_device_plugin_registration_total")));
  EXPECT_THAT(text, Not(HasSubstr("kubelet_device_plugin_alloc_duration_seconds")));
  EXPECT_THAT(text, HasSubstr("# HELP kubelet_topology_manager_admission_requests_total [ALPHA] "
                              "The number of admission requests where resources have to be "
                              "aligned.\n# TYPE kubelet_topology_manager_admission_requests_total "
                              "counter\nkubelet_topology_manager_admission_requests_total 0\n"));
  EXPECT_THAT(text,
              HasSubstr("kubelet_topology_manager_admission_duration_ms_bucket{le=\"819.2\"} 0\n"));
}

TEST(KubeletMetricsTest, RegistrationAndAllocDuration) {
  KubeletMetrics m;
  m.CountRegistration("example.com/gpu");
  m.CountRegistration("example.com/gpu");
  m.ObserveAllocDuration("example.com/gpu", absl::Milliseconds(30));
  const std::string text = m.Render();
  EXPECT_THAT(
      text,
      HasSubstr(
          "# HELP kubelet_device_plugin_registration_total [ALPHA] Cumulative number of device "
          "plugin registrations. Broken down by resource name.\n"
          "# TYPE kubelet_device_plugin_registration_total counter\n"
          "kubelet_device_plugin_registration_total{resource_name=\"example.com/gpu\"} 2\n"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "# HELP kubelet_device_plugin_alloc_duration_seconds [ALPHA] Duration in seconds to "
          "serve "
          "a device plugin Allocation request. Broken down by resource name.\n"
          "# TYPE kubelet_device_plugin_alloc_duration_seconds histogram\n"
          "kubelet_device_plugin_alloc_duration_seconds_bucket{resource_name=\"example.com/gpu\","
          "le=\"0.005\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("le=\"0.05\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("le=\"10\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kubelet_device_plugin_alloc_duration_seconds_count{resource_name="
                              "\"example.com/gpu\"} 1\n"));
  EXPECT_EQ(m.AllocCount("example.com/gpu"), 1u);
  EXPECT_EQ(m.RegistrationCount("example.com/gpu"), 2);
}

TEST(KubeletMetricsTest, RegistrationCountsMirroredFromASource) {
  KubeletMetrics m;
  std::map<std::string, int64_t> counts = {{"a.com/x", 3}};
  m.SetRegistrationCountsSource([&] { return counts; });
  EXPECT_THAT(m.Render(),
              HasSubstr("kubelet_device_plugin_registration_total{resource_name=\"a.com/x\"} 3\n"));
  counts["a.com/x"] = 4;
  EXPECT_EQ(m.RegistrationCount("a.com/x"), 4);
}

TEST(KubeletMetricsTest, PodResourcesCountersPerGate) {
  KubeletMetrics off;
  off.CountPodResourcesRequest(PodResourcesMethod::kList);
  off.CountPodResourcesRequest(PodResourcesMethod::kGet);
  off.CountPodResourcesError(PodResourcesMethod::kGet);
  std::string text = off.Render();
  EXPECT_THAT(
      text,
      HasSubstr("kubelet_pod_resources_endpoint_requests_total{server_api_version=\"v1\"} 2\n"));
  EXPECT_THAT(
      text,
      HasSubstr("kubelet_pod_resources_endpoint_requests_list{server_api_version=\"v1\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("kubelet_pod_resources_endpoint_requests_get{")));
  EXPECT_THAT(text, Not(HasSubstr("kubelet_pod_resources_endpoint_errors_get")));

  KubeletMetricsOptions o;
  o.pod_resources_get = true;
  KubeletMetrics on(o);
  on.CountPodResourcesRequest(PodResourcesMethod::kGet);
  on.CountPodResourcesError(PodResourcesMethod::kGet);
  on.CountPodResourcesRequest(PodResourcesMethod::kGetAllocatableResources);
  text = on.Render();
  EXPECT_THAT(
      text,
      HasSubstr(
          "# HELP kubelet_pod_resources_endpoint_requests_get [ALPHA] Number of requests to the "
          "PodResource Get endpoint. Broken down by server api version.\n"
          "# TYPE kubelet_pod_resources_endpoint_requests_get counter\n"
          "kubelet_pod_resources_endpoint_requests_get{server_api_version=\"v1\"} 1\n"));
  EXPECT_THAT(
      text, HasSubstr("kubelet_pod_resources_endpoint_errors_get{server_api_version=\"v1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kubelet_pod_resources_endpoint_requests_get_allocatable{server_api_"
                              "version=\"v1\"} 1\n"));
}

TEST(KubeletMetricsTest, TopologyAdmission) {
  KubeletMetrics m;
  m.CountTopologyAdmissionRequest();
  m.CountTopologyAdmissionRequest();
  m.CountTopologyAdmissionError();
  m.ObserveTopologyAdmissionDuration(absl::Microseconds(70));    // 0 ms (truncated)
  m.ObserveTopologyAdmissionDuration(absl::Microseconds(1900));  // 1 ms
  m.CountAlignedComputeResources("container", "numa_node");
  const std::string text = m.Render();
  EXPECT_THAT(text, HasSubstr("kubelet_topology_manager_admission_requests_total 2\n"));
  EXPECT_THAT(text, HasSubstr("kubelet_topology_manager_admission_errors_total 1\n"));
  EXPECT_THAT(text,
              HasSubstr("kubelet_topology_manager_admission_duration_ms_bucket{le=\"0.05\"} 1\n"
                        "kubelet_topology_manager_admission_duration_ms_bucket{le=\"0.1\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("kubelet_topology_manager_admission_duration_ms_bucket{le=\"1.6\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("kubelet_topology_manager_admission_duration_ms_sum 1\n"));
  EXPECT_THAT(text, HasSubstr("kubelet_topology_manager_admission_duration_ms_count 2\n"));
  EXPECT_THAT(text, HasSubstr("kubelet_container_aligned_compute_resources_count{boundary=\"numa_"
                              "node\",scope=\"container\"} 1\n"));

  KubeletMetricsOptions o;
  o.aligned_compute_resources = false;  // before 1.32
  KubeletMetrics old(o);
  old.CountAlignedComputeResources("pod", "numa_node");
  EXPECT_THAT(old.Render(), Not(HasSubstr("aligned_compute_resources")));
}

TEST(KubeletMetricsTest, PodAdmissionAndMirroredAlignedCounts) {
  KubeletMetrics m;
  m.ObservePodAdmission(true, absl::Milliseconds(3));
  m.ObservePodAdmission(false, absl::ZeroDuration());
  std::map<std::string, int64_t> aligned = {{"pod", 2}, {"container", 0}};
  m.SetAlignedComputeResourcesSource([&] { return aligned; });
  const std::string text = m.Render();
  EXPECT_THAT(text, HasSubstr("kubelet_topology_manager_admission_requests_total 2\n"));
  EXPECT_THAT(text, HasSubstr("kubelet_topology_manager_admission_errors_total 1\n"));
  EXPECT_THAT(text, HasSubstr("kubelet_topology_manager_admission_duration_ms_sum 3\n"));
  EXPECT_THAT(text, HasSubstr("kubelet_container_aligned_compute_resources_count{boundary=\"numa_"
                              "node\",scope=\"pod\"} 2\n"));
  EXPECT_THAT(text, Not(HasSubstr("scope=\"container\"")));
}

KubeletMetricsOptions DraOptions(int minor) {
  KubeletMetricsOptions o;
  o.dra = true;
  o.dra_is_error_inverted = minor <= 35;
  o.dra_skip_counters = minor >= 37;
  return o;
}

TEST(KubeletMetricsTest, NoDraFamiliesWhileDraIsOff) {
  KubeletMetrics m;
  m.ObserveDraOperation("PrepareResources", false, absl::Milliseconds(5));
  m.ObserveDraGrpc("d", "/m", "OK", absl::Milliseconds(5));
  EXPECT_THAT(m.Render(), Not(HasSubstr("dra_")));
}

TEST(KubeletMetricsTest, DraClaimsInUseAlwaysCountsAnyDriver) {
  KubeletMetrics m(DraOptions(34));
  EXPECT_THAT(m.Render(),
              HasSubstr("# HELP dra_resource_claims_in_use [ALPHA] The number of ResourceClaims "
                        "that are currently in use on the node, by driver name (driver_name label "
                        "value) and across all drivers (special value <any> for driver_name)."));
  EXPECT_THAT(m.Render(), HasSubstr("# TYPE dra_resource_claims_in_use gauge\n"
                                    "dra_resource_claims_in_use{driver_name=\"<any>\"} 0\n"));
  std::map<std::string, int64_t> counts{{"<any>", 2}, {"a.example.com", 2}, {"b.example.com", 1}};
  m.SetDraClaimsInUseSource([&] { return counts; });
  EXPECT_THAT(m.Render(),
              HasSubstr("dra_resource_claims_in_use{driver_name=\"<any>\"} 2\n"
                        "dra_resource_claims_in_use{driver_name=\"a.example.com\"} 2\n"
                        "dra_resource_claims_in_use{driver_name=\"b.example.com\"} 1\n"));
  // A driver with no claim left is not rendered (the collector's map is made anew).
  counts = {{"<any>", 0}};
  EXPECT_THAT(m.Render(), Not(HasSubstr("a.example.com")));
}

TEST(KubeletMetricsTest, DraOperationIsErrorLabelPerRelease) {
  // 1.34 and 1.35 pass strconv.FormatBool(err == nil) as is_error.
  KubeletMetrics old(DraOptions(35));
  old.ObserveDraOperation("PrepareResources", /*failed=*/false, absl::Milliseconds(120));
  EXPECT_THAT(old.Render(),
              HasSubstr("dra_operations_duration_seconds_count{is_error=\"true\",operation_name="
                        "\"PrepareResources\"} 1\n"));
  KubeletMetrics fixed(DraOptions(36));
  fixed.ObserveDraOperation("PrepareResources", /*failed=*/false, absl::Milliseconds(120));
  fixed.ObserveDraOperation("UnprepareResources", /*failed=*/true, absl::Seconds(50));
  const std::string text = fixed.Render();
  EXPECT_THAT(text, HasSubstr("dra_operations_duration_seconds_count{is_error=\"false\","
                              "operation_name=\"PrepareResources\"} 1\n"));
  // 120 ms is above the first bound (0.1), within the second.
  EXPECT_THAT(text, HasSubstr("dra_operations_duration_seconds_bucket{is_error=\"false\","
                              "operation_name=\"PrepareResources\",le=\"0.1\"} 0\n"
                              "dra_operations_duration_seconds_bucket{is_error=\"false\","
                              "operation_name=\"PrepareResources\",le=\"0.1534127404634391\"} "
                              "1\n"));
  EXPECT_THAT(text, HasSubstr("dra_operations_duration_seconds_bucket{is_error=\"true\","
                              "operation_name=\"UnprepareResources\",le=\"39.99999999999997\"} 0\n"
                              "dra_operations_duration_seconds_bucket{is_error=\"true\","
                              "operation_name=\"UnprepareResources\",le=\"+Inf\"} 1\n"));
}

TEST(KubeletMetricsTest, DraGrpcDurationPerDriverMethodAndCode) {
  KubeletMetrics m(DraOptions(37));
  m.ObserveDraGrpc("gpu.example.com",
                   "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
                   "DeadlineExceeded", absl::Seconds(45));
  const std::string text = m.Render();
  EXPECT_THAT(text, HasSubstr("# HELP dra_grpc_operations_duration_seconds [ALPHA] Duration in "
                              "seconds of the DRA gRPC operations\n"));
  EXPECT_THAT(text, HasSubstr("dra_grpc_operations_duration_seconds_count{driver_name=\"gpu."
                              "example.com\",grpc_status_code=\"DeadlineExceeded\",method_name="
                              "\"/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources\"} "
                              "1\n"));
  // 1.37's skip counters have no series: devmgr skips no call.
  EXPECT_THAT(text, Not(HasSubstr("skips_total")));
}

TEST(KubeletMetricsTest, DraBucketsAreGosExponentialBucketsRange) {
  const std::vector<double> b = DraDurationBuckets();
  ASSERT_EQ(b.size(), 15u);
  // Go's values: min * growth^i with growth = (40/.1)^(1/14); the last one
  // is not exactly 40.
  EXPECT_EQ(b.front(), 0.1);
  EXPECT_EQ(b[7], 1.9999999999999993);
  EXPECT_LT(b.back(), 40.0);
  for (size_t i = 1; i < b.size(); ++i) EXPECT_NEAR(b[i] / b[i - 1], 1.534127404634391, 1e-12);
}

TEST(KubeletMetricsTest, DraOptionsFollowTheProfile) {
  for (int minor : {33, 34, 35, 36, 37}) {
    const KubeletMetricsOptions o = KubeletMetricsOptionsFor(ProfileForMinor(minor), false);
    EXPECT_EQ(o.dra, minor >= 34) << minor;
    EXPECT_EQ(o.dra_is_error_inverted, minor <= 35) << minor;
    EXPECT_EQ(o.dra_skip_counters, minor >= 37) << minor;
  }
}

}  // namespace
}  // namespace devmgr::metrics
