// The catalogue against the in-process reference plugin: the default
// configuration passes every check, and each examples/broken/<id>.yaml
// makes exactly check <id> fail (restart.plugin, whose defect is in how the
// process is run, is covered by tests/e2e/conformance_restart_plugin.sh; the
// SHOULD companions of timed checks, whose examples wait 12 s, by
// verdicts_test.cc with the delays scaled down).
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <set>
#include <string>

#include "common/logging.h"
#include "common/source_dir_testutil.h"
#include "common/status_testutil.h"
#include "conformance/conformance_testutil.h"
#include "conformance/report.h"
#include "conformance/runner.h"
#include "conformance/target.h"
#include "conformance/test_kubelet.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugin/config.h"
#include "plugin/sample_plugin.h"

namespace devmgr::conformance {
namespace {

std::string Example(const std::string& name) {
  return devmgr::testutil::SourcePath("examples/") + name;
}

using testutil::FastTimeouts;
using testutil::TempDir;

// wide: 5 s for registration and the first list instead of FastTimeouts' 500 ms.
RunReport RunAgainst(const std::string& config_path, const std::string& focus = "",
                     bool wide = false) {
  if (const char* v = std::getenv("DEVMGR_TEST_V")) log::Init(std::atoi(v), log::Format::kText);
  if (const char* f = std::getenv("DEVMGR_TEST_FOCUS"); f != nullptr && focus.empty()) {
    return RunAgainst(config_path, f, wide);
  }
  absl::StatusOr<plugin::Config> config = plugin::LoadConfig(config_path);
  EXPECT_OK(config);
  auto target = NewInProcessTarget(*config);
  TempDir dir;
  RunOptions o;
  o.dir = dir.path();
  o.timeouts = FastTimeouts();
  if (wide) o.timeouts.register_within = o.timeouts.first_list_within = absl::Seconds(5);
  o.focus = focus;
  absl::StatusOr<RunReport> report = RunConformance(*target, o);
  EXPECT_OK(report);
  return report.ok() ? *report : RunReport{};
}

std::set<std::string> Failed(const RunReport& r) {
  std::set<std::string> out;
  for (const auto& c : r.results) {
    if (c.outcome.status == Status::kFail) out.insert(c.id);
  }
  return out;
}

TEST(ConformanceTest, ReferencePluginPassesEverything) {
  RunReport r = RunAgainst(Example("sample-plugin.yaml"));
  EXPECT_EQ(r.results.size(), CatalogueEntries().size());
  EXPECT_THAT(Failed(r), ::testing::IsEmpty()) << SummaryTable(r);
  EXPECT_TRUE(r.MustPassed());
  // Only checks that need something the default config does not have skip.
  std::set<std::string> skipped;
  for (const auto& c : r.results) {
    if (c.outcome.status == Status::kSkip) skipped.insert(c.id);
  }
  EXPECT_EQ(skipped, (std::set<std::string>{"allocate.rejects-unhealthy", "prestart.timely"}))
      << SummaryTable(r);
}

class BrokenConfigTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BrokenConfigTest, ExactlyThisCheckFails) {
  const std::string id = GetParam();
  // law.size's 80,004 devices can take a loaded machine (or ASan) over the
  // 500 ms windows to build, register and send (run 3 of a series under load;
  // 595 ms to register under ASan).
  RunReport r = RunAgainst(Example("broken/" + id + ".yaml"), "", id == "law.size");
  EXPECT_EQ(Failed(r), std::set<std::string>{id}) << SummaryTable(r);
  if (std::getenv("DEVMGR_TEST_V") != nullptr) std::cerr << SummaryTable(r);
}

std::vector<std::string> BrokenIds() {
  std::vector<std::string> ids;
  for (const auto& c : CatalogueEntries()) {
    if (c.id != "restart.plugin" && c.parent == nullptr) ids.push_back(c.id);
  }
  return ids;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, BrokenConfigTest, ::testing::ValuesIn(BrokenIds()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '.' || c == '-') c = '_';
                           }
                           return n;
                         });

TEST(ConformanceTest, EveryCheckHasABrokenExample) {
  for (const auto& c : CatalogueEntries()) {
    EXPECT_EQ(::access(Example("broken/" + c.id + ".yaml").c_str(), R_OK), 0) << c.id;
  }
}

TEST(ConformanceTest, CatalogueIdsAreUniqueAndLevelled) {
  std::set<std::string> ids;
  for (const auto& c : CatalogueEntries()) {
    EXPECT_TRUE(ids.insert(c.id).second) << c.id;
    EXPECT_FALSE(c.title.empty()) << c.id;
  }
}

TEST(ConformanceTest, FocusAndSkipSelect) {
  auto s = SelectChecks("^allocate\\.", "concurrent");
  ASSERT_OK(s);
  for (const CheckInfo* c : *s) {
    EXPECT_EQ(c->id.rfind("allocate.", 0), 0u);
    EXPECT_NE(c->id, "allocate.concurrent");
  }
  auto d = SelectChecks("Disruptive", "");
  ASSERT_OK(d);
  EXPECT_EQ(d->size(), 2u);
  auto bad = SelectChecks("(", "");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

// A selected check skipped for want of one that --focus left out: that
// check runs too (marked as not selected), so that a focused CI job cannot
// pass over the defect.
TEST(ConformanceTest, AFocusedRunAlsoRunsTheChecksItsSkipsPointAt) {
  // No ListAndWatch stream ever answers.
  TempDir d;
  const std::string config = d.path() + "/plugin.yaml";
  std::ofstream(config) << "resource: example.com/gpu\ndevices: [{id: gpu-0}]\n"
                           "faults:\n  list_and_watch: {hang: true}\n";
  RunReport r = RunAgainst(config, "^law\\.ids-unique");
  ASSERT_EQ(r.results.size(), 2u) << SummaryTable(r);
  EXPECT_EQ(r.results[0].id, "law.ids-unique");
  EXPECT_EQ(r.results[0].outcome.status, Status::kSkip);
  EXPECT_THAT(r.results[0].outcome.message, ::testing::HasSubstr("(see law.first-list)"));
  EXPECT_EQ(r.results[1].id, "law.first-list");
  EXPECT_EQ(r.results[1].outcome.status, Status::kFail);
  EXPECT_THAT(r.results[1].outcome.message,
              ::testing::StartsWith(
                  "(not selected; run because law.ids-unique depends on it) no device list"));
  EXPECT_FALSE(r.MustPassed());

  // A check --skip names is not run for them.
  RunOptions o;
  TempDir run_dir;
  o.dir = run_dir.path();
  o.timeouts = FastTimeouts();
  o.focus = "^law\\.ids-unique";
  o.skip = "first-list";
  auto target = NewInProcessTarget(*plugin::LoadConfig(config));
  absl::StatusOr<RunReport> skipped = RunConformance(*target, o);
  ASSERT_OK(skipped);
  EXPECT_EQ(skipped->results.size(), 1u) << SummaryTable(*skipped);

  // Nothing is added when the selected checks ran.
  RunReport ok = RunAgainst(Example("sample-plugin.yaml"), "^law\\.ids-unique");
  ASSERT_EQ(ok.results.size(), 1u) << SummaryTable(ok);
  EXPECT_EQ(ok.results[0].outcome.status, Status::kPass);
}

TEST(ConformanceTest, SocketModeSkipsRegistrationChecks) {
  absl::StatusOr<plugin::Config> config = plugin::LoadConfig(Example("sample-plugin.yaml"));
  ASSERT_OK(config);
  TempDir dir;
  // The plugin runs on its own, waiting for a kubelet.sock that never comes.
  plugin::PluginOptions po;
  po.dir = dir.path();
  plugin::SamplePlugin p(*config, po);
  ASSERT_OK(p.Start());
  auto target = NewSocketTarget(p.socket_path());
  RunOptions o;
  o.timeouts = FastTimeouts();
  o.skip = "law.stream-open|law.no-resend|allocate.list-unchanged";
  absl::StatusOr<RunReport> r = RunConformance(*target, o);
  ASSERT_OK(r);
  EXPECT_THAT(Failed(*r), ::testing::IsEmpty()) << SummaryTable(*r);
  for (const auto& c : r->results) {
    if (c.id.rfind("registration.", 0) == 0 || c.id.rfind("restart.", 0) == 0) {
      EXPECT_EQ(c.outcome.status, Status::kSkip) << c.id;
    }
  }
  p.Stop();
}

TEST(ConformanceTest, SocketModeWithoutPluginIsAnEnvironmentError) {
  auto target = NewSocketTarget("/tmp/devmgr-conformance-no-such.sock");
  RunOptions o;
  o.timeouts = FastTimeouts();
  absl::StatusOr<RunReport> r = RunConformance(*target, o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "nothing accepts connections on /tmp/devmgr-conformance-no-such.sock");
}

// A session wipes its directory: a real kubelet's is refused before anything
// is touched, however it is spelled.
TEST(ConformanceTest, TheRealKubeletDirectoryIsRefused) {
  auto target = NewSocketTarget("/tmp/devmgr-conformance-no-such.sock");
  for (const char* dir : {"/var/lib/kubelet/device-plugins", "/var/lib/kubelet/",
                          "/var/lib/../lib/kubelet/device-plugins/"}) {
    RunOptions o;
    o.dir = dir;
    o.timeouts = FastTimeouts();
    absl::StatusOr<RunReport> r = RunConformance(*target, o);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << dir;
    EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("not the kubelet's"));
  }
}

}  // namespace
}  // namespace devmgr::conformance
