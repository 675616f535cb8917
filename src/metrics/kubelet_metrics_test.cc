#include "metrics/kubelet_metrics.h"

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

}  // namespace
}  // namespace devmgr::metrics
