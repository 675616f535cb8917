// The `allocated_resources_status` container expectation.
#include "scenario/expect/health_check.h"

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenario/expect/expectations.h"
#include "scenario/format/scenario_testutil.h"

namespace devmgr::scenario {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace health_check_test {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

absl::StatusOr<Expectations> Parse(const std::string& container_yaml) {
  absl::StatusOr<Scenario> s = testutil::ParseCheckStep(
      "      pods:\n        train:\n          containers:\n            main:\n" + container_yaml,
      "h.yaml");
  if (!s.ok()) return s.status();
  return s->steps[0].expect;
}

Observed World(std::optional<std::vector<manager::ResourceHealthStatus>> main) {
  Observed o;
  node::PodRecord r;
  r.pod.uid = "u1";
  r.pod.name = "train";
  r.pod.namespace_ = "default";
  r.phase = pod::Phase::kRunning;
  node::ContainerRecord c;
  c.name = "main";
  c.running = true;
  r.containers.push_back(c);
  o.pods.push_back(r);
  o.active_pod_uids = {"u1"};
  o.pod_statuses["u1"] = {{"main", std::move(main)}};
  return o;
}

const std::vector<manager::ResourceHealthStatus> kOneBad = {
    {"example.com/gpu", {{"gpu-1", "Unhealthy"}, {"gpu-0", "Healthy"}}}};

TEST(HealthCheckTest, MatchesOrderFree) {
  auto e = Parse(
      "              allocated_resources_status:\n"
      "                example.com/gpu: {gpu-0: Healthy, gpu-1: Unhealthy}\n");
  ASSERT_OK(e);
  EXPECT_THAT(CheckExpectations(*e, World(kOneBad)), IsEmpty());
}

TEST(HealthCheckTest, AWrongHealthIsReportedWithTheObservedStatus) {
  auto e = Parse(
      "              allocated_resources_status:\n"
      "                example.com/gpu: {gpu-0: Healthy, gpu-1: Healthy}\n");
  ASSERT_OK(e);
  auto f = CheckExpectations(*e, World(kOneBad));
  ASSERT_THAT(f, SizeIs(1));
  EXPECT_EQ(f[0].what, "pods['train'].containers['main'].allocated_resources_status");
  EXPECT_EQ(f[0].expected, "[example.com/gpu: gpu-0=Healthy gpu-1=Healthy]");
  EXPECT_EQ(f[0].actual, "[example.com/gpu: gpu-0=Healthy gpu-1=Unhealthy]");
  EXPECT_EQ(f[0].loc.ToString(), "h.yaml:10:13");
}

TEST(HealthCheckTest, ExtraOrMissingResourcesAndDevicesFail) {
  auto e = Parse(
      "              allocated_resources_status:\n"
      "                example.com/gpu: {gpu-0: Healthy}\n");
  ASSERT_OK(e);
  EXPECT_THAT(CheckExpectations(*e, World(kOneBad)), SizeIs(1));
  auto two = kOneBad;
  two.push_back({"example.com/nic", {{"n0", "Healthy"}}});
  auto e2 = Parse(
      "              allocated_resources_status:\n"
      "                example.com/gpu: {gpu-0: Healthy, gpu-1: Unhealthy}\n");
  EXPECT_THAT(CheckExpectations(*e2, World(two)), SizeIs(1));
}

TEST(HealthCheckTest, NoneMeansTheFieldIsAbsent) {
  auto e = Parse("              allocated_resources_status: none\n");
  ASSERT_OK(e);
  EXPECT_THAT(CheckExpectations(*e, World(std::nullopt)), IsEmpty());
  auto f = CheckExpectations(*e, World(kOneBad));
  ASSERT_THAT(f, SizeIs(1));
  EXPECT_EQ(f[0].expected, "none");
  auto e2 = Parse(
      "              allocated_resources_status:\n"
      "                example.com/gpu: {gpu-0: Healthy}\n");
  auto f2 = CheckExpectations(*e2, World(std::nullopt));
  ASSERT_THAT(f2, SizeIs(1));
  EXPECT_THAT(f2[0].actual, HasSubstr("no allocatedResourcesStatus"));
}

TEST(HealthCheckTest, NotesShowWhatWasObserved) {
  auto e = Parse(
      "              allocated_resources_status:\n"
      "                example.com/gpu: {gpu-0: Healthy, gpu-1: Unhealthy}\n");
  ASSERT_OK(e);
  std::vector<std::string> notes;
  ResourceHealthNotes(*e, World(kOneBad), &notes);
  EXPECT_THAT(notes, ::testing::ElementsAre("pod train container main: allocatedResourcesStatus "
                                            "[example.com/gpu: gpu-0=Healthy gpu-1=Unhealthy]"));
}

TEST(HealthCheckTest, BadInputNamesThePlace) {
  auto e = Parse(
      "              allocated_resources_status:\n"
      "                example.com/gpu: {gpu-0: Unknown}\n");
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(std::string(e.status().message()),
              HasSubstr("h.yaml:12:42: allocated_resources_status['example.com/gpu']['gpu-0']: "
                        "health must be Healthy or Unhealthy"));
  auto e2 = Parse("              allocated_resources_status: [gpu-0]\n");
  ASSERT_FALSE(e2.ok());
  EXPECT_THAT(std::string(e2.status().message()), HasSubstr("h.yaml:11:43"));
  auto e3 = Parse("              allocated_resource_status: none\n");
  ASSERT_FALSE(e3.ok());
  EXPECT_THAT(std::string(e3.status().message()),
              HasSubstr("did you mean 'allocated_resources_status'"));
}

}  // namespace health_check_test
}  // namespace devmgr::scenario
