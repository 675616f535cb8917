// PluginCore: the state shared by the sample plugin's gRPC services and its
// registration loop: config, devices, call log, fault counters, stop and
// stream-ending flags, the exit hook and the registration status.
#ifndef DEVMGR_PLUGIN_PLUGIN_CORE_H_
#define DEVMGR_PLUGIN_PLUGIN_CORE_H_

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "plugin/call_log.h"
#include "plugin/config.h"
#include "plugin/device_state.h"

namespace devmgr::plugin {

// Thread-safe.
class PluginCore {
 public:
  explicit PluginCore(Config config);
  PluginCore(const PluginCore&) = delete;
  PluginCore& operator=(const PluginCore&) = delete;

  const Config& config() const { return config_; }
  DeviceState& devices() { return devices_; }
  CallLog& call_log() { return call_log_; }

  // Counts one call of `rpc` and returns the fault that applies to this call,
  // or nullptr when it is served normally. For kRegister, a non-null result
  // also means that config().register_overrides apply to this call.
  const FaultConfig* CountCall(Rpc rpc);

  bool stopping() const { return stopping_.load(); }
  void SetStopping();

  // ListAndWatch streams end (with OK) when the epoch they started in is over.
  uint64_t stream_epoch() const { return stream_epoch_.load(); }
  void EndStreams();

  // The `exit` fault. The handler (set by the CLI) normally ends the process;
  // without one, or if it returns, the RPC then hangs until Stop(), as a dead
  // process would never answer.
  void SetExitHandler(std::function<void(int)> handler);
  void RequestExit(int code);
  std::optional<int> exit_requested() const;

  // Registration outcomes: Register returned OK, or NotifyRegistrationStatus
  // said plugin_registered.
  void RecordRegistration(bool ok, const std::string& error);
  int registrations() const;
  std::string last_registration_error() const;
  bool WaitForRegistrations(int n, absl::Duration timeout) const;

  // A fresh device id for grow_on_allocate: "grown-1", "grown-2", ...
  std::string NextGrownId();

 private:
  const Config config_;
  DeviceState devices_;
  CallLog call_log_;
  std::atomic<int> calls_[kNumRpcs] = {};
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> stream_epoch_{0};
  std::atomic<int> grown_{0};

  mutable absl::Mutex mu_;
  std::function<void(int)> exit_handler_ ABSL_GUARDED_BY(mu_);
  std::optional<int> exit_requested_ ABSL_GUARDED_BY(mu_);
  int registrations_ ABSL_GUARDED_BY(mu_) = 0;
  std::string last_registration_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::plugin

#endif  // DEVMGR_PLUGIN_PLUGIN_CORE_H_
