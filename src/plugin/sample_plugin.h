// SamplePlugin: the reference device plugin. It serves v1beta1.DevicePlugin
// on a unix socket in the device-plugin directory and registers with the
// kubelet the way well-behaved plugins do (serve first, then Register on
// kubelet.sock, or through the plugins_registry directory), re-registers
// after a kubelet restart, and can misbehave on purpose as configured
// (fault injection) for tests. Used in-process by tests and by
// `devmgr sample-plugin`.
#ifndef DEVMGR_PLUGIN_SAMPLE_PLUGIN_H_
#define DEVMGR_PLUGIN_SAMPLE_PLUGIN_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "plugin/call_log.h"
#include "plugin/config.h"

namespace grpc {
class ClientContext;
}  // namespace grpc

namespace devmgr::plugin {

class PluginCore;
class DirWatcher;
class ControlFileReader;
struct ControlCommand;
struct ServerHandle;

inline constexpr char kDefaultDevicePluginDir[] = "/var/lib/kubelet/device-plugins";
inline constexpr char kDefaultPluginsRegistryDir[] = "/var/lib/kubelet/plugins_registry";
inline constexpr char kKubeletSocketName[] = "kubelet.sock";

struct PluginOptions {
  std::string dir = kDefaultDevicePluginDir;
  std::string registry_dir = kDefaultPluginsRegistryDir;  // plugins-registry mode
  std::string control_path;                               // "" = none
  std::string call_log_path;                              // "" = memory only
  // Called when an `exit` fault fires; the CLI ends the process. In-process,
  // leave it empty: the RPC then never answers (see PluginCore::RequestExit).
  std::function<void(int)> on_exit;
};

// Thread-safe. Stop() (also run by the destructor) joins every thread it
// started and removes the sockets it created.
class SamplePlugin {
 public:
  SamplePlugin(Config config, PluginOptions options);
  ~SamplePlugin();
  SamplePlugin(const SamplePlugin&) = delete;
  SamplePlugin& operator=(const SamplePlugin&) = delete;

  // Starts serving and the registration loop; returns once the device-plugin
  // socket (unless serve_before_register is false) and, in plugins-registry
  // mode, the registration socket are listening. Registration
  // happens asynchronously: use WaitForRegistered(). Fails when a directory
  // is missing or the socket cannot be served. REQUIRES: called at most once.
  absl::Status Start();
  // Idempotent; safe without Start(). Ends open streams and hanging calls,
  // cancels an in-flight Register, shuts the servers down, joins the threads
  // and unlinks the plugin's sockets (only if they are still the ones it made).
  void Stop();

  // Sets the health of every device with this id and sends the new list on
  // open ListAndWatch streams. False when the id is unknown.
  bool SetHealth(const std::string& device_id, const std::string& health);
  // Replaces the device list (sent on open streams).
  void SetDevices(std::vector<DeviceConfig> devices);
  std::vector<DeviceConfig> Devices() const;
  // Ends every open ListAndWatch stream with status OK.
  void EndStreams();
  // Runs one control-file command (see control.h). InvalidArgument for a bad line.
  absl::Status ApplyControl(const std::string& line);

  // True once a registration succeeded (Register returned OK, or the kubelet
  // notified plugin_registered=true); false on timeout.
  bool WaitForRegistered(absl::Duration timeout) const;
  // Waits for the n-th successful registration.
  bool WaitForRegistrations(int n, absl::Duration timeout) const;
  int registrations() const;
  // The error of the last failed registration ("" if none).
  std::string last_registration_error() const;
  // Every RPC received (and Register sent), in order.
  std::vector<CallRecord> CallLog() const;
  // Waits until `method` was called at least n times.
  bool WaitForCalls(const std::string& method, int n, absl::Duration timeout) const;
  // The exit code requested by an `exit` fault, if one fired.
  std::optional<int> exit_requested() const;

  // The absolute path of the device-plugin socket.
  std::string socket_path() const;
  // The absolute path of the registration socket (plugins-registry mode).
  std::string registry_socket_path() const;

 private:
  enum class Pending { kRestart, kRegister, kStartDevicePluginServer };

  void Loop();
  // Loop()'s state between iterations.
  struct LoopState {
    bool registry_mode = false;
    std::string kubelet_socket;
    bool need_restart = false;
    bool need_register = false;
    absl::Time last_restart = absl::InfinitePast();
    std::optional<absl::Time> register_after_socket_loss;
    // registration.reregister_delay: when the delayed restart is due.
    std::optional<absl::Time> delayed_restart;
    // When the loop last looked at its own sockets (see Loop).
    absl::Time sockets_looked_at = absl::InfinitePast();
    // The kubelet.sock the last Register went to (inode and change time):
    // a Create event for that same socket, seen after registering, is not a
    // new kubelet.
    std::string registered_kubelet;
  };
  // Restarts/registers when asked to; true when it registered (the loop then
  // looks at the world again before waiting).
  bool ActOnNeeds(LoopState& st);
  // How long the loop may wait for an event.
  absl::Duration LoopWait(const LoopState& st) const;
  // Requests queued by other threads (control commands, RPC handlers).
  void TakePending(LoopState& st);
  // registration.reregister_delay: one restart, that long after a new kubelet.
  void DelayedReregistration(LoopState& st, bool kubelet_created, bool look_at_sockets);
  // The own socket removed or kubelet.sock (re)created: serve and register again.
  void ReactToSockets(LoopState& st, bool kubelet_created, bool look_at_sockets);
  void HealthChanges();
  void ProcessControlFile();
  void RunCommand(const ControlCommand& c);
  void Enqueue(Pending p);

  // Loop-thread only (or Start/Stop while the loop is not running).
  absl::Status StartDevicePluginServer();
  absl::Status StartRegistryServer();
  void StopServer(std::unique_ptr<ServerHandle>* s);
  void RestartServers();
  void Register();
  bool OwnSocketIntact(const ServerHandle* s) const;
  // Whether dir/name is the path of one of the plugin's own sockets.
  bool NamesOwnSocket(const std::string& dir, const std::string& name) const;

  const PluginOptions options_;
  const std::unique_ptr<PluginCore> core_;
  std::unique_ptr<DirWatcher> watcher_;
  std::unique_ptr<ControlFileReader> control_;
  std::unique_ptr<ServerHandle> dp_server_;
  std::unique_ptr<ServerHandle> registry_server_;
  std::thread loop_thread_;
  std::thread health_thread_;
  absl::Time start_time_;

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Pending> pending_ ABSL_GUARDED_BY(mu_);
  grpc::ClientContext* register_ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace devmgr::plugin

#endif  // DEVMGR_PLUGIN_SAMPLE_PLUGIN_H_
