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

#include "cli/commands.h"
#include "common/logging.h"
#include "common/profile.h"
#include "common/version_matrix.h"
#include "manager/resource_health.h"
#include "metrics/http_server.h"
#include "node/status_file.h"
#include "podresources/options.h"
#include "scenario/compare_kubelet.h"
#include "scenario/report.h"
#include "scenario/run_metrics.h"
#include "scenario/runner.h"
#include "scenario/scenario_parser.h"
#include "scenario/version_matrix.h"

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

bool IsDir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Every *.yaml / *.yml under `dir`, recursively, sorted.
void CollectYaml(const std::string& dir, std::vector<std::string>* out) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    const std::string p = dir + "/" + n;
    if (IsDir(p)) {
      CollectYaml(p, out);
    } else if ((n.size() > 5 && n.substr(n.size() - 5) == ".yaml") ||
               (n.size() > 4 && n.substr(n.size() - 4) == ".yml")) {
      out->push_back(p);
    }
  }
}

std::string SelfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "devmgr";
  return std::string(buf, static_cast<size_t>(n));
}

bool WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  return static_cast<bool>(out);
}

int RunScenarios(const RunOptions& o) {
  log::Init(o.verbosity, log::Format::kText);
  log::SetConsoleOutput(o.show_log);

  // --kubelet-version: one version, or a list/range/"all" (a version matrix).
  absl::StatusOr<std::vector<std::string>> versions =
      ExpandVersionList(o.compare_kubelet.empty() ? o.kubelet_version : o.compare_kubelet);
  if (!versions.ok()) {
    std::cerr << "devmgr run: --kubelet-version: " << versions.status().message() << "\n";
    return kExitUsage;
  }
  const bool compare = !o.compare_kubelet.empty();
  if (compare && versions->size() != 1) {
    std::cerr << "devmgr run: --compare-kubelet takes one version\n";
    return kExitUsage;
  }
  const bool matrix = compare ? false
                              : versions->size() > 1 ||
                                    o.kubelet_version.find_first_of(",-") != std::string::npos ||
                                    o.kubelet_version == "all";
  absl::StatusOr<Profile> def =
      ProfileForVersion(matrix || compare ? versions->front() : o.kubelet_version);
  if (!def.ok()) {
    std::cerr << "devmgr run: --kubelet-version: " << def.status().message() << "\n";
    return kExitUsage;
  }
  if (!matrix && !def->notice.empty()) std::cerr << "devmgr run: warning: " << def->notice << "\n";
  if (absl::Status s = ValidateFeatureGateSpec(o.feature_gates); !s.ok()) {
    std::cerr << "devmgr run: --feature-gates: " << s.message() << "\n";
    return kExitUsage;
  }
  std::optional<std::regex> focus, skip;
  try {
    if (!o.focus.empty()) focus.emplace(o.focus, std::regex::ECMAScript);
    if (!o.skip.empty()) skip.emplace(o.skip, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    std::cerr << "devmgr run: bad --focus/--skip regular expression: " << e.what() << "\n";
    return kExitUsage;
  }

  std::vector<std::string> files;
  for (const std::string& p : o.paths) {
    if (IsDir(p)) {
      const size_t before = files.size();
      CollectYaml(p, &files);
      if (files.size() == before) {
        std::cerr << "devmgr run: " << p << ": no *.yaml scenario files\n";
        return kExitUsage;
      }
    } else {
      files.push_back(p);
    }
  }
  // Parse everything first: a bad file stops the run before anything starts.
  std::vector<scenario::Scenario> scenarios;
  bool bad = false;
  for (const std::string& f : files) {
    absl::StatusOr<scenario::Scenario> sc = scenario::LoadScenario(f);
    if (!sc.ok()) {
      std::cerr << "devmgr run: " << sc.status().message() << "\n";
      bad = true;
      continue;
    }
    scenarios.push_back(*std::move(sc));
  }
  if (bad) return kExitUsage;

  // SIGINT/SIGTERM: interrupt the current scenario (which tears down its
  // processes) and skip the rest. Blocked here, so every thread started
  // later inherits the mask, and taken by a watcher thread.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  std::atomic<bool> cancel{false};
  std::atomic<bool> finished{false};
  std::thread watcher([&] {
    while (!finished.load()) {
      timespec t{0, 100 * 1000 * 1000};
      const int sig = sigtimedwait(&sigs, nullptr, &t);
      if (sig > 0) {
        std::cerr << "\ndevmgr run: " << strsignal(sig)
                  << ": stopping the current scenario and cleaning up\n";
        cancel = true;
      }
    }
  });

  scenario::CompareOptions copts;
  if (compare) {
    copts.version = def->name;
    absl::StatusOr<std::string> bin =
        scenario::FindKubeletOracle(o.kubelet_oracle, def->name, SelfExe());
    if (!bin.ok()) {
      std::cerr << "devmgr run: --compare-kubelet: " << bin.status().message() << "\n";
      finished = true;
      watcher.join();
      return kExitEnvironment;
    }
    copts.oracle_binary = *bin;
  }
  scenario::RunnerOptions ro;
  ro.devmgr_bin = SelfExe();
  ro.default_kubelet_version = def->name;
  ro.feature_gates = o.feature_gates;
  ro.keep_dir = o.keep_dir;
  ro.out = &std::cout;
  ro.cancel = &cancel;
  ro.pod_resources_socket = o.pod_resources_socket;
  if (!ro.pod_resources_socket.empty() && ro.pod_resources_socket != "off") {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(ro.pod_resources_socket, ec);
    if (!ec) ro.pod_resources_socket = abs.lexically_normal().string();
  }

  // The metrics of the run: one kubelet's worth, over every scenario.
  std::unique_ptr<scenario::RunMetrics> run_metrics;
  std::unique_ptr<metrics::HttpServer> http;
  if (!o.metrics_file.empty() || o.metrics_address != "off") {
    // The Get counters exist when the gate is on in any run (profile or
    // node.feature_gates).
    bool get_gate = false;
    for (const scenario::Scenario& sc : scenarios) {
      for (const scenario::PlannedRun& run : scenario::PlanRuns(sc, *versions, matrix)) {
        absl::StatusOr<Profile> p = ProfileForVersion(run.version);
        if (run.skip || !p.ok()) continue;
        if (p->gates.Set(o.feature_gates).ok() && p->gates.Set(sc.node.feature_gates).ok()) {
          get_gate |= podresources::OptionsForProfile(*p).get_enabled;
        }
      }
    }
    run_metrics = std::make_unique<scenario::RunMetrics>(*def, get_gate);
    ro.metrics = run_metrics.get();
  }
  if (o.metrics_address != "off") {
    scenario::RunMetrics* m = run_metrics.get();
    http = std::make_unique<metrics::HttpServer>([m] { return m->Render(); });
    absl::StatusOr<std::string> addr = http->Start(o.metrics_address);
    if (!addr.ok()) {
      std::cerr << "devmgr run: --metrics-address: " << addr.status().message() << "\n";
      finished = true;
      watcher.join();
      return kExitEnvironment;
    }
    ro.metrics_url = "http://" + *addr + "/metrics";
    std::cout << "serving metrics at " << ro.metrics_url << "\n";
  }

  std::vector<scenario::ScenarioResult> results;
  const absl::Time t0 = absl::Now();
  VersionMatrix matrix_scenarios(*versions), matrix_steps(*versions);
  for (const scenario::Scenario& sc : scenarios) {
    for (const scenario::PlannedRun& run : scenario::PlanRuns(sc, *versions, matrix || compare)) {
      const std::string& v = run.version;
      const std::string& display = run.display;
      const bool filtered = (focus && !std::regex_search(display, *focus)) ||
                            (skip && std::regex_search(display, *skip));
      if (filtered || cancel || run.skip) {
        scenario::ScenarioResult r;
        r.name = display;
        r.file = sc.file;
        r.kubelet_version = v;
        r.outcome = scenario::Outcome::kSkipped;
        r.message = cancel     ? "interrupted"
                    : filtered ? "filtered out by --focus/--skip"
                               : run.reason;
        if (cancel) std::cout << "--- SKIP " << display << " (interrupted)\n";
        if (run.skip && !filtered && !cancel) {
          std::cout << "--- SKIP " << display << " (" << run.reason << ")\n";
        }
        results.push_back(std::move(r));
      } else if (compare) {
        copts.runner = ro;
        for (auto& r : scenario::CompareScenario(sc, display, copts)) results.push_back(r);
      } else {
        results.push_back(scenario::RunScenario(sc, v, display, ro));
      }
      if (matrix) {
        scenario::RecordResult(&matrix_scenarios, &matrix_steps, sc.name, v, results.back());
      }
    }
  }
  finished = true;
  watcher.join();

  std::cout << "\n=== " << scenario::Summary(results) << " ("
            << absl::FormatDuration(absl::Trunc(absl::Now() - t0, absl::Milliseconds(10))) << ")\n";
  for (const auto& r : results) {
    if (r.outcome == scenario::Outcome::kFailed || r.outcome == scenario::Outcome::kError) {
      std::cout << "    " << (r.outcome == scenario::Outcome::kError ? "ERROR " : "FAIL  ")
                << r.name << " (" << r.file << "): " << r.message << "\n";
    }
  }
  if (matrix) std::cout << "\n" << scenario::MatrixReport(matrix_scenarios, matrix_steps);
  int code = kExitOk;
  bool any_failed = false, any_error = false;
  for (const auto& r : results) {
    any_failed |= r.outcome == scenario::Outcome::kFailed;
    any_error |= r.outcome == scenario::Outcome::kError;
  }
  if (any_failed || cancel) code = kExitFailed;
  if (any_error) code = kExitEnvironment;
  if (!o.junit.empty() && !WriteFile(o.junit, scenario::JUnitXml(results))) {
    std::cerr << "devmgr run: cannot write " << o.junit << "\n";
    code = kExitEnvironment;
  }
  if (!o.json.empty() && !WriteFile(o.json, scenario::ResultsJson(results).dump(2) + "\n")) {
    std::cerr << "devmgr run: cannot write " << o.json << "\n";
    code = kExitEnvironment;
  }
  if (http) http->Stop();
  if (!o.metrics_file.empty()) {
    if (absl::Status s = node::WriteFileAtomically(o.metrics_file, run_metrics->Render());
        !s.ok()) {
      std::cerr << "devmgr run: --metrics-file: " << s.message() << "\n";
      code = kExitEnvironment;
    }
  }
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
