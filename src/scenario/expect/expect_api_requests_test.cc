// expect.api_requests: parsed from YAML and checked against request records
// made by hand (a claim GET answered 500 by an injected fault, then its
// retry, from two drivers told apart by their User-Agent).
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenario/expect/expectations.h"
#include "scenario/format/scenario_parser.h"

namespace devmgr::scenario {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace expect_api_requests_test {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kClaim[] = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu";
constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";

std::string ScenarioText(const std::string& expect_yaml) {
  return R"(plugins:
  - {name: drv, dra_driver: gpu.example.com, command: my-driver}
steps:
  - check:
    expect:
)" + expect_yaml;
}

Expectations Parse(const std::string& expect_yaml) {
  absl::StatusOr<Scenario> s = ParseScenario(ScenarioText(expect_yaml), "e.yaml");
  EXPECT_OK(s);
  return s.ok() ? s->steps[0].expect : Expectations{};
}

std::string Err(const std::string& expect_yaml) {
  absl::StatusOr<Scenario> s = ParseScenario(ScenarioText(expect_yaml), "e.yaml");
  EXPECT_FALSE(s.ok());
  return s.ok() ? "" : std::string(s.status().message());
}

apiserver::RequestRecord Req(uint64_t seq, std::string method, std::string target, int status,
                             std::string agent, std::string fault = "") {
  apiserver::RequestRecord r;
  r.seq = seq;
  r.method = std::move(method);
  r.target = std::move(target);
  r.status = status;
  r.user_agent = std::move(agent);
  r.fault = std::move(fault);
  return r;
}

// Driver a publishes and watches; its claim GET fails (fault), then
// succeeds; driver b lists. The step began after the failed GET.
Observed World() {
  Observed o;
  o.api_requests_since_start = {
      Req(1, "POST", kSlices, 201, "driver-a"),
      Req(2, "GET", std::string(kSlices) + "?watch=true&resourceVersion=3", 200, "driver-a"),
      Req(3, "GET", kClaim, 500, "driver-a", "method=GET,error=500"),
      Req(4, "GET", std::string(kSlices) + "?fieldSelector=spec.driver%3Db", 200, "driver-b"),
      Req(5, "GET", kClaim, 200, "driver-a"),
  };
  o.api_requests_since_step = {o.api_requests_since_start.begin() + 3,
                               o.api_requests_since_start.end()};
  return o;
}

TEST(ApiRequestsExpectation, TheFailedCallThenItsRetryInOrder) {
  const std::string ok = std::string(R"(      api_requests:
        since: start
        sequence:
          - {method: GET, path: )") +
                         kClaim + R"(, code: 500, fault: true, user_agent: driver-a}
          - {method: GET, path: {regex: /resourceclaims/gpu$}, code: 200, fault: false}
        counts:
          - {method: GET, path: {regex: /resourceclaims/}, count: 2}
          - {fault: true, count: 1}
          - {watch: true, user_agent: driver-a, count: 1}
          - {user_agent: {regex: "^driver-"}, count: 5}
)";
  EXPECT_THAT(CheckExpectations(Parse(ok), World()), IsEmpty());
  // The shorthand is the sequence, since the step began.
  EXPECT_THAT(CheckExpectations(Parse(R"(      api_requests:
        - {user_agent: driver-b}
        - {method: GET, code: 200, user_agent: driver-a}
)"),
                                World()),
              IsEmpty());
}

TEST(ApiRequestsExpectation, FailuresNameTheEntryAndListTheRequests) {
  // Since the step: the failed GET is before it.
  std::vector<Failure> f = CheckExpectations(Parse(R"(      api_requests:
        sequence: [{code: 500}]
        counts: [{method: POST, count: 1}]
)"),
                                             World());
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].what, "api_requests.counts[0]");
  EXPECT_EQ(f[0].expected, "1 request(s) {method POST}");
  EXPECT_THAT(f[0].actual, HasSubstr("0 [GET /apis/resource.k8s.io/v1/resourceslices?field"));
  EXPECT_EQ(f[1].what, "api_requests.sequence[0]");
  EXPECT_EQ(f[1].expected, "a request {code 500} in this order");
  EXPECT_EQ(f[1].loc.line, 7);
  // Out of order: the 200 comes after the 500, not before.
  f = CheckExpectations(Parse(R"(      api_requests:
        since: start
        sequence: [{code: 200, method: GET, path: {regex: claims}}, {fault: true}]
)"),
                        World());
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].what, "api_requests.sequence[1]");
  EXPECT_THAT(f[0].actual, HasSubstr(std::string("GET ") + kClaim + " 500 (injected)"));
}

TEST(ApiRequestsExpectation, MistakesHavePositions) {
  EXPECT_THAT(Err("      api_requests: {since: start}\n"),
              HasSubstr("e.yaml:6:21: expect.api_requests needs sequence or counts"));
  EXPECT_THAT(Err("      api_requests: [{method: GETT}]\n"),
              HasSubstr("e.yaml:6:31: unknown HTTP method 'GETT' (did you mean 'GET'?)"));
  EXPECT_THAT(Err("      api_requests: [{cod: 500}]\n"),
              HasSubstr("unknown key 'cod' in an API request (did you mean 'code'?)"));
  EXPECT_THAT(Err("      api_requests: [{code: 700}]\n"),
              HasSubstr("code must be an HTTP status (100-599)"));
  EXPECT_THAT(Err("      api_requests: {counts: [{method: GET}]}\n"),
              HasSubstr("an api_requests count needs count"));
  EXPECT_THAT(Err("      api_requests: [{method: GET, count: 1}]\n"),
              HasSubstr("unknown key 'count' in an API request"));
  EXPECT_THAT(Err("      api_requests: {since: now, sequence: [{code: 1}]}\n"),
              HasSubstr("since must be step or start"));
}

}  // namespace expect_api_requests_test
}  // namespace devmgr::scenario
