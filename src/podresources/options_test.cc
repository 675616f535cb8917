#include "podresources/options.h"

#include "common/status_testutil.h"
#include "gtest/gtest.h"
#include "podresources/observability.h"

namespace devmgr::podresources {
namespace {

TEST(OptionsTest, ProfileDefaults) {
  for (const char* v : {"1.30", "1.31", "1.32", "1.33"}) {
    Options o = OptionsForProfile(*ProfileForVersion(v));
    EXPECT_FALSE(o.get_enabled) << v;
    EXPECT_FALSE(o.list_active_pods_only) << v;
    EXPECT_TRUE(o.sidecar_containers) << v;
  }
  Options o = OptionsForProfile(*ProfileForVersion("1.34"));
  EXPECT_TRUE(o.get_enabled);
  EXPECT_TRUE(o.list_active_pods_only);
}

// KubeletPodResourcesDynamicResources: off before 1.34, on (beta) in
// 1.34-1.35, GA and locked on from 1.36.
TEST(OptionsTest, DynamicResourcesPerVersion) {
  for (const char* v : {"1.32", "1.33"}) {
    EXPECT_FALSE(OptionsForProfile(*ProfileForVersion(v)).dynamic_resources) << v;
  }
  for (const char* v : {"1.34", "1.35", "1.36", "1.37"}) {
    EXPECT_TRUE(OptionsForProfile(*ProfileForVersion(v)).dynamic_resources) << v;
  }
  // --feature-gates goes through the version's gates (Profile::gates).
  Profile beta = *ProfileForVersion("1.34");
  ASSERT_OK(beta.gates.Set("KubeletPodResourcesDynamicResources=false"));
  EXPECT_FALSE(OptionsForProfile(beta).dynamic_resources);
  ASSERT_OK(beta.gates.Set("KubeletPodResourcesDynamicResources=true"));
  EXPECT_TRUE(OptionsForProfile(beta).dynamic_resources);
  // GA from 1.36: --feature-gates cannot turn it off.
  Profile ga = *ProfileForVersion("1.36");
  EXPECT_EQ(ga.gates.Set("KubeletPodResourcesDynamicResources=false").message(),
            "cannot set feature gate KubeletPodResourcesDynamicResources to false, feature is "
            "locked to true");
}

// A --feature-gates value sets the options through the version's gates, with
// component-base's error texts.
TEST(OptionsTest, FeatureGates) {
  Profile p = *ProfileForVersion("1.34");
  ASSERT_OK(p.gates.Set("KubeletPodResourcesGet=false, KubeletPodResourcesListUseActivePods=F"));
  EXPECT_FALSE(OptionsForProfile(p).get_enabled);
  EXPECT_FALSE(OptionsForProfile(p).list_active_pods_only);
  ASSERT_OK(p.gates.Set("KubeletPodResourcesGet=1"));
  EXPECT_TRUE(OptionsForProfile(p).get_enabled);
  ASSERT_OK(p.gates.Set(""));
  EXPECT_TRUE(OptionsForProfile(p).get_enabled);
  EXPECT_EQ(p.gates.Set("Nope=true").message(), "unrecognized feature gate: Nope");
  EXPECT_EQ(p.gates.Set("KubeletPodResourcesGet").message(),
            "missing bool value for KubeletPodResourcesGet");
  EXPECT_EQ(p.gates.Set("KubeletPodResourcesGet=yes").message(),
            "invalid value of KubeletPodResourcesGet=yes, err: strconv.ParseBool: parsing "
            "\"yes\": invalid syntax");
  // On error nothing changes.
  EXPECT_TRUE(OptionsForProfile(p).get_enabled);
  // Before 1.34 the alpha Get gate is off by default and can be turned on.
  Profile alpha = *ProfileForVersion("1.33");
  ASSERT_OK(alpha.gates.Set("KubeletPodResourcesGet=true"));
  EXPECT_TRUE(OptionsForProfile(alpha).get_enabled);
}

// serve's PodResources gates go through the version's table: 1.30-1.33 have
// no KubeletPodResourcesListUseActivePods (k8s.io/kubernetes v1.30.14,
// v1.31.14, v1.32.13, v1.33.13 pkg/features/kube_features.go) and refuse it.
TEST(OptionsTest, ObservabilityRefusesAGateTheVersionLacks) {
  ObservabilityOptions o;
  o.feature_gates = "KubeletPodResourcesListUseActivePods=true";
  for (const char* v : {"1.30", "1.33"}) {
    auto obs = Observability::Create(*ProfileForVersion(v), o);
    ASSERT_FALSE(obs.ok()) << v;
    EXPECT_EQ(obs.status().message(),
              "unrecognized feature gate: KubeletPodResourcesListUseActivePods");
  }
  EXPECT_OK(Observability::Create(*ProfileForVersion("1.34"), o).status());
}

}  // namespace
}  // namespace devmgr::podresources
