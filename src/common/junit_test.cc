#include "common/junit.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::junit {
namespace {

using testing::HasSubstr;
using testing::Not;

TEST(JUnitTest, CountsEachSuiteAndTheTotalsWhenTheRootIsNamed) {
  Document d{"devmgr run", {}};
  d.suites.push_back({"a.yaml", std::nullopt, std::nullopt, {}, {}});
  d.suites[0].cases.push_back({"a.yaml", "ok", "a.yaml", absl::Seconds(1)});
  TestCase failed{"a.yaml",
                  "bad",
                  "",
                  absl::Milliseconds(500),
                  TestCase::Result::kFailure,
                  "want 2 got 1",
                  "ScenarioFailure",
                  "details"};
  d.suites[0].cases.push_back(failed);
  d.suites.push_back({"b.yaml", std::nullopt, std::nullopt, {}, {}});
  TestCase skipped{"b.yaml",       "later", "", absl::ZeroDuration(), TestCase::Result::kSkipped,
                   "only for 1.37"};
  d.suites[1].cases.push_back(skipped);
  const std::string xml = Xml(d);
  EXPECT_THAT(xml, HasSubstr("<testsuites name=\"devmgr run\" tests=\"3\" failures=\"1\" "
                             "errors=\"0\" skipped=\"1\" time=\"1.500\">"));
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"a.yaml\" tests=\"2\" failures=\"1\" errors=\"0\" "
                             "skipped=\"0\" time=\"1.500\">"));
  EXPECT_THAT(xml, HasSubstr("<failure message=\"want 2 got 1\" type=\"ScenarioFailure\">"
                             "details</failure>"));
  EXPECT_THAT(xml, HasSubstr("<skipped message=\"only for 1.37\"/>"));
}

TEST(JUnitTest, AnUnnamedRootHasNoAttributesAndASuiteKeepsItsTimeAndProperties) {
  TestSuite s{"devmgr-conformance", absl::Seconds(12), absl::FromUnixSeconds(0), {{"k", "v"}}, {}};
  s.cases.push_back({"conformance.law", "[MUST] law.size", "", absl::Seconds(1)});
  const std::string xml = Xml({"", {s}});
  EXPECT_THAT(xml, HasSubstr("<testsuites>"));
  EXPECT_THAT(xml, HasSubstr("<testsuite name=\"devmgr-conformance\" tests=\"1\" failures=\"0\" "
                             "errors=\"0\" skipped=\"0\" time=\"12.000\" "
                             "timestamp=\"1970-01-01T00:00:00\">"));
  EXPECT_THAT(xml, HasSubstr("<property name=\"k\" value=\"v\"/>"));
}

TEST(JUnitTest, ControlBytesFromAPluginAreWrittenAsEscapes) {
  TestCase c{"conformance.law",
             "[MUST] law.ids-printable",
             "",
             absl::ZeroDuration(),
             TestCase::Result::kFailure,
             std::string("device \"gpu\x01\"\x1b[0m"),
             "MUST",
             std::string("id gpu\x01")};
  c.system_out = std::string("list 1 \x7f ok\n\x02");
  const std::string xml = Xml({"", {{"s", std::nullopt, std::nullopt, {}, {c}}}});
  EXPECT_THAT(xml, HasSubstr("gpu\\x01"));
  EXPECT_THAT(xml, HasSubstr("\\x1b[0m"));
  EXPECT_THAT(xml, HasSubstr("\\x02"));
  EXPECT_THAT(xml, Not(HasSubstr(std::string(1, '\x01'))));
  EXPECT_EQ(XmlSafe("a\tb\nc\r"), "a\tb\nc\r");
}

}  // namespace
}  // namespace devmgr::junit
