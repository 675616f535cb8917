// `devmgr conformance`: runs the conformance catalogue against a device
// plugin (with --dra, the DRA catalogue against a DRA driver) and reports,
// check by check, where it departs from what the kubelet needs. See
// docs/conformance.md.
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "apiserver/faults.h"
#include "cli/commands.h"
#include "common/fs.h"
#include "common/logging.h"
#include "conformance/dra_runner.h"
#include "conformance/report.h"
#include "conformance/runner.h"
#include "conformance/target.h"
#include "conformance/version_matrix.h"
#include "dra/services.h"
#include "fmt/format.h"
#include "kubelet/profile.h"
#include "kubelet/version_matrix.h"
#include "metrics/kubelet_metrics.h"
#include "node/status_file.h"
#include "podresources/options.h"
#include "process/plugin_process.h"

namespace devmgr::cli {
namespace {

struct ConformanceOptions {
  std::string plugin;
  bool private_mount = false;
  std::string socket;
  std::string resource;
  std::string dir;
  std::string junit;
  std::string json;
  std::string focus;
  std::string skip;
  std::string results_dir;
  std::string metrics_file;
  std::string kubelet_version = DefaultProfile().name;
  std::string feature_gates;
  bool dra = false;
  bool list = false;
  bool quiet = false;
  int verbosity = -1;
  // Timeouts, in seconds.
  double rpc_timeout = 10;
  double register_timeout = 30;
  double first_list_timeout = 30;
  double observe = 3;
  double list_window = 12;
  double prestart_timeout = 30;
  double reregister_timeout = 30;
  double prompt_within = 10;
  double stop_grace = 30;
  double latency_budget = 1;
  int latency_samples = 20;
  // --dra only.
  double call_timeout = 45;
  double publish_timeout = 30;
  double health_timeout = 30;
  std::vector<std::string> api_faults;  // --api-fault
};

absl::Duration Secs(double s) { return absl::Milliseconds(static_cast<int64_t>(s * 1000)); }

std::string Absolute(const std::string& p) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(p, ec);
  return ec ? p : abs.lexically_normal().string();
}

int ListCatalogue(bool dra) {
  if (dra) {
    for (const auto& c : conformance::DraCatalogue()) {
      std::string title = c.title;
      for (const auto& tag : c.tags) title += " " + tag;
      std::cout << fmt::format("{:<28} {:<6} {}\n", c.id, conformance::LevelName(c.level), title);
    }
    return kExitOk;
  }
  for (const auto& c : conformance::CatalogueEntries()) {
    std::string title = c.title;
    for (const auto& tag : c.tags) title += " " + tag;
    if (c.parent != nullptr) title += " (measured by " + c.parent->id + ")";
    std::cout << fmt::format("{:<28} {:<6} {}\n", c.id, conformance::LevelName(c.level), title);
  }
  return kExitOk;
}

// The kubelet's metrics as the tester's kubelet saw the run, for --metrics-file.
std::unique_ptr<metrics::KubeletMetrics> NewKubeletMetrics(const Profile& profile) {
  return std::make_unique<metrics::KubeletMetrics>(metrics::KubeletMetricsOptionsFor(
      profile, podresources::OptionsForProfile(profile).get_enabled));
}

// Writes --metrics-file atomically; the error names the path.
absl::Status WriteMetricsFile(const std::string& path, const metrics::KubeletMetrics& m) {
  absl::Status s = fs::WriteOutputFile(path, m.Render());
  if (s.ok()) return s;
  // WriteOutputFile's messages name the path: "write PATH: ...".
  return absl::FailedPreconditionError("--metrics-file: " + std::string(s.message()));
}

// Checks the flags of one run and fills `ro` (profile, directory, timeouts,
// filters). Returns kExitOk, or the exit code after printing the error.
int RunOptionsFromFlags(const ConformanceOptions& o, bool quiet_notice,
                        conformance::RunOptions* ro) {
  const int modes = !o.plugin.empty() + !o.socket.empty() + !o.resource.empty();
  if (modes != 1) {
    std::cerr << "devmgr conformance: give exactly one of --plugin, --socket or --resource\n";
    return kExitUsage;
  }
  if (o.private_mount && o.plugin.empty()) {
    std::cerr << "devmgr conformance: --private-mount needs --plugin\n";
    return kExitUsage;
  }
  if (!o.api_faults.empty()) {
    std::cerr << "devmgr conformance: --api-fault needs --dra (device plugins use no API server)\n";
    return kExitUsage;
  }
  absl::StatusOr<Profile> profile = ProfileForVersion(o.kubelet_version);
  if (!profile.ok()) {
    std::cerr << "devmgr conformance: --kubelet-version: " << profile.status().message() << "\n";
    return kExitUsage;
  }
  if (!profile->notice.empty() && !quiet_notice) {
    std::cerr << "devmgr conformance: warning: " << profile->notice << "\n";
  }
  if (absl::Status s = profile->gates.Set(o.feature_gates); !s.ok()) {
    std::cerr << "devmgr conformance: --feature-gates: " << s.message() << "\n";
    return kExitUsage;
  }
  if (o.private_mount) {
    if (absl::Status s = node::CheckPrivateMountSupported(); !s.ok()) {
      std::cerr << "devmgr conformance: " << s.message() << "\n";
      return kExitEnvironment;
    }
  }
  ro->dir = o.dir.empty() ? "" : Absolute(o.dir);
  if (!ro->dir.empty() && ro->dir.size() + sizeof("/kubelet.sock") > 108) {
    std::cerr << "devmgr conformance: --dir is too long for unix socket paths; use a shorter one\n";
    return kExitUsage;
  }
  if (!o.resource.empty() && ro->dir.empty()) {
    std::cerr << "devmgr conformance: --resource needs --dir (the directory the plugin "
                 "registers in)\n";
    return kExitUsage;
  }
  ro->profile = *profile;
  ro->focus = o.focus;
  ro->skip = o.skip;
  conformance::Timeouts& t = ro->timeouts;
  t.rpc = Secs(o.rpc_timeout);
  t.register_within = Secs(o.register_timeout);
  t.serve_wait = std::min(absl::Seconds(10), Secs(o.register_timeout));
  t.first_list_within = Secs(o.first_list_timeout);
  t.observe = Secs(o.observe);
  t.list_window = Secs(o.list_window);
  t.prestart = Secs(o.prestart_timeout);
  t.reregister_within = Secs(o.reregister_timeout);
  t.prompt_within = Secs(o.prompt_within);
  t.stop_grace = Secs(o.stop_grace);
  t.latency_budget = Secs(o.latency_budget);
  t.latency_samples = o.latency_samples;
  return kExitOk;
}

std::unique_ptr<conformance::Target> NewTarget(const ConformanceOptions& o) {
  if (!o.plugin.empty()) return conformance::NewProcessTarget(o.plugin, o.private_mount);
  if (!o.socket.empty()) return conformance::NewSocketTarget(Absolute(o.socket));
  return conformance::NewResourceTarget(o.resource);
}

// --junit, --json, --results-dir, --metrics-file.
absl::Status WriteReports(const ConformanceOptions& o, const conformance::RunReport& report,
                          const metrics::KubeletMetrics* kubelet_metrics) {
  absl::Status w;
  if (!o.junit.empty()) w.Update(fs::WriteOutputFile(o.junit, conformance::JUnitXml(report)));
  if (!o.json.empty()) w.Update(fs::WriteOutputFile(o.json, conformance::JsonReport(report)));
  if (!o.results_dir.empty()) w.Update(conformance::WriteResultsDir(report, o.results_dir));
  if (kubelet_metrics) w.Update(WriteMetricsFile(o.metrics_file, *kubelet_metrics));
  return w;
}

// --dra: the flags of one DRA run into `ro`. Returns kExitOk, or the exit
// code after printing the error.
int DraRunOptionsFromFlags(const ConformanceOptions& o, conformance::DraRunOptions* ro) {
  if (o.plugin.empty() || !o.socket.empty() || !o.resource.empty() || !o.metrics_file.empty()) {
    std::cerr << "devmgr conformance: --dra needs --plugin (the driver command) and takes none "
                 "of --socket, --resource, --metrics-file\n";
    return kExitUsage;
  }
  absl::StatusOr<Profile> profile = ProfileForVersion(o.kubelet_version);
  if (!profile.ok()) {
    std::cerr << "devmgr conformance: --kubelet-version: " << profile.status().message() << "\n";
    return kExitUsage;
  }
  if (absl::Status s = profile->gates.Set(o.feature_gates); !s.ok()) {
    std::cerr << "devmgr conformance: --feature-gates: " << s.message() << "\n";
    return kExitUsage;
  }
  if (o.private_mount) {
    if (absl::Status s = node::CheckPrivateMountSupported(); !s.ok()) {
      std::cerr << "devmgr conformance: " << s.message() << "\n";
      return kExitEnvironment;
    }
  }
  for (const std::string& spec : o.api_faults) {
    if (absl::StatusOr<apiserver::Fault> f = apiserver::ParseFault(spec); !f.ok()) {
      std::cerr << "devmgr conformance: " << f.status().message() << "\n";
      return kExitUsage;
    }
  }
  ro->api_faults = o.api_faults;
  ro->profile = *profile;
  ro->dir = o.dir.empty() ? "" : Absolute(o.dir);
  ro->focus = o.focus;
  ro->skip = o.skip;
  ro->timeouts.register_within = Secs(o.register_timeout);
  ro->timeouts.publish_within = Secs(o.publish_timeout);
  ro->timeouts.health_within = Secs(o.health_timeout);
  ro->timeouts.call = Secs(o.call_timeout);
  ro->timeouts.stop_grace = std::min(Secs(o.stop_grace), absl::Seconds(2));
  return kExitOk;
}

// Prints a check's verdict as it is known (stderr), unless --quiet.
std::function<void(const conformance::CheckResult&)> ProgressPrinter(bool quiet) {
  return [quiet](const conformance::CheckResult& r) {
    if (quiet) return;
    std::cerr << fmt::format(
        "[{}] {} {}\n", conformance::StatusName(r.outcome.status), r.id,
        r.outcome.status == conformance::Status::kPass ? "" : r.outcome.message);
  };
}

// One run of the DRA catalogue under one profile (--dra).
int RunDraOnce(const ConformanceOptions& o, std::vector<conformance::RunReport>* collect) {
  conformance::DraRunOptions ro;
  if (int code = DraRunOptionsFromFlags(o, &ro); code != kExitOk) return code;
  // The emulated kubelet's plugin manager and DRA handler log at info level
  // as the kubelet's do: shown with -v only, the report is the output.
  log::SetConsoleOutput(o.verbosity >= 0);
  std::unique_ptr<conformance::DraTarget> target =
      conformance::NewDraProcessTarget(o.plugin, o.private_mount);
  signal(SIGPIPE, SIG_IGN);
  absl::StatusOr<conformance::RunReport> report =
      conformance::RunDraConformance(*target, ro, ProgressPrinter(o.quiet));
  if (!report.ok()) {
    std::cerr << "devmgr conformance: " << report.status().message() << "\n";
    return report.status().code() == absl::StatusCode::kInvalidArgument ? kExitUsage
                                                                        : kExitEnvironment;
  }
  if (collect != nullptr) collect->push_back(*report);
  std::cout << conformance::SummaryTable(*report);
  if (absl::Status w = WriteReports(o, *report, nullptr); !w.ok()) {
    std::cerr << "devmgr conformance: " << w.message() << "\n";
    return kExitEnvironment;
  }
  return report->MustPassed() ? kExitOk : kExitFailed;
}

// One run under one profile. With `collect`, the report is also appended
// there (a version matrix).
int RunConformanceOnce(const ConformanceOptions& o, std::vector<conformance::RunReport>* collect) {
  if (o.list) return ListCatalogue(o.dra);
  // Plugin and tester logs stay quiet unless asked for: the report is the output.
  log::Init(o.verbosity, log::Format::kText);
  if (o.dra) return RunDraOnce(o, collect);
  conformance::RunOptions ro;
  if (int code = RunOptionsFromFlags(o, collect != nullptr, &ro); code != kExitOk) return code;
  std::unique_ptr<metrics::KubeletMetrics> kubelet_metrics;
  if (!o.metrics_file.empty()) {
    kubelet_metrics = NewKubeletMetrics(ro.profile);
    ro.metrics = kubelet_metrics.get();
  }
  std::unique_ptr<conformance::Target> target = NewTarget(o);
  // A plugin that dies must not take the tester with it.
  signal(SIGPIPE, SIG_IGN);
  int checks_done = 0;
  auto progress = [&](const conformance::CheckResult& r) {
    ++checks_done;
    if (o.quiet) return;
    std::cerr << fmt::format(
        "[{}] {} {}\n", conformance::StatusName(r.outcome.status), r.id,
        r.outcome.status == conformance::Status::kPass ? "" : r.outcome.message);
  };
  absl::StatusOr<conformance::RunReport> report =
      conformance::RunConformance(*target, ro, progress);
  if (!report.ok()) {
    std::cerr << "devmgr conformance: " << report.status().message() << "\n";
    if (report.status().code() == absl::StatusCode::kInvalidArgument) return kExitUsage;
    // An environment error after some checks ran: keep what the kubelet saw.
    if (kubelet_metrics && checks_done > 0) {
      if (absl::Status s = WriteMetricsFile(o.metrics_file, *kubelet_metrics); !s.ok()) {
        std::cerr << "devmgr conformance: " << s.message() << "\n";
      }
    }
    return kExitEnvironment;
  }
  if (collect != nullptr) collect->push_back(*report);
  std::cout << conformance::SummaryTable(*report);
  if (absl::Status w = WriteReports(o, *report, kubelet_metrics.get()); !w.ok()) {
    std::cerr << "devmgr conformance: " << w.message() << "\n";
    return kExitEnvironment;
  }
  return report->MustPassed() ? kExitOk : kExitFailed;
}

// --kubelet-version LIST: one run per profile, then the per-version table
// and the differences; JUnit/JSON hold every version's checks.
int RunConformanceCommand(const ConformanceOptions& o) {
  if (o.list) return ListCatalogue(o.dra);
  absl::StatusOr<std::vector<std::string>> versions = ExpandVersionList(o.kubelet_version);
  if (!versions.ok()) {
    std::cerr << "devmgr conformance: --kubelet-version: " << versions.status().message() << "\n";
    return kExitUsage;
  }
  if (o.dra && o.kubelet_version == "all") {
    // The kubelets whose DRA registration devmgr emulates.
    std::erase_if(*versions, [](const std::string& v) {
      absl::StatusOr<Profile> p = ProfileForVersion(v);
      return p.ok() && p->minor < dra::kOldestDraMinor;
    });
  }
  const bool matrix = versions->size() > 1 || o.kubelet_version == "all" ||
                      o.kubelet_version.find_first_of(",-") != std::string::npos;
  if (!matrix) return RunConformanceOnce(o, nullptr);
  if (!o.metrics_file.empty()) {
    std::cerr << "devmgr conformance: --metrics-file takes one --kubelet-version, not a list\n";
    return kExitUsage;
  }
  std::vector<conformance::RunReport> reports;
  VersionMatrix m(*versions);
  int code = kExitOk;
  for (const std::string& v : *versions) {
    ConformanceOptions one = o;
    one.kubelet_version = v;
    one.junit.clear();
    one.json.clear();
    if (!o.results_dir.empty()) one.results_dir = o.results_dir + "/" + v;
    std::cout << "=== kubelet " << v << "\n";
    const size_t before = reports.size();
    const int c = RunConformanceOnce(one, &reports);
    if (c == kExitUsage) return c;
    if (reports.size() > before) conformance::RecordReport(&m, reports.back());
    code = std::max(code, c);
  }
  std::cout << "\n" << conformance::MatrixSummary(m);
  const conformance::RunReport merged = conformance::MergeVersionReports(reports);
  absl::Status w;
  if (!o.junit.empty()) w.Update(fs::WriteOutputFile(o.junit, conformance::JUnitXml(merged)));
  if (!o.json.empty()) w.Update(fs::WriteOutputFile(o.json, conformance::JsonReport(merged)));
  if (!w.ok()) {
    std::cerr << "devmgr conformance: " << w.message() << "\n";
    return kExitEnvironment;
  }
  return code;
}

}  // namespace

void AddConformanceCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ConformanceOptions>();
  CLI::App* cmd = app.add_subcommand(
      "conformance",
      "Check a device plugin against what the kubelet needs: registration, options,\n"
      "ListAndWatch, Allocate, GetPreferredAllocation, PreStartContainer, restarts and\n"
      "latency, against an emulated kubelet. The checks share one plugin session; the\n"
      "restart checks get a fresh one each. With --dra, check a DRA driver instead:\n"
      "registration, ResourceSlices, NodePrepareResources and NodeUnprepareResources\n"
      "against an emulated kubelet and API endpoint. Exit 0 when every MUST check passes, 1\n"
      "otherwise, 2 usage, 3 environment. See docs/conformance.md.");
  cmd->add_option("--plugin", o->plugin,
                  "Plugin command line, run with /bin/sh -c (started anew for each session). "
                  "$DEVMGR_PLUGIN_DIR is set to the emulated kubelet's device-plugin directory "
                  "(where kubelet.sock is); pass it to the plugin, e.g. --plugin "
                  "'./my-plugin --socket-dir \"$DEVMGR_PLUGIN_DIR\"'");
  cmd->add_flag("--private-mount", o->private_mount,
                "Run --plugin in a private mount namespace where the directory is bind-mounted "
                "over /var/lib/kubelet/device-plugins; with --dra, where the session's "
                "plugins_registry, plugins and CDI directories are bound over "
                "/var/lib/kubelet/plugins_registry, /var/lib/kubelet/plugins, /var/run/cdi and "
                "/etc/cdi, for a driver that hard-codes them (the host's are never touched)");
  cmd->add_flag("--dra", o->dra,
                "The target is a DRA driver: run the DRA catalogue (docs/conformance.md, \"DRA "
                "drivers\"). --plugin is the driver command, started for each session with "
                "KUBECONFIG (the tester's API endpoint), DEVMGR_NODE_NAME, DEVMGR_REGISTRY_DIR "
                "(plugins_registry), DEVMGR_PLUGINS_DIR, DEVMGR_CDI_DIR and DEVMGR_KUBELET_DIR "
                "set; with --list, list the DRA catalogue");
  cmd->add_option("--api-fault", o->api_faults,
                  "--dra: inject a fault into the tester's API endpoint, in every session "
                  "(repeatable; off by default; docs/api-server.md, \"Fault injection\"): "
                  "comma-separated method=, path=PREFIX, watch=, one of error=CODE, "
                  "delay=DURATION, drop-watch=DURATION, expire=true, and times=N, skip=N");
  cmd->add_option("--socket", o->socket,
                  "Test an already running plugin's socket (no registration or restart checks)");
  cmd->add_option("--resource", o->resource,
                  "Test the plugin that registers this resource in --dir on its own");
  cmd->add_option("--dir", o->dir,
                  "Device-plugin directory for the emulated kubelet (wiped before every session). "
                  "Default: a new temporary directory");
  cmd->add_option("--junit", o->junit, "Write a JUnit XML report here");
  cmd->add_option("--json", o->json, "Write a JSON report here");
  cmd->add_option("--results-dir", o->results_dir,
                  "Write sonobuoy plugin results here (JUnit + JSON, then a 'done' file)");
  cmd->add_option("--metrics-file", o->metrics_file,
                  "At the end, write the kubelet's device-plugin metrics (Prometheus text) as "
                  "the tester's kubelet saw the whole run: every Register RPC it received "
                  "(kubelet_device_plugin_registration_total) and every Allocate RPC sent to "
                  "the plugin, failed ones included, with its duration "
                  "(kubelet_device_plugin_alloc_duration_seconds). Written also when checks "
                  "fail, and after an environment error if a check ran; a write error exits 3");
  cmd->add_option("--focus", o->focus,
                  "Run only checks whose 'ID title [tags]' matches this regex");
  cmd->add_option("--skip", o->skip, "Skip checks whose 'ID title [tags]' matches this regex");
  cmd->add_option("--kubelet-version", o->kubelet_version,
                  "Kubelet behaviour profile: 1.30 ... 1.37; a list or range (1.33,1.37 / "
                  "1.34-1.37) or 'all' runs the checks once per profile and reports per version")
      ->capture_default_str();
  cmd->add_option("--feature-gates", o->feature_gates,
                  "Kubelet feature gates of the tester's kubelet, e.g. DRAExtendedResource=true "
                  "(table in docs/profiles.md)");
  cmd->add_flag("--list", o->list, "List the catalogue and exit");
  cmd->add_flag("-q,--quiet", o->quiet, "No per-check progress lines on stderr");
  cmd->add_option("-v", o->verbosity, "Log verbosity of the tester (default: errors only)");
  cmd->add_option("--rpc-timeout", o->rpc_timeout, "Deadline of every RPC the tester makes (s)")
      ->capture_default_str();
  cmd->add_option("--register-timeout", o->register_timeout,
                  "MUST window of registration.timely: Register within this long of the start "
                  "(s; the upstream node e2e waits 30)")
      ->capture_default_str();
  cmd->add_option("--first-list-timeout", o->first_list_timeout,
                  "MUST window of law.first-list: the first device list within this long (s; the "
                  "upstream node e2e waits 30)")
      ->capture_default_str();
  cmd->add_option("--observe", o->observe,
                  "allocate.list-unchanged: how long to watch for a list change after its "
                  "Allocate calls (s)")
      ->capture_default_str();
  cmd->add_option("--list-window", o->list_window,
                  "The law.* checks judge every device list received within this long of the "
                  "first one, and law.stream-open wants the stream open through it (s; covers "
                  "the 5-10 s re-send periods of real plugins, up to the kubelet's 10 s "
                  "nodeStatusUpdateFrequency)")
      ->capture_default_str();
  cmd->add_option("--prestart-timeout", o->prestart_timeout,
                  "PreStartContainer deadline (s; the kubelet's is 30)")
      ->capture_default_str();
  cmd->add_option("--reregister-timeout", o->reregister_timeout,
                  "MUST window of restart.*: re-registration after a kubelet or plugin restart "
                  "(s; the upstream node e2e waits 30)")
      ->capture_default_str();
  cmd->add_option("--prompt-within", o->prompt_within,
                  "SHOULD window of registration.prompt, law.first-list-prompt and "
                  "restart.kubelet-prompt: a plugin slower than this but within the MUST window "
                  "gets a SHOULD finding with its measured time (s; the kubelet's default "
                  "nodeStatusUpdateFrequency)")
      ->capture_default_str();
  cmd->add_option("--stop-grace", o->stop_grace,
                  "How long the plugin may take to exit on SIGTERM (s; a pod's default "
                  "terminationGracePeriodSeconds)")
      ->capture_default_str();
  cmd->add_option("--latency-budget", o->latency_budget, "latency.rpcs: p99 budget per RPC (s)")
      ->capture_default_str();
  cmd->add_option("--latency-samples", o->latency_samples, "latency.rpcs: calls per RPC")
      ->capture_default_str();
  cmd->add_option("--call-timeout", o->call_timeout,
                  "--dra: deadline of every NodePrepareResources and NodeUnprepareResources (s; "
                  "the kubelet's is 45)")
      ->capture_default_str();
  cmd->add_option("--publish-timeout", o->publish_timeout,
                  "--dra: MUST window of dra.slices: the driver's ResourceSlices within this long "
                  "of its registration (s)")
      ->capture_default_str();
  cmd->add_option("--health-timeout", o->health_timeout,
                  "--dra: SHOULD window of dra.health.stream: the first NodeWatchResources "
                  "message within this long of the call (s)")
      ->capture_default_str();
  cmd->callback([o, exit_code] { *exit_code = RunConformanceCommand(*o); });
}

}  // namespace devmgr::cli
