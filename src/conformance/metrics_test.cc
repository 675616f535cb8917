// RunOptions::metrics: the tester's kubelet counts what a kubelet would
// over a whole run. The expected numbers come from the reference plugin's
// own call log (every instance of the run appends to one file), never from
// guesses about what the checks do.
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "common/source_dir_testutil.h"
#include "common/status_testutil.h"
#include "conformance/conformance_testutil.h"
#include "conformance/report.h"
#include "conformance/runner.h"
#include "conformance/target.h"
#include "conformance/test_kubelet.h"
#include "gtest/gtest.h"
#include "metrics/kubelet_metrics.h"
#include "nlohmann/json.hpp"
#include "plugin/config.h"

namespace devmgr::conformance {
namespace {

using testutil::FastTimeouts;
using testutil::TempDir;

struct LogCounts {
  int allocate_received = 0;
  int register_sent_ok = 0;
  // Cancelled: the session ended (and stopped the plugin) while its Register
  // was in flight, which a check that does not need the registration may
  // do. The kubelet may or may not have counted such a call.
  int register_sent_cancelled = 0;
  int register_sent_failed = 0;  // any other error
  std::string register_errors;   // each failed Register's code and message
};

LogCounts CountCallLog(const std::string& path) {
  LogCounts c;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    const std::string method = j.at("method");
    const std::string kind = j.at("kind");
    if (method == "Allocate" && kind == "received") ++c.allocate_received;
    if (method == "Register" && kind == "sent") {
      if (!j.contains("error")) {
        ++c.register_sent_ok;
      } else if (j.value("code", "") == "CANCELLED") {
        ++c.register_sent_cancelled;
      } else {
        ++c.register_sent_failed;
        c.register_errors += line + "\n";
      }
    }
  }
  return c;
}

TEST(ConformanceMetricsTest, CountsEveryRegisterAndAllocateOfTheRun) {
  absl::StatusOr<plugin::Config> config =
      plugin::LoadConfig(devmgr::testutil::SourcePath("examples/sample-plugin.yaml"));
  ASSERT_OK(config);
  const std::string resource = config->resource;
  TempDir dir;
  TempDir logs;
  const std::string call_log = logs.path() + "/calls.jsonl";
  auto target = NewInProcessTarget(*config, call_log);
  metrics::KubeletMetrics m;
  RunOptions o;
  o.dir = dir.path();
  o.timeouts = FastTimeouts();
  // What is counted here is not timing: wide windows, so that a loaded
  // machine (sanitizer runs) turns no check into a failure.
  o.timeouts.register_within = absl::Seconds(5);
  o.timeouts.serve_wait = absl::Seconds(5);
  o.timeouts.first_list_within = absl::Seconds(5);
  o.timeouts.reregister_within = absl::Seconds(10);
  o.timeouts.prompt_within = absl::Seconds(10);
  o.metrics = &m;
  // Allocates that succeed and fail, from several threads, and both
  // restarts (a second registration in one session).
  o.focus = "^(allocate\\.(rejects-unknown|deterministic|concurrent)|restart\\.|latency\\.)";
  absl::StatusOr<RunReport> r = RunConformance(*target, o);
  ASSERT_OK(r);
  ASSERT_EQ(r->results.size(), 7u) << SummaryTable(*r);  // restart.kubelet-prompt too
  ASSERT_EQ(r->Count(Status::kFail), 0) << SummaryTable(*r);
  target.reset();  // every plugin instance stopped: the log is complete

  const LogCounts log = CountCallLog(call_log);
  EXPECT_EQ(log.register_sent_failed, 0) << log.register_errors;
  // One registration per session (the shared one, and one per restart
  // check), one more per restart.
  EXPECT_EQ(r->sessions, 3);
  EXPECT_GE(log.register_sent_ok + log.register_sent_cancelled, r->sessions + 2);
  EXPECT_GT(log.allocate_received, 6);
  EXPECT_GE(m.RegistrationCount(resource), log.register_sent_ok);
  EXPECT_LE(m.RegistrationCount(resource), log.register_sent_ok + log.register_sent_cancelled);
  EXPECT_EQ(m.AllocCount(resource), static_cast<uint64_t>(log.allocate_received));
  const std::string text = m.Render();
  EXPECT_NE(
      text.find("kubelet_device_plugin_registration_total{resource_name=\"" + resource + "\"} " +
                std::to_string(static_cast<int>(m.RegistrationCount(resource))) + "\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("kubelet_device_plugin_alloc_duration_seconds_count{resource_name=\"" +
                      resource + "\"} " + std::to_string(log.allocate_received) + "\n"),
            std::string::npos)
      << text;
}

TEST(ConformanceMetricsTest, NoMetricsChangesNothing) {
  absl::StatusOr<plugin::Config> config =
      plugin::LoadConfig(devmgr::testutil::SourcePath("examples/sample-plugin.yaml"));
  ASSERT_OK(config);
  TempDir dir;
  auto target = NewInProcessTarget(*config);
  RunOptions o;
  o.dir = dir.path();
  o.timeouts = FastTimeouts();
  o.focus = "^allocate\\.rejects-unknown";
  absl::StatusOr<RunReport> r = RunConformance(*target, o);
  ASSERT_OK(r);
  EXPECT_EQ(r->Count(Status::kPass), 1) << SummaryTable(*r);
}

TEST(ConformanceMetricsTest, RegisterIsCountedAsSentBeforeAnyFilter) {
  TempDir dir;
  metrics::KubeletMetrics m;
  TestKubeletOptions o;
  o.dir = dir.path();
  o.resource = "example.com/gpu";  // --resource: other resources are ignored...
  o.metrics = &m;
  TestKubelet k(o);
  v1beta1::RegisterRequest req;
  req.set_version("v1beta1");
  req.set_endpoint("other.sock");
  req.set_resource_name("example.com/other");
  k.HandleRegister(req);
  k.HandleRegister(req);
  // ...but counted, as the kubelet counts every Register RPC.
  EXPECT_EQ(m.RegistrationCount("example.com/other"), 2);
  EXPECT_TRUE(k.Registrations().empty());
  EXPECT_EQ(m.RegistrationCount("example.com/gpu"), 0);
  k.Stop();
}

TEST(ConformanceMetricsTest, ProbeClientObservesFailedAllocates) {
  // Nothing serves here: the call fails, and is observed all the same.
  TempDir dir;
  ProbeClient c(dir.path() + "/none.sock");
  int seen = 0;
  grpc::StatusCode code = grpc::StatusCode::OK;
  c.set_allocate_observer([&](const CallResult<v1beta1::AllocateResponse>& r) {
    ++seen;
    code = r.status.error_code();
  });
  auto r = c.Allocate(AllocateRequestFor({{"a"}}), absl::Milliseconds(200));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(seen, 1);
  EXPECT_EQ(code, r.status.error_code());
}

}  // namespace
}  // namespace devmgr::conformance
