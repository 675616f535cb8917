#include "pod/pod.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pod/resource_validation.h"

namespace devmgr::pod {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr char kDev[] = "example.com/dev";

Container C(const std::string& name, int64_t n, bool restartable = false) {
  Container c;
  c.name = name;
  if (n >= 0) c.limits[kDev] = n;
  c.restartable = restartable;
  return c;
}

TEST(PodLimitsTest, AppContainersAreSummed) {
  Pod pod;
  pod.containers = {C("a", 1), C("b", 2), C("c", -1)};
  EXPECT_THAT(PodLimits(pod), ElementsAre(Pair(kDev, 3)));
}

TEST(PodLimitsTest, InitContainerMaxWins) {
  Pod pod;
  pod.init_containers = {C("i1", 4), C("i2", 2)};
  pod.containers = {C("a", 1), C("b", 2)};
  EXPECT_THAT(PodLimits(pod), ElementsAre(Pair(kDev, 4)));
  pod.init_containers = {C("i1", 2)};
  EXPECT_THAT(PodLimits(pod), ElementsAre(Pair(kDev, 3)));
}

TEST(PodLimitsTest, SidecarsAddToAppsAndToLaterInitContainers) {
  Pod pod;
  // sidecar s1 (2) runs with app (1): 3. Init i2 after s1: 2 + 3 = 5.
  pod.init_containers = {C("s1", 2, true), C("i2", 3)};
  pod.containers = {C("a", 1)};
  EXPECT_THAT(PodLimits(pod), ElementsAre(Pair(kDev, 5)));
  // An init container before the sidecar does not add it: max(4, 2, 2+1) = 4.
  pod.init_containers = {C("i0", 4), C("s1", 2, true)};
  EXPECT_THAT(PodLimits(pod), ElementsAre(Pair(kDev, 4)));
  // Only sidecars: cumulative sum 1+1 = 2, plus app 1 -> 3.
  pod.init_containers = {C("s1", 1, true), C("s2", 1, true)};
  EXPECT_THAT(PodLimits(pod), ElementsAre(Pair(kDev, 3)));
}

TEST(PodLimitsTest, ResourcesAreIndependentAndZeroKept) {
  Pod pod;
  Container a = C("a", 0);
  a.limits["cpu"] = 2;
  Container i = C("i", -1);
  i.limits["cpu"] = 3;
  pod.init_containers = {i};
  pod.containers = {a};
  EXPECT_THAT(PodLimits(pod), ElementsAre(Pair("cpu", 3), Pair(kDev, 0)));
  EXPECT_THAT(PodLimits(Pod()), IsEmpty());
}

TEST(PodTest, PhaseNames) {
  EXPECT_EQ(PhaseName(Phase::kPending), "Pending");
  EXPECT_EQ(PhaseName(Phase::kFailed), "Failed");
}

std::map<std::string, Quantity> Qs(std::initializer_list<std::pair<const char*, const char*>> in) {
  std::map<std::string, Quantity> out;
  for (const auto& [k, v] : in) out[k] = *Quantity::Parse(v);
  return out;
}

TEST(ResourceValidationTest, Texts) {
  auto errs = ValidateResourceRequirements(Qs({{"nvidia.com/gpu", "2"}}),
                                           Qs({{"nvidia.com/gpu", "2000m"}}), "r");
  EXPECT_THAT(errs, IsEmpty());
  errs = ValidateResourceRequirements(Qs({{"hugepages-2Mi", "4Mi"}}),
                                      Qs({{"hugepages-2Mi", "2Mi"}}), "r");
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].text,
            "r.requests: Invalid value: \"2Mi\": must be equal to hugepages-2Mi limit of 4Mi");
  errs = ValidateResourceRequirements(Qs({{"example.com/x", "-1"}}), {}, "r");
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].text,
            "r.limits[example.com/x]: Invalid value: \"-1\": must be greater than or equal to 0");
  // Past the milli range MilliValue saturates, so Go's check rejects 10P.
  errs = ValidateResourceRequirements(Qs({{"example.com/x", "10P"}}), {}, "r");
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].text, "r.limits[example.com/x]: Invalid value: \"10P\": must be an integer");
  // kubernetes.io/ names are native: no integer or equality rule.
  errs = ValidateResourceRequirements(Qs({{"kubernetes.io/x", "1"}}),
                                      Qs({{"kubernetes.io/x", "500m"}}), "r");
  EXPECT_THAT(errs, IsEmpty());
}

}  // namespace
}  // namespace devmgr::pod
