#include "conformance/report.h"

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace devmgr::conformance {
namespace {

using ::testing::HasSubstr;

RunReport SampleReport() {
  RunReport r;
  r.target = "--plugin 'p'";
  r.kubelet_version = "1.32";
  r.started = absl::FromUnixSeconds(1700000000);
  r.duration = absl::Seconds(3);
  CheckResult pass{"registration.version",
                   "Register sends version",
                   Level::kMust,
                   {},
                   Outcome::Pass("version \"v1beta1\""),
                   absl::Milliseconds(20)};
  CheckResult fail{"law.size",
                   "fits 4 MiB",
                   Level::kMust,
                   {},
                   Outcome::Fail("too big <&>").Evidence("80000 device(s)"),
                   absl::Milliseconds(30)};
  fail.outcome.figures.push_back({"largest", "5 MiB"});
  CheckResult should{"law.no-resend",          "no re-sends",   Level::kShould, {"[Slow]"},
                     Outcome::Fail("re-sent"), absl::Seconds(1)};
  CheckResult skip{"prestart.timely",   "prestart", Level::kMust, {}, Outcome::Skip("not required"),
                   absl::ZeroDuration()};
  r.results = {pass, fail, should, skip};
  return r;
}

TEST(ReportTest, Counts) {
  RunReport r = SampleReport();
  EXPECT_EQ(r.Count(Status::kFail), 2);
  EXPECT_EQ(r.Count(Level::kMust, Status::kFail), 1);
  EXPECT_FALSE(r.MustPassed());
  r.results.erase(r.results.begin() + 1);
  EXPECT_TRUE(r.MustPassed());
}

TEST(ReportTest, SummaryTable) {
  const std::string t = SummaryTable(SampleReport());
  EXPECT_THAT(t, HasSubstr("law.size              MUST    FAIL      0.03s  too big <&>\n"));
  EXPECT_THAT(t, HasSubstr("| 80000 device(s)\n"));
  EXPECT_THAT(t, HasSubstr("4 checks: 1 passed, 2 failed (1 MUST, 1 SHOULD, 0 INFO), 1 skipped"));
  EXPECT_THAT(t, HasSubstr("RESULT: FAIL (1 MUST check(s) failed)\n"));
}

TEST(ReportTest, JUnit) {
  const std::string x = JUnitXml(SampleReport());
  EXPECT_THAT(x, HasSubstr("<testsuite name=\"devmgr-conformance\" tests=\"4\" failures=\"2\" "
                           "errors=\"0\" skipped=\"1\" time=\"3.000\""));
  EXPECT_THAT(x, HasSubstr("<testcase classname=\"conformance.law\" name=\"[MUST] law.size: fits "
                           "4 MiB\" time=\"0.030\">"));
  EXPECT_THAT(x, HasSubstr("<failure message=\"too big &lt;&amp;&gt;\" type=\"MUST\">"));
  EXPECT_THAT(x, HasSubstr("80000 device(s)"));
  EXPECT_THAT(x, HasSubstr("name=\"[SHOULD] law.no-resend: no re-sends [Slow]\""));
  EXPECT_THAT(x, HasSubstr("<skipped message=\"not required\"/>"));
  EXPECT_THAT(x, HasSubstr("largest: 5 MiB"));
}

TEST(ReportTest, Json) {
  auto j = nlohmann::json::parse(JsonReport(SampleReport()));
  EXPECT_EQ(j["passed"], false);
  EXPECT_EQ(j["summary"]["mustFailed"], 1);
  EXPECT_EQ(j["checks"][1]["id"], "law.size");
  EXPECT_EQ(j["checks"][1]["status"], "FAIL");
  EXPECT_EQ(j["checks"][1]["figures"]["largest"], "5 MiB");
  EXPECT_EQ(j["checks"][1]["evidence"][0], "80000 device(s)");
  EXPECT_EQ(j["started"], "2023-11-14T22:13:20Z");
}

TEST(ReportTest, ResultsDirWritesDoneLast) {
  char tmpl[] = "/tmp/dmconf-rep-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  ASSERT_OK(WriteResultsDir(SampleReport(), dir));
  std::ifstream done(dir + "/done");
  std::stringstream ss;
  ss << done.rdbuf();
  EXPECT_EQ(ss.str(), dir + "/devmgr-conformance-junit.xml");
  EXPECT_EQ(::access((dir + "/devmgr-conformance.json").c_str(), R_OK), 0);
  for (const char* f : {"/done", "/devmgr-conformance-junit.xml", "/devmgr-conformance.json"}) {
    ::unlink((dir + f).c_str());
  }
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace devmgr::conformance
