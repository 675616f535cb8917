#include "scenario/report/report.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tinyxml2.h"

namespace devmgr::scenario {
namespace {

std::vector<ScenarioResult> Results() {
  ScenarioResult ok;
  ok.name = "basic";
  ok.file = "scenarios/basic.yaml";
  ok.kubelet_version = "1.32";
  ok.duration = absl::Milliseconds(1500);
  StepResult s;
  s.index = 1;
  s.kind = "admit";
  s.description = "admit pod default/p";
  s.notes = {"c: example.com/gpu=[a]"};
  ok.steps.push_back(s);

  ScenarioResult bad = ok;
  bad.name = "hang <&> \"quoted\"";
  bad.outcome = Outcome::kFailed;
  bad.message = "step 1 failed: did not finish within 2s";
  bad.steps[0].outcome = Outcome::kFailed;
  bad.steps[0].message = "control byte \x01 here";
  bad.steps[0].failures.push_back(
      Failure{Location{"scenarios/basic.yaml", 3, 5}, "pods['p'].admitted", "true", "false"});
  bad.log_tail = {"E0101 line"};
  bad.plugin_output["gpu"] = {"[killed by signal 9]", "out"};

  ScenarioResult skipped;
  skipped.name = "other";
  skipped.file = "scenarios/other.yaml";
  skipped.outcome = Outcome::kSkipped;
  skipped.message = "filtered out";

  ScenarioResult err = skipped;
  err.name = "env";
  err.outcome = Outcome::kError;
  err.message = "no private mount namespace";
  return {ok, bad, skipped, err};
}

TEST(Report, JUnitIsWellFormedAndCounts) {
  const std::string xml = JUnitXml(Results());
  tinyxml2::XMLDocument doc;
  ASSERT_EQ(doc.Parse(xml.c_str()), tinyxml2::XML_SUCCESS) << xml;
  const tinyxml2::XMLElement* root = doc.FirstChildElement("testsuites");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->IntAttribute("tests"), 4);
  EXPECT_EQ(root->IntAttribute("failures"), 1);
  EXPECT_EQ(root->IntAttribute("errors"), 1);
  EXPECT_EQ(root->IntAttribute("skipped"), 1);
  const tinyxml2::XMLElement* suite = root->FirstChildElement("testsuite");
  ASSERT_NE(suite, nullptr);
  EXPECT_STREQ(suite->Attribute("name"), "scenarios/basic.yaml");
  EXPECT_EQ(suite->IntAttribute("tests"), 2);
  const tinyxml2::XMLElement* tc = suite->FirstChildElement("testcase");
  EXPECT_STREQ(tc->Attribute("name"), "basic");
  EXPECT_STREQ(tc->Attribute("time"), "1.500");
  EXPECT_EQ(tc->FirstChildElement("failure"), nullptr);
  tc = tc->NextSiblingElement("testcase");
  EXPECT_STREQ(tc->Attribute("name"), "hang <&> \"quoted\"");
  const tinyxml2::XMLElement* f = tc->FirstChildElement("failure");
  ASSERT_NE(f, nullptr);
  EXPECT_THAT(f->GetText(), ::testing::HasSubstr("expected: true"));
  EXPECT_THAT(tc->FirstChildElement("system-out")->GetText(),
              ::testing::HasSubstr("control byte \\x01 here"));
  EXPECT_THAT(tc->FirstChildElement("system-err")->GetText(), ::testing::HasSubstr("E0101 line"));
  suite = suite->NextSiblingElement("testsuite");
  ASSERT_NE(suite, nullptr);
  EXPECT_NE(suite->FirstChildElement("testcase")->FirstChildElement("skipped"), nullptr);
  EXPECT_NE(suite->FirstChildElement("testcase")->NextSiblingElement()->FirstChildElement("error"),
            nullptr);
}

TEST(Report, JsonSchema) {
  const nlohmann::ordered_json j = ResultsJson(Results());
  EXPECT_EQ(j["schemaVersion"], 1);
  EXPECT_EQ(j["summary"]["total"], 4);
  EXPECT_EQ(j["summary"]["passed"], 1);
  EXPECT_EQ(j["summary"]["failed"], 1);
  EXPECT_EQ(j["summary"]["errors"], 1);
  EXPECT_EQ(j["summary"]["skipped"], 1);
  const auto& bad = j["scenarios"][1];
  EXPECT_EQ(bad["outcome"], "failed");
  EXPECT_EQ(bad["kubeletVersion"], "1.32");
  EXPECT_EQ(bad["steps"][0]["failures"][0]["location"], "scenarios/basic.yaml:3:5");
  EXPECT_EQ(bad["steps"][0]["failures"][0]["expected"], "true");
  EXPECT_EQ(bad["pluginOutput"]["gpu"][1], "out");
  // Serializable (invalid UTF-8 never reaches here: messages are ours).
  EXPECT_FALSE(j.dump().empty());
}

TEST(Report, Summary) { EXPECT_EQ(Summary(Results()), "1 passed, 1 failed, 1 error, 1 skipped"); }

}  // namespace
}  // namespace devmgr::scenario
