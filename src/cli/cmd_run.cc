// `devmgr run SCENARIO...`: replays YAML scenarios (docs/scenarios.md)
// against an emulated kubelet and real plugin processes, with JUnit/JSON
// reports. Exit codes: 0 all passed, 1 a scenario failed (or the run was
// interrupted), 2 bad scenario file or usage, 3 environment error.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "common/fs.h"
#include "common/interrupt.h"
#include "common/logging.h"
#include "kubelet/profile.h"
#include "kubelet/version_matrix.h"
#include "manager/resource_health.h"
#include "metrics/http_server.h"
#include "node/status_file.h"
#include "podresources/options.h"
#include "scenario/compare/compare_kubelet.h"
#include "scenario/format/scenario_parser.h"
#include "scenario/report/report.h"
#include "scenario/report/version_matrix.h"
#include "scenario/run/run_metrics.h"
#include "scenario/run/runner.h"
#include "scenario/run/suite.h"

namespace devmgr::cli {
namespace {

struct RunOptions {
  std::vector<std::string> paths;
  std::string junit;
  std::string json;
  std::string focus;
  std::string skip;
  std::string kubelet_version = DefaultProfile().name;
  std::string feature_gates;
  bool keep_dir = false;
  bool show_log = false;
  int verbosity = 0;
  std::string pod_resources_socket;
  std::string metrics_file;
  std::string metrics_address = "off";
  std::string compare_kubelet;  // --compare-kubelet VERSION
  std::string kubelet_oracle;   // --kubelet-oracle PATH|DIR
};

std::string SelfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "devmgr";
  return std::string(buf, static_cast<size_t>(n));
}

std::optional<std::regex> Regex(const std::string& re) {
  if (re.empty()) return std::nullopt;
  return std::regex(re, std::regex::ECMAScript);
}

// The flags that shape the suite: --kubelet-version (one version or a
// matrix), --feature-gates, --focus/--skip. Prints the error and returns
// false on a bad one.
bool SuiteFromFlags(const RunOptions& o, scenario::SuiteOptions* so) {
  absl::StatusOr<std::vector<std::string>> versions = ExpandVersionList(o.kubelet_version);
  so->matrix = versions.ok() && (versions->size() > 1 || o.kubelet_version == "all" ||
                                 o.kubelet_version.find_first_of(",-") != std::string::npos);
  if (!o.compare_kubelet.empty()) {
    // One profile, planned as a matrix of one (node.kubelet_versions and
    // applies_to skip what they leave out).
    versions =
        ProfileForVersion(o.compare_kubelet).ok()
            ? absl::StatusOr<std::vector<std::string>>({o.compare_kubelet})
            : absl::InvalidArgumentError("--compare-kubelet takes one profile (1.30 .. 1.37)");
    so->matrix = true;
  }
  absl::StatusOr<Profile> def =
      !versions.ok() ? versions.status()
                     : ProfileForVersion(so->matrix ? versions->front() : o.kubelet_version);
  if (!def.ok()) {
    std::cerr << "devmgr run: --kubelet-version: " << def.status().message() << "\n";
    return false;
  }
  if (!so->matrix && !def->notice.empty()) {
    std::cerr << "devmgr run: warning: " << def->notice << "\n";
  }
  if (absl::Status s = ValidateFeatureGateSpec(o.feature_gates); !s.ok()) {
    std::cerr << "devmgr run: --feature-gates: " << s.message() << "\n";
    return false;
  }
  try {
    so->focus = Regex(o.focus);
    so->skip = Regex(o.skip);
  } catch (const std::regex_error& e) {
    std::cerr << "devmgr run: bad --focus/--skip regular expression: " << e.what() << "\n";
    return false;
  }
  so->versions = *std::move(versions);
  scenario::RunnerOptions& ro = so->runner;
  ro.devmgr_bin = SelfExe();
  ro.default_kubelet_version = def->name;
  ro.feature_gates = o.feature_gates;
  ro.keep_dir = o.keep_dir;
  ro.out = &std::cout;
  ro.pod_resources_socket = o.pod_resources_socket;
  if (!ro.pod_resources_socket.empty() && ro.pod_resources_socket != "off") {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(ro.pod_resources_socket, ec);
    if (!ec) ro.pod_resources_socket = abs.lexically_normal().string();
  }
  return true;
}

// --compare-kubelet: every planned run becomes a devmgr run and its
// comparison with the kubelet oracle. False (printed) without an oracle.
bool CompareFromFlags(const RunOptions& o, scenario::SuiteOptions* so) {
  if (o.compare_kubelet.empty()) return true;
  scenario::CompareOptions c;
  c.version = so->versions.front();
  absl::StatusOr<std::string> bin =
      scenario::FindKubeletOracle(o.kubelet_oracle, c.version, so->runner.devmgr_bin);
  if (!bin.ok()) {
    std::cerr << "devmgr run: --compare-kubelet: " << bin.status().message() << "\n";
    return false;
  }
  c.oracle_binary = *bin;
  so->run_planned = [c](const scenario::Scenario& sc, const scenario::PlannedRun& run,
                        const scenario::RunnerOptions& ro) {
    scenario::CompareOptions with = c;
    with.runner = ro;
    return scenario::CompareScenario(sc, run.display, with);
  };
  return true;
}

// The run's kubelet metrics (--metrics-file, --metrics-address): one
// kubelet's worth over every scenario.
struct RunMetricsOutput {
  std::unique_ptr<scenario::RunMetrics> metrics;
  std::unique_ptr<metrics::HttpServer> http;
};

bool StartMetrics(const RunOptions& o, const std::vector<scenario::Scenario>& scenarios,
                  scenario::SuiteOptions* so, RunMetricsOutput* out) {
  if (o.metrics_file.empty() && o.metrics_address == "off") return true;
  absl::StatusOr<Profile> def = ProfileForVersion(so->runner.default_kubelet_version);
  out->metrics = std::make_unique<scenario::RunMetrics>(
      *def, scenario::AnyRunHasPodResourcesGet(scenarios, *so));
  so->runner.metrics = out->metrics.get();
  if (o.metrics_address == "off") return true;
  scenario::RunMetrics* m = out->metrics.get();
  out->http = std::make_unique<metrics::HttpServer>([m] { return m->Render(); });
  absl::StatusOr<std::string> addr = out->http->Start(o.metrics_address);
  if (!addr.ok()) {
    std::cerr << "devmgr run: --metrics-address: " << addr.status().message() << "\n";
    return false;
  }
  so->runner.metrics_url = "http://" + *addr + "/metrics";
  std::cout << "serving metrics at " << so->runner.metrics_url << "\n";
  return true;
}

// --junit, --json, --metrics-file; false when one cannot be written.
bool WriteOutputs(const RunOptions& o, const scenario::SuiteResult& r, const RunMetricsOutput& m) {
  absl::Status w;
  if (!o.junit.empty()) w.Update(fs::WriteOutputFile(o.junit, scenario::JUnitXml(r.results)));
  if (!o.json.empty()) {
    w.Update(fs::WriteOutputFile(o.json, scenario::ResultsJson(r.results).dump(2) + "\n"));
  }
  if (!o.metrics_file.empty()) {
    absl::Status s = fs::WriteOutputFile(o.metrics_file, m.metrics->Render());
    if (!s.ok()) w.Update(absl::Status(s.code(), "--metrics-file: " + std::string(s.message())));
  }
  if (!w.ok()) std::cerr << "devmgr run: " << w.message() << "\n";
  return w.ok();
}

int RunScenarios(const RunOptions& o) {
  log::Init(o.verbosity, log::Format::kText);
  log::SetConsoleOutput(o.show_log);
  scenario::SuiteOptions so;
  if (!SuiteFromFlags(o, &so)) return kExitUsage;
  absl::StatusOr<std::vector<scenario::Scenario>> scenarios;
  absl::StatusOr<std::vector<std::string>> files = scenario::CollectScenarioFiles(o.paths);
  scenarios = files.ok() ? scenario::LoadScenarios(*files) : files.status();
  if (!scenarios.ok()) {
    for (absl::string_view line : absl::StrSplit(scenarios.status().message(), '\n')) {
      std::cerr << "devmgr run: " << line << "\n";
    }
    return kExitUsage;
  }
  // SIGINT/SIGTERM interrupt the current scenario (which tears down its
  // processes) and skip the rest.
  InterruptFlag interrupt("devmgr run", "stopping the current scenario and cleaning up");
  so.runner.cancel = interrupt.flag();
  RunMetricsOutput m;
  if (!StartMetrics(o, *scenarios, &so, &m)) return kExitEnvironment;
  if (!CompareFromFlags(o, &so)) return kExitEnvironment;

  const scenario::SuiteResult r = scenario::RunSuite(*scenarios, so);
  if (r.focus_matched == 0 && !r.results.empty()) {
    std::cerr << "devmgr run: --focus matches no scenario (it is matched against the names in "
                 "the report, e.g. \"basic\" or \"basic [1.37]\")\n";
    return kExitUsage;
  }
  scenario::PrintSuiteSummary(r, std::cout);
  if (m.http) m.http->Stop();
  int code = kExitOk;
  switch (scenario::Verdict(r, interrupt.interrupted())) {
    case scenario::SuiteVerdict::kPassed:
      code = kExitOk;
      break;
    case scenario::SuiteVerdict::kFailed:
      code = kExitFailed;
      break;
    case scenario::SuiteVerdict::kError:
      code = kExitEnvironment;
      break;
  }
  if (!WriteOutputs(o, r, m)) code = kExitEnvironment;
  return code;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand(
      "run",
      "Replay YAML scenarios (docs/scenarios.md) against an emulated kubelet and real plugin\n"
      "processes: pods admitted and deleted, kubelet and plugin restarts, node reboots, health\n"
      "flips, a virtual clock for grace periods, and expectations after every step.\n"
      "Exit codes: 0 all passed, 1 a scenario failed, 2 bad scenario or usage, 3 environment.");
  sub->add_option("scenarios", opts->paths, "Scenario files, or directories of *.yaml files")
      ->required();
  sub->add_option("--junit", opts->junit, "Write a JUnit XML report to this file");
  sub->add_option("--json", opts->json, "Write a JSON report to this file (docs/scenarios.md)");
  sub->add_option("--focus", opts->focus, "Run only scenarios whose name matches this regex");
  sub->add_option("--skip", opts->skip, "Skip scenarios whose name matches this regex");
  sub->add_option("--kubelet-version", opts->kubelet_version,
                  "Kubelet profile for scenarios that name none (1.30 .. 1.37), or a version "
                  "matrix: a list or range (1.33,1.37 / 1.34-1.37) or 'all' runs every scenario "
                  "once per profile and reports per version (docs/profiles.md)")
      ->capture_default_str();
  sub->add_option("--feature-gates", opts->feature_gates,
                  "Kubelet feature gates for every run, e.g. ResourceHealthStatus=true (applied "
                  "before a scenario's node.feature_gates; table in docs/profiles.md)");
  sub->add_flag("--keep-dir", opts->keep_dir,
                "Keep each scenario's temp dir (device-plugin dir, plugin configs, call logs)");
  sub->add_flag("--show-log", opts->show_log, "Print devmgr's own log lines live on stderr");
  sub->add_option("--pod-resources-socket", opts->pod_resources_socket,
                  "Serve the PodResources v1 API on this unix socket while each scenario runs "
                  "('off': not at all). Default: WORKDIR/pod-resources/kubelet.sock in each "
                  "scenario's temp dir; `run:` steps and plugins get it as "
                  "$DEVMGR_POD_RESOURCES_SOCKET");
  sub->add_option("--metrics-file", opts->metrics_file,
                  "Write the kubelet metrics (Prometheus text) of the whole run to this file at "
                  "the end: counts over every scenario, as one kubelet that lived through them");
  sub->add_option("--metrics-address", opts->metrics_address,
                  "Also serve those metrics at http://ADDRESS/metrics while the run lasts "
                  "(e.g. 127.0.0.1:0 for any free port; `run:` steps get the URL as "
                  "$DEVMGR_METRICS_URL)")
      ->capture_default_str();
  sub->add_option("--compare-kubelet", opts->compare_kubelet,
                  "Differential run: every scenario under this profile (one version) on devmgr "
                  "and on the real kubelet device manager of that release (a kubelet-oracle "
                  "binary, docs/oracle.md), compared step by step; exit 1 on a difference not in "
                  "the reviewed table (docs/profiles.md)");
  sub->add_option("--kubelet-oracle", opts->kubelet_oracle,
                  "The kubelet-oracle binary, or a directory of kubelet-oracle-<version> "
                  "(default: $DEVMGR_KUBELET_ORACLE, else kubelet-oracle/ beside the devmgr "
                  "binary, where `make kubelet-oracle` puts them)");
  sub->add_option("-v,--v", opts->verbosity, "Log verbosity (klog -v)")->capture_default_str();
  sub->callback([opts, exit_code] { *exit_code = RunScenarios(*opts); });
}

}  // namespace devmgr::cli
