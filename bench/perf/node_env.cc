#include "perf/node_env.h"

#include <filesystem>
#include <fstream>

#include "common/status_util.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "kubelet/profile.h"
#include "plugin/config.h"
#include "scenario/run/plugin_host.h"

namespace perf_bench {

using devmgr::scenario::ShellQuote;

std::string PluginYaml(int devices, bool preferred) {
  return fmt::format(R"(resource: {}
socket: bench-gpu.sock
devices:
  - count: {}
    id_prefix: GPU-
options:
  get_preferred_allocation_available: {}
allocate:
  envs: {{VISIBLE_DEVICES: "{{{{.DeviceIDs}}}}"}}
  mounts:
    - {{container_path: /usr/lib/x, host_path: /opt/x/lib, read_only: true}}
  device_specs:
    - {{container_path: /dev/ctl, host_path: /dev/ctl, permissions: rw}}
  per_device:
    device_specs:
      - {{container_path: "/dev/gpu{{{{.DeviceIndex}}}}", host_path: "/dev/{{{{.DeviceID}}}}", permissions: rw}}
)",
                     kResource, devices, preferred ? "true" : "false");
}

NodeEnv::NodeEnv(const std::string& tmp_root, const EnvOptions& eo) {
  dir_ = MakeTempDir(tmp_root, "bench");
  devmgr::node::NodeOptions o;
  o.plugin_dir = dir_;
  o.profile = devmgr::DefaultProfile();
  o.fsync = eo.fsync;
  o.filesystem = &fs_;
  // The admission's own Allocate RPC, as the manager times it (for the
  // split of an admission into its RPC and the rest).
  o.on_allocate_rpc = [this](const std::string&, absl::Duration d) {
    last_rpc_us_.store(absl::ToDoubleMicroseconds(d));
  };
  node_ = std::make_unique<devmgr::node::Node>(o);
  node_->manager().SetChangeCallback([this] { notes_.Notify(); });
  pods_ = std::make_unique<devmgr::node::PodManager>(node_.get());
  if (!node_->Start(pods_->MakeStartOptions(false)).ok()) Die("node start failed");
  if (eo.peer != nullptr) {
    resource_ = eo.peer->resource;
    bare_device_ = eo.peer->device;
    plugin_status_ = StartProcess("exec " + ShellQuote(eo.peer->binary), /*private_mount=*/true, 0);
    return;
  }
  const std::string yaml = PluginYaml(eo.devices, eo.preferred);
  if (!eo.devmgr.empty()) {
    // The plugin's config lives outside the device-plugin directory.
    config_dir_ = MakeTempDir(tmp_root, "bench-plugin");
    const std::string config = config_dir_ + "/plugin.yaml";
    std::ofstream(config) << yaml;
    plugin_status_ = StartProcess(SamplePluginCommand(eo.devmgr, config, dir_),
                                  /*private_mount=*/false, eo.devices);
    if (!plugin_status_.ok()) Die("the reference plugin: " + plugin_status_.ToString());
    return;
  }
  auto cfg = devmgr::plugin::ParseConfig(yaml, "bench-plugin");
  if (!cfg.ok()) Die(std::string(cfg.status().message()));
  devmgr::plugin::PluginOptions po;
  po.dir = dir_;
  po.registry_dir = dir_;
  plugin_ = std::make_unique<devmgr::plugin::SamplePlugin>(*cfg, po);
  if (!plugin_->Start().ok()) Die("plugin start failed");
  if (!notes_.WaitFor([&] { return Allocatable() == eo.devices; })) {
    Die("the plugin did not register");
  }
  plugin_socket_ = dir_ + "/bench-gpu.sock";
}

NodeEnv::~NodeEnv() {
  if (plugin_) plugin_->Stop();
  if (process_) process_->Stop();
  node_->Stop();
  pods_.reset();
  plugin_.reset();
  process_.reset();
  node_.reset();
  std::filesystem::remove_all(dir_);
  if (!config_dir_.empty()) std::filesystem::remove_all(config_dir_);
  if (!peer_tmp_.empty()) std::filesystem::remove_all(peer_tmp_);
}

absl::Status NodeEnv::StartProcess(const std::string& command, bool private_mount, int devices) {
  devmgr::node::PluginProcessOptions po;
  po.command = command;
  po.private_mount = private_mount;
  po.plugin_dir = dir_;
  if (private_mount) {
    peer_tmp_ = MakeTempDir(std::filesystem::path(dir_).parent_path().string(), "bench-peer-tmp");
    po.extra_binds = {{peer_tmp_, "/tmp"}};
  }
  process_ = std::make_unique<devmgr::node::PluginProcess>(po);
  DEVMGR_RETURN_IF_ERROR(process_->Start());
  bool registered = false;
  notes_.WaitFor(
      [&] {
        const int64_t n = Allocatable();
        registered = devices > 0 ? n == devices : n > 0;
        return registered || process_->WaitExit(absl::ZeroDuration());
      },
      absl::Seconds(30));
  if (!registered) {
    const std::vector<std::string> tail = process_->OutputTail(3);
    const std::string what = process_->running()
                                 ? "did not register within 30 s"
                                 : fmt::format("exited with code {} before it registered",
                                               process_->exit_code().value_or(-1));
    return absl::UnavailableError(
        fmt::format("the plugin {}{}{}", what,
                    tail.empty() ? "" : "; its last output: ", fmt::join(tail, " | ")));
  }
  if (devices > 0) {  // the reference plugin: its socket is known
    plugin_socket_ = dir_ + "/bench-gpu.sock";
    return absl::OkStatus();
  }
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    if (e.is_socket() && e.path().filename() != "kubelet.sock") plugin_socket_ = e.path();
  }
  if (plugin_socket_.empty()) return absl::UnavailableError("no plugin socket in " + dir_);
  return absl::OkStatus();
}

}  // namespace perf_bench
