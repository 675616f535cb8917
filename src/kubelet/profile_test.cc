#include "kubelet/profile.h"

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubelet/feature_gates.h"
#include "kubelet/version_matrix.h"

namespace devmgr {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ProfileTest, OneProfilePerMinorVersion) {
  EXPECT_THAT(ProfileNames(),
              ElementsAre("1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37"));
  for (const std::string& n : ProfileNames()) {
    absl::StatusOr<Profile> p = ProfileForVersion(n);
    ASSERT_OK(p) << n;
    EXPECT_EQ(p->name, n);
    EXPECT_TRUE(p->notice.empty()) << n;
  }
  EXPECT_EQ(ProfileForVersion("v1.35.2")->name, "1.35");
  EXPECT_EQ(DefaultProfile().name, "1.36");
}

TEST(ProfileTest, SwitchesPerVersion) {
  auto p = [](const char* v) { return *ProfileForVersion(v); };
  // #121994 is fixed in 1.37 only (PR #135437).
  EXPECT_FALSE(p("1.34").endpoints_per_socket);
  EXPECT_FALSE(p("1.36").endpoints_per_socket);
  EXPECT_TRUE(p("1.37").endpoints_per_socket);
  // Healthz before start: fails in 1.32.0-1.32.10, 1.33.0-1.33.6 and
  // 1.34.0-1.34.2, passes from 1.32.11, 1.33.7, 1.34.3 and 1.35 (the
  // backports of #135153: k8s.io/kubernetes v1.32.10 vs v1.32.13, v1.33.6 vs
  // v1.33.13, v1.34.2 vs v1.34.3,
  // pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go, server.Check).
  EXPECT_FALSE(p("1.32").healthz_passes_before_start);
  EXPECT_FALSE(p("1.32.10").healthz_passes_before_start);
  EXPECT_TRUE(p("1.32.11").healthz_passes_before_start);
  EXPECT_TRUE(p("v1.32.13").healthz_passes_before_start);
  EXPECT_FALSE(p("1.33").healthz_passes_before_start);
  EXPECT_FALSE(p("1.33.6").healthz_passes_before_start);
  EXPECT_TRUE(p("1.33.7").healthz_passes_before_start);
  EXPECT_TRUE(p("v1.33.13").healthz_passes_before_start);
  EXPECT_FALSE(p("1.34").healthz_passes_before_start);
  EXPECT_FALSE(p("1.34.2").healthz_passes_before_start);
  EXPECT_TRUE(p("1.34.3").healthz_passes_before_start);
  EXPECT_TRUE(p("1.35").healthz_passes_before_start);
  EXPECT_FALSE(p("1.31.14").healthz_passes_before_start);
  EXPECT_FALSE(p("1.35").watcher_failure_deregisters);
  EXPECT_TRUE(p("1.36").watcher_failure_deregisters);
  EXPECT_TRUE(p("1.34").capacity_out_of_sync_log);
  EXPECT_FALSE(p("1.35").capacity_out_of_sync_log);
  EXPECT_FALSE(p("1.35").topology_hints_device_numa_only);
  EXPECT_TRUE(p("1.36").topology_hints_device_numa_only);
  EXPECT_FALSE(p("1.34").max_allowable_numa_nodes_ga);
  EXPECT_TRUE(p("1.35").max_allowable_numa_nodes_ga);
  EXPECT_TRUE(p("1.31").max_allowable_numa_nodes_option);
  EXPECT_FALSE(p("1.33").validates_utf8);
  EXPECT_TRUE(p("1.34").validates_utf8);
  EXPECT_FALSE(p("1.34").dra_validates_utf8);
  EXPECT_TRUE(p("1.35").dra_validates_utf8);
  EXPECT_TRUE(p("1.37").health_update_per_resource);
  EXPECT_FALSE(p("1.36").health_update_per_resource);
}

TEST(ProfileTest, DeprecatedAliasAndNewerVersions) {
  absl::StatusOr<Profile> alias = ProfileForVersion("1.34+");
  ASSERT_OK(alias);
  EXPECT_EQ(alias->name, "1.34");
  EXPECT_THAT(alias->notice, HasSubstr("deprecated"));
  absl::StatusOr<Profile> newer = ProfileForVersion("1.39.1");
  ASSERT_OK(newer);
  EXPECT_EQ(newer->name, "1.37");
  EXPECT_THAT(newer->notice, HasSubstr("newer than the newest profile; using 1.37"));
  EXPECT_THAT(std::string(ProfileForVersion("1.29").status().message()),
              HasSubstr("older than devmgr emulates"));
  EXPECT_THAT(std::string(ProfileForVersion("2.0").status().message()),
              HasSubstr("unknown kubelet version"));
}

TEST(ProfileTest, VersionLists) {
  EXPECT_THAT(*ExpandVersionList("all"),
              ElementsAre("1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37"));
  EXPECT_THAT(*ExpandVersionList("1.37, 1.33"), ElementsAre("1.33", "1.37"));
  EXPECT_THAT(*ExpandVersionList("1.34-1.36,1.35"), ElementsAre("1.34", "1.35", "1.36"));
  EXPECT_THAT(*ExpandVersionList("1.36"), ElementsAre("1.36"));
  EXPECT_FALSE(ExpandVersionList("1.36-1.34").ok());
  EXPECT_FALSE(ExpandVersionList("1.33,,1.34").ok());
  EXPECT_FALSE(ExpandVersionList("").ok());
}

TEST(FeatureGatesTest, DefaultsPerVersion) {
  auto on = [](const char* v, const char* g) { return ProfileForVersion(v)->gates.Enabled(g); };
  EXPECT_FALSE(on("1.35", kGateResourceHealthStatus));
  EXPECT_TRUE(on("1.36", kGateResourceHealthStatus));
  EXPECT_FALSE(on("1.35", kGateDRAExtendedResource));
  EXPECT_TRUE(on("1.36", kGateDRAExtendedResource));
  EXPECT_FALSE(on("1.33", kGateKubeletPodResourcesGet));
  EXPECT_TRUE(on("1.34", kGateKubeletPodResourcesGet));
  EXPECT_FALSE(on("1.33", kGateKubeletPodResourcesListUseActivePods));
  EXPECT_TRUE(on("1.34", kGateKubeletPodResourcesListUseActivePods));
  EXPECT_TRUE(on("1.30", kGateDevicePluginCDIDevices));
  EXPECT_TRUE(on("1.34", kGateDevicePluginCDIDevices));  // removed after GA: always on
  EXPECT_TRUE(on("1.37", kGateSidecarContainers));       // removed after GA: always on
}

// As the releases' own gate tables have them (kubelet-oracle `feature_gates`,
// docs/profiles.md): KubeletPodResourcesListUseActivePods came in deprecated
// in 1.34, SidecarContainers is gone in 1.37.
TEST(FeatureGatesTest, StagesOfTheReleaseTables) {
  ASSERT_TRUE(GateAt(kGateKubeletPodResourcesListUseActivePods, 34).has_value());
  EXPECT_STREQ(GateAt(kGateKubeletPodResourcesListUseActivePods, 34)->stage, "DEPRECATED");
  EXPECT_TRUE(GateAt(kGateKubeletPodResourcesListUseActivePods, 37)->default_value);
  EXPECT_TRUE(GateAt(kGateSidecarContainers, 36).has_value());
  EXPECT_FALSE(GateAt(kGateSidecarContainers, 37).has_value());
  FeatureGates g(37);
  EXPECT_EQ(g.Set("SidecarContainers=true").message(),
            "unrecognized feature gate: SidecarContainers");
}

// KubeletPodResourcesListUseActivePods is absent from pkg/features/
// kube_features.go (defaultKubernetesFeatureGates) of k8s.io/kubernetes
// v1.30.14, v1.31.14, v1.32.13 and v1.33.13, so component-base's
// featureGate.SetFromMap refuses it there as unknown; 1.34 added it.
TEST(FeatureGatesTest, ListUseActivePodsIsUnknownBefore134) {
  for (int minor : {30, 31, 32, 33}) {
    SCOPED_TRACE(minor);
    EXPECT_FALSE(GateAt(kGateKubeletPodResourcesListUseActivePods, minor).has_value());
    FeatureGates g(minor);
    for (const char* spec : {"KubeletPodResourcesListUseActivePods=true",
                             "KubeletPodResourcesListUseActivePods=false"}) {
      EXPECT_EQ(g.Set(spec).message(),
                "unrecognized feature gate: KubeletPodResourcesListUseActivePods");
    }
    EXPECT_FALSE(g.Enabled(kGateKubeletPodResourcesListUseActivePods));
  }
  FeatureGates g34(34);
  EXPECT_OK(g34.Set("KubeletPodResourcesListUseActivePods=false"));
  EXPECT_FALSE(g34.Enabled(kGateKubeletPodResourcesListUseActivePods));
  // Still known to some version: the version-free check lets it through.
  EXPECT_OK(ValidateFeatureGateSpec("KubeletPodResourcesListUseActivePods=true"));
}

TEST(FeatureGatesTest, SetFollowsComponentBase) {
  FeatureGates g(35);
  ASSERT_OK(g.Set("ResourceHealthStatus=true, DRAExtendedResource=1"));
  EXPECT_TRUE(g.Enabled(kGateResourceHealthStatus));
  EXPECT_TRUE(g.Enabled(kGateDRAExtendedResource));
  EXPECT_EQ(g.Overrides(), "DRAExtendedResource=true,ResourceHealthStatus=true");
  EXPECT_EQ(g.Set("Nope=true").message(), "unrecognized feature gate: Nope");
  EXPECT_EQ(g.Set("ResourceHealthStatus").message(), "missing bool value for ResourceHealthStatus");
  EXPECT_EQ(g.Set("ResourceHealthStatus=yes").message(),
            "invalid value of ResourceHealthStatus=yes, err: strconv.ParseBool: parsing \"yes\": "
            "invalid syntax");
  // An error changes nothing.
  EXPECT_FALSE(g.Set("ResourceHealthStatus=false,Nope=true").ok());
  EXPECT_TRUE(g.Enabled(kGateResourceHealthStatus));
  FeatureGates old(30);
  EXPECT_EQ(old.Set("ResourceHealthStatus=true").message(),
            "unrecognized feature gate: ResourceHealthStatus");
  FeatureGates ga(36);
  EXPECT_EQ(ga.Set("KubeletPodResourcesGet=false").message(),
            "cannot set feature gate KubeletPodResourcesGet to false, feature is locked to true");
  FeatureGates removed(34);
  EXPECT_EQ(removed.Set("DevicePluginCDIDevices=true").message(),
            "unrecognized feature gate: DevicePluginCDIDevices");
  EXPECT_OK(ValidateFeatureGateSpec("DRAExtendedResource=true"));
  EXPECT_FALSE(ValidateFeatureGateSpec("Nope=true").ok());
}

TEST(VersionMatrixTest, DifferencesAndTable) {
  VersionMatrix m({"1.33", "1.34", "1.35", "1.36", "1.37"});
  for (const char* v : {"1.33", "1.34", "1.35", "1.36"}) {
    m.Record("maxsurge", v, "passed");
    m.Record("same", v, "passed");
    m.Record("only-new", v, "skipped");
  }
  m.Record("maxsurge", "1.37", "failed");
  m.Record("same", "1.37", "passed");
  m.Record("only-new", "1.37", "passed");
  EXPECT_THAT(m.Differences(), ElementsAre("passes on 1.33-1.36, fails on 1.37: maxsurge"));
  EXPECT_EQ(m.Ranges({"1.33", "1.35", "1.36"}), "1.33, 1.35-1.36");
  EXPECT_THAT(m.Table(), HasSubstr("1.37           2       1        0      0"));
}

}  // namespace
}  // namespace devmgr
