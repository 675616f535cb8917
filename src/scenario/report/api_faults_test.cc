// The report of injected API faults: which request a fault fired on, and
// the next requests of the same client.
#include "scenario/report/api_faults.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenario/report/report.h"

namespace devmgr::scenario {
// Named, not anonymous: the test binaries are unity builds.
namespace api_faults_test {

using ::testing::ElementsAre;

constexpr char kClaim[] = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu";
constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";
const absl::Time kT0 = absl::FromUnixMillis(1'800'000'000'000);

apiserver::RequestRecord Req(uint64_t seq, std::string method, std::string target, int status,
                             std::string agent, int64_t ms, std::string fault = "") {
  apiserver::RequestRecord r;
  r.seq = seq;
  r.method = std::move(method);
  r.target = std::move(target);
  r.status = status;
  r.user_agent = std::move(agent);
  r.time = kT0 + absl::Milliseconds(ms);
  r.fault = std::move(fault);
  return r;
}

// Step 1 began with request 1, step 2 with request 4.
int StepOf(uint64_t seq) { return seq >= 4 ? 2 : 1; }

TEST(ApiFaultReport, TheFailedCallAndTheSameClientsNextRequests) {
  const std::vector<apiserver::RequestRecord> reqs = {
      Req(1, "GET", kClaim, 500, "driver-a", 0, "method=GET,error=500"),
      Req(2, "GET", kSlices, 200, "driver-b", 5),  // another client: not listed
      Req(3, "GET", std::string(kSlices) + "?fieldSelector=x", 200, "driver-a", 120),
      Req(4, "GET", kClaim, 200, "driver-a", 1250),
      Req(5, "POST", kSlices, 201, "driver-a", 1300),  // after the repeat: counted only
  };
  std::vector<ApiFaultFiring> f = FindApiFaultFirings(reqs, StepOf);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].step, 1);
  EXPECT_TRUE(f[0].repeated);
  EXPECT_EQ(f[0].later, 3u);
  EXPECT_THAT(
      ApiFaultLines(f[0]),
      ElementsAre(std::string("API fault 'method=GET,error=500' fired in step 1 at "
                              "2027-01-15T08:00:00.000Z: GET ") +
                      kClaim + " answered 500 (client driver-a)",
                  "  then +120 ms: GET /apis/resource.k8s.io/v1/resourceslices?fieldSelector=x 200",
                  std::string("  then +1250 ms: GET ") + kClaim + " 200 (the same call again)",
                  "  (1 more request(s) from this client after these)"));
  const nlohmann::ordered_json j = ApiFaultJson(f[0]);
  EXPECT_EQ(j["fault"], "method=GET,error=500");
  EXPECT_EQ(j["status"], 500);
  EXPECT_EQ(j["userAgent"], "driver-a");
  ASSERT_EQ(j["after"].size(), 2u);
  EXPECT_EQ(j["after"][1]["afterMs"], 1250);
  EXPECT_EQ(j["repeated"], true);
  EXPECT_EQ(j["laterRequests"], 3);
}

TEST(ApiFaultReport, AClientThatNeverCameBackOrDidOtherThings) {
  std::vector<ApiFaultFiring> f =
      FindApiFaultFirings({Req(1, "POST", kSlices, 409, "a", 0, "method=POST,error=409"),
                           Req(4, "POST", kSlices, 500, "b", 10, "method=POST,error=500,skip=1"),
                           Req(5, "GET", kSlices, 200, "b", 30)},
                          StepOf);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_THAT(ApiFaultLines(f[0]), ElementsAre(::testing::HasSubstr("fired in step 1"),
                                               "  then: no further request from this client"));
  EXPECT_EQ(f[1].step, 2);
  EXPECT_FALSE(f[1].repeated);
  EXPECT_THAT(
      ApiFaultLines(f[1]),
      ElementsAre(::testing::HasSubstr("POST /apis/resource.k8s.io/v1/resourceslices answered 500"),
                  "  then +20 ms: GET /apis/resource.k8s.io/v1/resourceslices 200",
                  "  no later POST /apis/resource.k8s.io/v1/resourceslices from this client "
                  "among its 1 next request(s)"));
}

TEST(ApiFaultReport, InTheStepLogAndTheJsonReport) {
  ScenarioResult r;
  r.name = "s";
  r.file = "s.yaml";
  r.api_faults = FindApiFaultFirings({Req(1, "GET", kClaim, 500, "a", 0, "error=500")}, StepOf);
  EXPECT_THAT(StepLog(r), ::testing::HasSubstr("    API fault 'error=500' fired in step 1"));
  const nlohmann::ordered_json j = ResultsJson({r});
  ASSERT_EQ(j["scenarios"][0]["apiFaults"].size(), 1u);
  EXPECT_EQ(j["scenarios"][0]["apiFaults"][0]["target"], kClaim);
}

}  // namespace api_faults_test
}  // namespace devmgr::scenario
