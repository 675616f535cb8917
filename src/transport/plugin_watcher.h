// PluginWatcher: the kubelet's plugin manager (pkg/kubelet/pluginmanager:
// watcher, reconciler, operation generator) reduced to what device plugins
// see in "probe mode": sockets
// appearing under the plugins_registry directory are asked GetInfo, handed
// to the DevicePlugin handler's ValidatePlugin/RegisterPlugin and told the
// outcome with NotifyRegistrationStatus; a socket that disappears is
// DeRegisterPlugin'd.
//
// Discovery is a reconcile loop (the kubelet's reconciler period is 1 s)
// that walks the directory tree; fsnotify is not needed for the observable
// behaviour.
#ifndef DEVMGR_TRANSPORT_PLUGIN_WATCHER_H_
#define DEVMGR_TRANSPORT_PLUGIN_WATCHER_H_

#include <sys/types.h>

#include <list>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace devmgr::transport {

// The kubelet's cache.PluginHandler for type "DevicePlugin". Implemented by
// RegistrationServer. Called from the watcher's threads.
class WatcherPluginHandler {
 public:
  virtual ~WatcherPluginHandler() = default;
  virtual absl::Status ValidatePlugin(const std::string& name, const std::string& endpoint,
                                      const std::vector<std::string>& versions) = 0;
  virtual absl::Status RegisterPlugin(const std::string& name, const std::string& endpoint,
                                      const std::vector<std::string>& versions) = 0;
  // `endpoint` is what RegisterPlugin was given (1.30-1.33 ignore it).
  virtual void DeRegisterPlugin(const std::string& name, const std::string& endpoint) = 0;
};

struct PluginWatcherOptions {
  // The plugins_registry directory. Created (0755) by Start when missing.
  std::string dir;
  // The reconciler's loop period.
  absl::Duration period = absl::Seconds(1);
  absl::Duration dial_timeout = absl::Seconds(10);
  absl::Duration get_info_timeout = absl::Seconds(1);
  absl::Duration notify_timeout = absl::Seconds(5);
  // Failed registrations (before the plugin entered the actual state of the
  // world) are retried with exponential backoff, as nestedpendingoperations
  // does: 500 ms doubling up to 2 m 2 s.
  absl::Duration initial_retry_backoff = absl::Milliseconds(500);
  absl::Duration max_retry_backoff = absl::Minutes(2) + absl::Seconds(2);
  // 1.36+ (kubernetes#133335): when the handler's RegisterPlugin or the
  // NotifyRegistrationStatus call fails, the plugin is removed from the
  // actual state, DeRegisterPlugin'd (when the handler had registered it)
  // and retried with the backoff above. Before, it stayed in the actual
  // state and was not retried.
  bool deregister_failed_registrations = false;
};

// Thread-safe. Start once; Stop is idempotent and safe without Start.
class PluginWatcher {
 public:
  // `handler` must outlive the watcher.
  PluginWatcher(PluginWatcherOptions opts, WatcherPluginHandler* handler);
  ~PluginWatcher();
  PluginWatcher(const PluginWatcher&) = delete;
  PluginWatcher& operator=(const PluginWatcher&) = delete;

  absl::Status Start();
  // Stops the loop and joins every thread. In-flight registrations are
  // cancelled at their next wait. Registered plugins are not deregistered
  // (the kubelet does not either).
  void Stop();

  // Sockets currently registered (in the actual state of the world), for tests.
  std::vector<std::string> RegisteredSockets() const;

 private:
  struct SocketId {
    ino_t ino = 0;
    int64_t mtime_ns = 0;
    bool operator==(const SocketId& o) const { return ino == o.ino && mtime_ns == o.mtime_ns; }
  };
  struct Registered {
    SocketId id;
    std::string name;
    std::string endpoint;
  };
  struct Operation {
    std::thread thread;
    bool done = false;
  };
  struct Backoff {
    SocketId id;
    absl::Time not_before;
    absl::Duration next;
  };

  void Loop();
  void Reconcile();
  std::map<std::string, SocketId> Scan() const;
  // The register operation for one socket (runs on its own thread).
  void RegisterOperation(const std::string& path, SocketId id);
  bool Stopping() const;
  // 1.36+: takes a failed registration out of the actual state (and
  // deregisters it from the handler when `deregister`).
  void Unregister(const std::string& path, const std::string& name, const std::string& endpoint,
                  bool deregister);
  void ReapDoneOperations();

  // Constant after construction.
  const PluginWatcherOptions opts_;
  WatcherPluginHandler* const handler_;

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread loop_;  // touched by Start/Stop only
  std::map<std::string, Registered> actual_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<Operation>> pending_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Backoff> backoff_ ABSL_GUARDED_BY(mu_);
  absl::Mutex stop_mu_;
};

}  // namespace devmgr::transport

#endif  // DEVMGR_TRANSPORT_PLUGIN_WATCHER_H_
