// `devmgr sample-plugin`: runs the reference device plugin (src/plugin) until
// SIGINT/SIGTERM. See docs/sample-plugin.md.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/sample_plugin_example.h"
#include "common/logging.h"
#include "plugin/config.h"
#include "plugin/sample_plugin.h"

namespace devmgr::cli {
namespace {

struct SamplePluginOptions {
  std::string config_path;
  std::string dir = plugin::kDefaultDevicePluginDir;
  std::string registry_dir = plugin::kDefaultPluginsRegistryDir;
  std::string control_path;
  std::string call_log_path;
  int verbosity = 0;
  std::string logging_format = "text";
};

int RunSamplePlugin(const SamplePluginOptions& o) {
  log::Init(o.verbosity, o.logging_format == "json" ? log::Format::kJson : log::Format::kText);
  absl::StatusOr<plugin::Config> config;
  if (o.config_path.empty()) {
    DM_INFO("No --config given: running the documented example config (built in)",
            {"config", kSamplePluginExamplePath});
    config = plugin::ParseConfig(kSamplePluginExampleYaml, kSamplePluginExamplePath);
  } else {
    config = plugin::LoadConfig(o.config_path);
  }
  if (!config.ok()) {
    std::cerr << "devmgr sample-plugin: " << config.status().message() << "\n";
    return kExitUsage;
  }
  // Block the stop signals in every thread (gRPC's included, which inherit
  // the mask) and take them synchronously below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  plugin::PluginOptions po;
  po.dir = o.dir;
  po.registry_dir = o.registry_dir;
  po.control_path = o.control_path;
  po.call_log_path = o.call_log_path;
  po.on_exit = [](int code) {
    DM_INFO("Exiting on an injected fault", {"code", code});
    std::fflush(nullptr);
    std::_Exit(code);
  };
  auto p = std::make_unique<plugin::SamplePlugin>(*std::move(config), po);
  absl::Status s = p->Start();
  if (!s.ok()) {
    DM_ERROR(std::string(s.message()), "Could not start the device plugin");
    p->Stop();
    return kExitEnvironment;
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  DM_INFO("Received signal, shutting down", {"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"});
  p->Stop();
  return kExitOk;
}

}  // namespace

void AddSamplePluginCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<SamplePluginOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sample-plugin",
      "Run the reference device plugin: serves the device plugin API v1beta1 on a unix\n"
      "socket, registers with the kubelet (or devmgr serve), re-registers after a kubelet\n"
      "restart, and misbehaves on purpose as configured. Runs until SIGINT/SIGTERM.");
  cmd->add_option("--config", opts->config_path,
                  "The plugin's YAML config (docs/sample-plugin.md). Default: the documented "
                  "example, examples/sample-plugin.yaml (built in): four example.com/gpu devices "
                  "on two NUMA nodes");
  cmd->add_option("--dir", opts->dir, "The device-plugin directory holding kubelet.sock")
      ->capture_default_str();
  cmd->add_option("--registry-dir", opts->registry_dir,
                  "The kubelet's plugins_registry directory (registration.mode plugins-registry)")
      ->capture_default_str();
  cmd->add_option("--control", opts->control_path,
                  "A file to watch for control commands, one per line (e.g. 'health dev-1 "
                  "Unhealthy')");
  cmd->add_option("--call-log", opts->call_log_path,
                  "Append one JSON line per RPC received (and Register sent) to this file");
  cmd->add_option("-v,--v", opts->verbosity, "Log verbosity (klog -v)")->capture_default_str();
  cmd->add_option("--logging-format", opts->logging_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([opts, exit_code] { *exit_code = RunSamplePlugin(*opts); });
}

}  // namespace devmgr::cli
