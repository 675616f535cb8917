// `devmgr sample-dra-driver`: runs the reference DRA driver (src/draplugin)
// until SIGINT/SIGTERM. See docs/sample-dra-driver.md.
#include <signal.h>
#include <stdlib.h>

#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/sample_dra_driver_example.h"
#include "common/logging.h"
#include "draplugin/config.h"
#include "draplugin/sample_dra_driver.h"

namespace devmgr::cli {
namespace {

struct SampleDraDriverOptions {
  std::string config_path;
  draplugin::DriverOptions driver;
  int verbosity = 0;
  std::string logging_format = "text";
};

int RunSampleDraDriver(SampleDraDriverOptions o) {
  log::Init(o.verbosity, o.logging_format == "json" ? log::Format::kJson : log::Format::kText);
  absl::StatusOr<draplugin::Config> config;
  if (o.config_path.empty()) {
    DM_INFO("No --config given: running the documented example config (built in)",
            {"config", kSampleDraDriverExamplePath});
    config = draplugin::ParseConfig(kSampleDraDriverExampleYaml, kSampleDraDriverExamplePath);
  } else {
    config = draplugin::LoadConfig(o.config_path);
  }
  if (!config.ok()) {
    std::cerr << "devmgr sample-dra-driver: " << config.status().message() << "\n";
    return kExitUsage;
  }
  if (o.driver.kubeconfig.empty()) {
    const char* env = getenv("KUBECONFIG");
    if (env == nullptr || *env == '\0') {
      std::cerr << "devmgr sample-dra-driver: needs --kubeconfig or KUBECONFIG\n";
      return kExitUsage;
    }
    o.driver.kubeconfig = env;
  }
  if (o.driver.call_log.empty()) {
    const char* log = getenv(draplugin::kCallLogEnv);
    if (log != nullptr) o.driver.call_log = log;
  }
  // Block the stop signals in every thread (gRPC's included) and take them below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto d = std::make_unique<draplugin::SampleDraDriver>(*std::move(config), o.driver);
  absl::Status s = d->Start();
  if (!s.ok()) {
    DM_ERROR(std::string(s.message()), "Could not start the DRA driver");
    d->Stop();
    return kExitEnvironment;
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  DM_INFO("Received signal, shutting down", {"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"});
  d->Stop();
  return kExitOk;
}

}  // namespace

void AddSampleDraDriverCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<SampleDraDriverOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sample-dra-driver",
      "Run the reference DRA driver: serves the DRAPlugin API (v1, v1beta1) on a unix socket,\n"
      "registers through the kubelet's plugin watcher, publishes its devices as a\n"
      "ResourceSlice, prepares claims into CDI specs, and misbehaves on purpose as\n"
      "configured. Runs until SIGINT/SIGTERM.");
  cmd->add_option("--config", opts->config_path,
                  "The driver's YAML config (docs/sample-dra-driver.md). Default: the documented "
                  "example, examples/sample-dra-driver.yaml (built in): four sample GPUs");
  cmd->add_option("--node-name", opts->driver.node_name, "The node its ResourceSlice is for")
      ->required();
  cmd->add_option("--kubeconfig", opts->driver.kubeconfig,
                  "The kubeconfig naming the API server (plain http); default: $KUBECONFIG");
  cmd->add_option("--registry-dir", opts->driver.registry_dir,
                  "The kubelet's plugins_registry directory (gets <driver>-reg.sock)")
      ->capture_default_str();
  cmd->add_option("--plugin-dir", opts->driver.plugin_dir,
                  "The kubelet's plugins directory (gets <driver>/dra.sock and the state file)")
      ->capture_default_str();
  cmd->add_option("--cdi-dir", opts->driver.cdi_dir, "Where CDI specs are written")
      ->capture_default_str();
  cmd->add_option("--health-control", opts->driver.health_control,
                  "A file to watch for device health commands, one per line (e.g. 'health "
                  "gpu-0 Unhealthy ECC errors'), sent on the DRAResourceHealth streams the "
                  "driver serves (config health.serve; docs/sample-dra-driver.md)");
  cmd->add_option("--call-log", opts->driver.call_log,
                  "Append a JSON line for each NodePrepareResources/NodeUnprepareResources it "
                  "receives (docs/sample-dra-driver.md); default: $DEVMGR_DRA_CALL_LOG, else none");
  cmd->add_option("-v,--v", opts->verbosity, "Log verbosity (klog -v)")->capture_default_str();
  cmd->add_option("--logging-format", opts->logging_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([opts, exit_code] { *exit_code = RunSampleDraDriver(*opts); });
}

}  // namespace devmgr::cli
