// Fault injection: the spec language, which request a fault fires on, and
// what the endpoint then answers over real HTTP.
#include "apiserver/faults.h"

#include <string>

#include "apiserver/server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace devmgr::apiserver {
namespace {

using nlohmann::json;
using testing::HasSubstr;

constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";

TEST(ParseFaultTest, ReadsEveryKey) {
  absl::StatusOr<Fault> f = ParseFault(
      "method=PUT,path=/apis/resource.k8s.io/v1/resourceslices,error=409,times=2,skip=1");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->method, "PUT");
  EXPECT_EQ(f->path_prefix, kSlices);
  EXPECT_EQ(f->action, Fault::Action::kError);
  EXPECT_EQ(f->code, 409);
  EXPECT_EQ(f->times, 2);
  EXPECT_EQ(f->skip, 1);
  f = ParseFault("drop-watch=1.5s");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->action, Fault::Action::kDropWatch);
  EXPECT_EQ(f->duration, absl::Milliseconds(1500));
  EXPECT_EQ(f->watch, true);
}

TEST(ParseFaultTest, RefusesWhatItCannotMean) {
  for (const auto& [spec, why] : std::vector<std::pair<std::string, std::string>>{
           {"method=GET", "give exactly one of error=, delay=, drop-watch=, expire=true"},
           {"error=500,delay=1s", "give exactly one of"},
           {"error=200", "error wants an HTTP code from 400 to 599"},
           {"delay=soon", "delay wants a duration such as 1.5s"},
           {"method=FETCH,error=500", "method FETCH is not one of"},
           {"colour=red,error=500", "unknown key colour"},
           {"expire=true,watch=false", "drop-watch and expire act on watch requests only"},
           {"error=500,times=-1", "times wants a count"},
       }) {
    absl::StatusOr<Fault> f = ParseFault(spec);
    ASSERT_FALSE(f.ok()) << spec;
    EXPECT_THAT(std::string(f.status().message()), HasSubstr(why)) << spec;
    EXPECT_THAT(std::string(f.status().message()), HasSubstr("--api-fault \"" + spec + "\""));
  }
}

TEST(FaultInjectorTest, FiresOnTheMatchesItNamesAfterTheSkippedOnes) {
  FaultInjector faults;
  faults.Add(
      *ParseFault("method=PUT,path=/apis/resource.k8s.io/v1/resourceslices,error=409,"
                  "times=2,skip=1"));
  auto put = [&] { return faults.Decide("PUT", std::string(kSlices) + "/a", false, "", 7); };
  EXPECT_EQ(faults.Decide("GET", kSlices, false, "", 7).fired, "");
  EXPECT_EQ(put().fired, "");  // skipped
  FaultDecision d = put();
  ASSERT_TRUE(d.error.has_value());
  EXPECT_EQ(d.error->code, 409);
  EXPECT_EQ(d.error->reason, "Conflict");
  EXPECT_TRUE(put().error.has_value());
  EXPECT_FALSE(put().error.has_value());  // fired twice
}

TEST(FaultInjectorTest, ExpireAnswersAWatchWithTheRealMessage) {
  FaultInjector faults;
  faults.Add(*ParseFault("expire=true"));
  EXPECT_EQ(faults.Decide("GET", kSlices, false, "5", 9).fired, "");  // not a watch
  FaultDecision d = faults.Decide("GET", kSlices, true, "5", 9);
  ASSERT_TRUE(d.error.has_value());
  EXPECT_EQ(d.error->code, 410);
  EXPECT_EQ(d.error->reason, "Expired");
  EXPECT_EQ(d.error->message, "too old resource version: 5 (9)");
}

class FaultServerTest : public testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> url = server_.Start(kDefaultApiListen);
    ASSERT_TRUE(url.ok()) << url.status();
    url_ = *url;
  }
  RealClock clock_;
  ApiServer server_{clock_};
  std::string url_;
};

TEST_F(FaultServerTest, AnInjectedErrorIsAStatusAndIsRecorded) {
  server_.faults().Add(*ParseFault("method=GET,error=503"));
  httplib::Client c(url_);
  auto res = c.Get(kSlices);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  json status = json::parse(res->body);
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["reason"], "ServiceUnavailable");
  EXPECT_EQ(status["code"], 503);
  EXPECT_THAT(status["message"].get<std::string>(),
              HasSubstr("a fault devmgr injected on GET /apis/resource.k8s.io/v1/resourceslices"));
  res = c.Get(kSlices);  // fired once
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  std::vector<RequestRecord> r = server_.Requests();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].fault, "method=GET,error=503");
  EXPECT_EQ(r[1].fault, "");
  // Numbered in order, with the (real) time each arrived.
  EXPECT_EQ(r[0].seq, 1u);
  EXPECT_EQ(r[1].seq, 2u);
  EXPECT_EQ(server_.RequestsRecorded(), 2u);
  EXPECT_LE(r[0].time, r[1].time);
  EXPECT_GT(r[0].time, absl::Now() - absl::Minutes(1));
}

TEST(AddFaultSpecsTest, AddsAllOrNone) {
  FaultInjector faults;
  absl::Status s = AddFaultSpecs(faults, {"method=GET,error=500", "method=GET"});
  EXPECT_THAT(std::string(s.message()), HasSubstr("--api-fault \"method=GET\""));
  EXPECT_EQ(faults.Decide("GET", kSlices, false, "", 1).fired, "");  // none added
  ASSERT_TRUE(AddFaultSpecs(faults, {"method=POST,error=409", "method=GET,delay=1ms"}).ok());
  EXPECT_EQ(faults.Decide("GET", kSlices, false, "", 1).fired, "method=GET,delay=1ms");
  EXPECT_EQ(faults.Decide("POST", kSlices, false, "", 1).fired, "method=POST,error=409");
}

TEST_F(FaultServerTest, ADroppedWatchEndsAfterItsTime) {
  server_.faults().Add(*ParseFault("drop-watch=300ms"));
  httplib::Client c(url_);
  const absl::Time start = absl::Now();
  std::string received;
  auto res = c.Get(std::string(kSlices) +
                       "?sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                       "&allowWatchBookmarks=true&watch=true&timeoutSeconds=60",
                   [&](const char* data, size_t n) {
                     received.append(data, n);
                     return true;
                   });
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(received, HasSubstr("BOOKMARK"));       // the initial events came first
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));  // long before timeoutSeconds
}

}  // namespace
}  // namespace devmgr::apiserver
