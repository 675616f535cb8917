// PluginHost: one scenario plugin at run time: its process (a command, or
// `devmgr sample-plugin` with the inline config written to a file), its
// control file and call log, and the signals steps send it.
#ifndef DEVMGR_SCENARIO_RUN_PLUGIN_HOST_H_
#define DEVMGR_SCENARIO_RUN_PLUGIN_HOST_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "process/plugin_process.h"
#include "scenario/format/scenario.h"

namespace devmgr::scenario {

// Paths and variables every plugin and `run` command sees.
struct HostEnv {
  std::string devmgr_bin;
  std::string work_dir;
  std::string plugin_dir;
  std::string registry_dir;  // "" when off
  std::string scenario_dir;
  std::string kubelet_version;
  std::string pod_resources_socket;  // "" when off
  std::string metrics_url;           // "" when not served
  // DRA scenarios ("" otherwise): the API endpoint's kubeconfig, the node's
  // name, a plugins directory for the drivers' sockets, a CDI directory,
  // and the DRA manager's checkpoint.
  std::string kubeconfig;
  std::string node_name;
  std::string dra_plugin_dir;
  std::string cdi_dir;
  std::string dra_checkpoint;
  // DEVMGR_BIN, DEVMGR_PLUGIN_DIR, DEVMGR_REGISTRY_DIR, DEVMGR_WORK_DIR,
  // DEVMGR_SCENARIO_DIR, DEVMGR_CHECKPOINT, DEVMGR_KUBELET_VERSION,
  // DEVMGR_POD_RESOURCES_SOCKET, DEVMGR_METRICS_URL; with DRA also
  // KUBECONFIG, DEVMGR_NODE_NAME, DEVMGR_DRA_PLUGIN_DIR, DEVMGR_CDI_DIR,
  // DEVMGR_DRA_CHECKPOINT.
  std::map<std::string, std::string> Vars() const;
  // The kubelet's directories a plugin process gets (bound over the kubelet's
  // paths when `private_mount`): the device-plugin and registry directories,
  // and in DRA scenarios the drivers' plugins and CDI directories.
  node::PluginProcessOptions ProcessDirs(bool private_mount) const;
};

// Single-quotes `s` for /bin/sh.
std::string ShellQuote(const std::string& s);

// Thread-compatible (the runner drives it from one thread).
class PluginHost {
 public:
  PluginHost(const PluginSpec& spec, const HostEnv& env);
  ~PluginHost();

  // Writes the sample config, creates an empty call log and control file.
  absl::Status Prepare();
  // Starts the process. FailedPrecondition for external plugins, or when
  // the private mount namespace is unavailable (an environment problem).
  absl::Status Start();
  // SIGCONT (a paused process cannot act on SIGTERM), SIGTERM, then SIGKILL
  // after `grace`. Idempotent.
  void Stop(absl::Duration grace = absl::Seconds(3));
  void Kill();
  void Signal(int sig);
  bool running() const;
  bool paused() const { return paused_; }
  bool started_once() const { return started_once_; }

  // Appends one line to the control file.
  absl::Status Control(const std::string& line);
  // Call-log records (parsed JSON lines), all since the first start.
  std::vector<nlohmann::json> Calls() const;
  // Remembers the current number of calls: CallsSinceMark() returns later ones.
  void MarkCalls();
  std::vector<nlohmann::json> CallsSinceMark() const;
  bool has_call_log() const { return !call_log_.empty(); }

  std::vector<std::string> OutputTail(size_t n) const;
  std::string Describe() const;  // "pid 123, running" / "exited with 1" / ...
  const PluginSpec& spec() const { return spec_; }
  const std::string& command_line() const { return command_; }

 private:
  const PluginSpec spec_;
  const HostEnv env_;
  std::string config_path_;
  std::string control_;
  std::string call_log_;
  std::string command_;
  std::unique_ptr<node::PluginProcess> process_;
  // Output of processes that were replaced by a restart.
  std::vector<std::string> old_output_;
  size_t mark_ = 0;
  bool paused_ = false;
  bool started_once_ = false;
  // The call log is $DEVMGR_DRA_CALL_LOG of a DRA driver (set at Start).
  bool dra_call_log_env_ = false;
};

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_RUN_PLUGIN_HOST_H_
