// PluginManager: the kubelet's pkg/kubelet/pluginmanager. Registration sockets
// under the plugins_registry directory are found by the watcher (desired
// state of the world), registered through the handler of their type by the
// operation executor (actual state of the world), and unregistered when their
// socket goes away; the reconciler drives both once per period.
//
// One handler per plugin type: the node adds the device manager's
// registration server for "DevicePlugin"; a plugin of a type without a handler
// is told "RegisterPlugin error -- no handler registered for plugin type:
// <type> at socket <path>" through NotifyRegistrationStatus.
#ifndef DEVMGR_PLUGINMANAGER_PLUGIN_MANAGER_H_
#define DEVMGR_PLUGINMANAGER_PLUGIN_MANAGER_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pluginmanager/cache.h"
#include "pluginmanager/operation_executor.h"
#include "pluginmanager/plugin_handler.h"
#include "pluginmanager/plugin_watcher.h"
#include "pluginmanager/reconciler.h"
#include "pluginmanager/registration_client.h"

namespace devmgr::pluginmanager {

struct PluginManagerOptions {
  // The plugins_registry directory. Created (0755) by Start when missing.
  std::string dir;
  // The reconciler's loop period.
  absl::Duration period = absl::Seconds(1);
  OperationExecutorOptions operations;
};

// Thread-safe. AddHandler before Start; Start once; Stop is idempotent, safe
// without Start, and run by the destructor.
class PluginManager {
 public:
  // `dialer` connects to registration sockets (transport::DialRegistration).
  PluginManager(PluginManagerOptions opts, RegistrationDialer dialer);
  ~PluginManager();
  PluginManager(const PluginManager&) = delete;
  PluginManager& operator=(const PluginManager&) = delete;

  // The handler of plugins of `type` (a PluginInfo.type such as
  // kDevicePluginType). `handler` must outlive the plugin manager.
  // Fails (FailedPrecondition) once started, or when `type` has a handler.
  absl::Status AddHandler(const std::string& type, PluginHandler* handler);

  // Starts the watcher (creating the directory) and the reconciler loop.
  absl::Status Start();
  // Stops the loop and joins every thread. In-flight registrations are
  // cancelled at their next wait. Registered plugins are not deregistered
  // (the kubelet does not either).
  void Stop();

  // Sockets currently registered (in the actual state of the world).
  std::vector<std::string> RegisteredSockets() const;

 private:
  void Loop();

  // Constant after construction.
  const PluginManagerOptions opts_;
  // Written by AddHandler before Start only, read by the executor after.
  HandlerMap handlers_;
  DesiredStateOfWorld dsw_;
  ActualStateOfWorld asw_;
  PluginWatcher watcher_;
  OperationExecutor executor_;
  Reconciler reconciler_;

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread loop_;  // touched by Start/Stop only
  absl::Mutex stop_mu_;
};

}  // namespace devmgr::pluginmanager

#endif  // DEVMGR_PLUGINMANAGER_PLUGIN_MANAGER_H_
