// OperationExecutor: the kubelet's pluginmanager operationexecutor (with its
// operation generator and nestedpendingoperations). A registration runs on a
// thread of its own, one at a time per socket:
//   dial (10 s), GetInfo (1 s), look the handler up by the plugin's type,
//   ValidatePlugin, add to the actual state, RegisterPlugin, and tell the
//   plugin the outcome with NotifyRegistrationStatus (5 s);
// a registration that fails before the plugin entered the actual state is
// retried no sooner than its backoff allows. Unregistration is immediate:
// out of the actual state, then the handler's DeRegisterPlugin.
#ifndef DEVMGR_PLUGINMANAGER_OPERATION_EXECUTOR_H_
#define DEVMGR_PLUGINMANAGER_OPERATION_EXECUTOR_H_

#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pluginmanager/cache.h"
#include "pluginmanager/plugin_handler.h"
#include "pluginmanager/registration_client.h"

namespace devmgr::pluginmanager {

struct OperationExecutorOptions {
  absl::Duration dial_timeout = absl::Seconds(10);
  absl::Duration get_info_timeout = absl::Seconds(1);
  absl::Duration notify_timeout = absl::Seconds(5);
  // Failed registrations (before the plugin entered the actual state of the
  // world) are retried with exponential backoff, as nestedpendingoperations
  // does: 500 ms doubling up to 2 m 2 s.
  absl::Duration initial_retry_backoff = absl::Milliseconds(500);
  absl::Duration max_retry_backoff = absl::Minutes(2) + absl::Seconds(2);
  // 1.36+ (Profile::watcher_failure_deregisters): when the handler's
  // RegisterPlugin or the NotifyRegistrationStatus call fails, the plugin is
  // removed from the actual state, DeRegisterPlugin'd (when the handler had
  // registered it) and retried with the backoff above. Before, it stayed in
  // the actual state and was not retried.
  bool deregister_failed_registrations = false;
};

// Thread-safe.
class OperationExecutor {
 public:
  // `handlers` and `asw` must outlive the executor; `handlers` does not
  // change while the executor runs.
  OperationExecutor(OperationExecutorOptions opts, RegistrationDialer dialer,
                    const HandlerMap* handlers, ActualStateOfWorld* asw);
  ~OperationExecutor();
  OperationExecutor(const OperationExecutor&) = delete;
  OperationExecutor& operator=(const OperationExecutor&) = delete;

  // Starts registering the socket unless an operation for it is pending, it
  // is waiting out its backoff, or the executor is stopping.
  void RegisterPlugin(const std::string& socket_path, SocketIdentity id);
  // Out of the actual state, then the handler's DeRegisterPlugin (on the
  // caller's thread).
  void UnregisterPlugin(const PluginInfo& info);
  bool IsOperationPending(const std::string& socket_path) const;
  // Forgets the backoff of every socket that is no longer desired with the
  // same identity (a re-created socket is tried at once).
  void ForgetBackoffs(const std::map<std::string, SocketIdentity>& desired);
  // Joins the threads of finished operations.
  void ReapDoneOperations();
  // Cancels the waits of in-flight operations and joins every thread.
  // Idempotent.
  void Stop();

 private:
  struct Operation {
    std::thread thread;
    bool done = false;
  };
  struct Backoff {
    SocketIdentity id;
    absl::Time not_before;
    absl::Duration next;
  };
  struct Attempt;

  // The operation generator's register function: the error the operation
  // ends with ("" on success); `attempt->added` tells whether the plugin
  // entered (and stayed in) the actual state.
  std::string Register(Attempt* attempt);
  // The handler's half, once the plugin's type has a handler.
  std::string RegisterWithHandler(Attempt* attempt, PluginHandler* handler);
  // Sends a failure to the plugin; returns what the operation reports.
  std::string NotifyFailure(Attempt* attempt, const std::string& error,
                            const std::string& reported);
  void RunOperation(const std::string& socket_path, SocketIdentity id);
  bool Stopping() const;

  // Constant after construction.
  const OperationExecutorOptions opts_;
  const RegistrationDialer dialer_;
  const HandlerMap* const handlers_;
  ActualStateOfWorld* const asw_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::unique_ptr<Operation>> pending_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Backoff> backoff_ ABSL_GUARDED_BY(mu_);
  absl::Mutex stop_mu_;
};

}  // namespace devmgr::pluginmanager

#endif  // DEVMGR_PLUGINMANAGER_OPERATION_EXECUTOR_H_
