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

// A DRA claim's entry (docs/resource-health.md, "DRA devices"): its
// resource IDs are CDI IDs holding the claim's UID, so the list form
// matches them by regex, with Unknown allowed and the message checked.
const std::vector<manager::ResourceHealthStatus> kClaim = {
    {"example.com/gpu", {{"gpu-0", "Healthy"}}},
    {"claim:gpu/r",
     {{"sample.dra.devmgr.io/gpu=5f3a-gpu-0", "Unhealthy", "ECC errors"},
      {"sample.dra.devmgr.io/gpu=5f3a-gpu-1", "Unknown", std::nullopt}}}};

TEST(HealthCheckTest, ClaimEntriesMatchByRegexWithUnknownAndMessages) {
  auto e = Parse(
      "              allocated_resources_status:\n"
      "                example.com/gpu: {gpu-0: Healthy}\n"
      "                claim:gpu/r:\n"
      "                  - {id: {regex: 'gpu-1$'}, health: Unknown}\n"
      "                  - {id: {regex: 'gpu-0$'}, health: Unhealthy, message: {regex: ECC}}\n");
  ASSERT_OK(e);
  EXPECT_THAT(CheckExpectations(*e, World(kClaim)), IsEmpty());

  auto wrong = Parse(
      "              allocated_resources_status:\n"
      "                example.com/gpu: {gpu-0: Healthy}\n"
      "                claim:gpu/r:\n"
      "                  - {id: {regex: 'gpu-0$'}, health: Healthy}\n"
      "                  - {id: {regex: 'gpu-1$'}, health: Unknown}\n");
  ASSERT_OK(wrong);
  auto f = CheckExpectations(*wrong, World(kClaim));
  ASSERT_THAT(f, SizeIs(1));
  EXPECT_EQ(f[0].expected,
            "[example.com/gpu: gpu-0=Healthy; claim:gpu/r: [regex /gpu-0$/=Healthy regex "
            "/gpu-1$/=Unknown]]");
  EXPECT_EQ(f[0].actual,
            "[claim:gpu/r: sample.dra.devmgr.io/gpu=5f3a-gpu-0=Unhealthy (message \"ECC "
            "errors\") sample.dra.devmgr.io/gpu=5f3a-gpu-1=Unknown; example.com/gpu: "
            "gpu-0=Healthy]");

  // Exactly these devices: one missing fails, and so does an entry left out.
  auto one = Parse(
      "              allocated_resources_status:\n"
      "                example.com/gpu: {gpu-0: Healthy}\n"
      "                claim:gpu/r: [{id: {regex: 'gpu-0$'}, health: Unhealthy}]\n");
  ASSERT_OK(one);
  EXPECT_THAT(CheckExpectations(*one, World(kClaim)), SizeIs(1));
  auto no_claim = Parse(
      "              allocated_resources_status:\n"
      "                example.com/gpu: {gpu-0: Healthy}\n");
  ASSERT_OK(no_claim);
  EXPECT_THAT(CheckExpectations(*no_claim, World(kClaim)), SizeIs(1));

  // Unknown only for claim entries; the list form names its keys.
  auto bad = Parse(
      "              allocated_resources_status:\n"
      "                claim:gpu/r: [{id: x, health: Sick}]\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("allocated_resources_status['claim:gpu/r']: health must be Healthy or "
                        "Unhealthy or Unknown, not 'Sick'"));
  auto key = Parse(
      "              allocated_resources_status:\n"
      "                claim:gpu/r: [{id: x, helth: Unknown}]\n");
  ASSERT_FALSE(key.ok());
  EXPECT_THAT(std::string(key.status().message()), HasSubstr("did you mean 'health'"));
}

}  // namespace health_check_test
}  // namespace devmgr::scenario
