// DraPluginHandler: the plugin manager's handler for plugins of type
// "DRAPlugin" (pluginmanager::kDRAPluginType), the kubelet's DRA plugin
// manager (pkg/kubelet/cm/dra/plugin, 1.34+). It validates a driver's
// registration (name, the DRAPlugin service out of its list), keeps every
// registered instance of a driver (rolling update: several endpoints for one
// driver name), hands out the client of the newest connected instance, and
// monitors the connections: a driver left with no connected instance has its
// ResourceSlices wiped (the on_wipe hook) after a delay unless an instance
// connects again meanwhile.
#ifndef DEVMGR_DRA_DRA_PLUGIN_HANDLER_H_
#define DEVMGR_DRA_DRA_PLUGIN_HANDLER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/bind_paths.h"
#include "dra/connection_monitor.h"
#include "dra/dra_client.h"
#include "dra/health_stream.h"
#include "dra/services.h"
#include "dra/timers.h"
#include "kubelet/profile.h"
#include "pluginmanager/plugin_handler.h"

namespace devmgr::dra {

// The kubelet's wiping delay (#132058): how long a driver may stay without a
// connected instance before its ResourceSlices are deleted.
inline constexpr absl::Duration kDefaultWipingDelay = absl::Seconds(30);

struct DraPluginHandlerOptions {
  // The kubelet version emulated (1.34+).
  Profile profile;
  // Called with a driver's name when its ResourceSlices on this node are to
  // be deleted (the deletion itself is the caller's). Runs on the timers'
  // thread with no lock of the handler held. May be empty.
  std::function<void(const std::string& driver)> on_wipe;
  absl::Duration wiping_delay = kDefaultWipingDelay;
  // For every driver client; validate_utf8 and read_share_id are set from
  // the profile.
  DraClientOptions client;
  // Runs the wiping delay; nullptr: the handler's own RealTimers. An
  // injected one must outlive the handler and run no callback of it once
  // the handler is stopped.
  Timers* timers = nullptr;
  // How often the connection monitor re-reads a channel's state when it
  // sees no change (also bounds how long Stop takes).
  absl::Duration connection_recheck = absl::Seconds(1);
  // The bind mounts the drivers run under (serve --private-mount): an
  // endpoint a driver registers from inside them is dialled at its host path
  // (HostPathOf); any other endpoint as registered, as the kubelet does.
  // Logs, the endpoint's identity and Endpoints() keep the registered path.
  std::vector<BindPath> endpoint_binds;
  // The DRAResourceHealth streams (KEP-4680): every registered instance is
  // handed to them (Watch) and taken back at deregistration (Unwatch).
  // Not owned; nullptr: no health streams. Must outlive the handler.
  HealthStreams* health = nullptr;
};

// Thread-safe (called from the plugin manager's threads, the monitor's and
// the timers' threads). Stop is idempotent and run by the destructor.
class DraPluginHandler final : public pluginmanager::PluginHandler {
 public:
  // Fails (InvalidArgument) for a profile older than 1.34, whose DRA
  // registration devmgr does not emulate.
  static absl::StatusOr<std::unique_ptr<DraPluginHandler>> Create(DraPluginHandlerOptions opts);
  ~DraPluginHandler() override;
  DraPluginHandler(const DraPluginHandler&) = delete;
  DraPluginHandler& operator=(const DraPluginHandler&) = delete;

  // The kubelet's one check before registering, the service choice
  // (ChooseService in dra/services.h, its texts); an empty name is accepted.
  absl::Status ValidatePlugin(const std::string& name, const std::string& endpoint,
                              const std::vector<std::string>& versions) override;
  // Adds an instance of driver `name` at `endpoint` with the service chosen
  // from `versions` and starts connecting to it. Fails (AlreadyExists)
  // "endpoint <endpoint> already registered for DRA driver plugin <name>"
  // when the driver has an instance there; other endpoints of the same
  // driver are further instances (rolling update).
  absl::Status RegisterPlugin(const std::string& name, const std::string& endpoint,
                              const std::vector<std::string>& versions) override;
  // Removes that instance. When it was the driver's last one the wipe is
  // scheduled (unless one is pending). Unknown pairs are ignored.
  void DeRegisterPlugin(const std::string& name, const std::string& endpoint) override;

  // The client calls to `driver` go to: its newest connected instance, else
  // its newest. Fails (NotFound) "DRA driver <driver> is not registered";
  // (InvalidArgument) "DRA driver name is empty" for "" (never called).
  absl::StatusOr<std::shared_ptr<DraClient>> GetClient(const std::string& driver) const;
  // The drivers with at least one registered instance, by name.
  std::vector<std::string> Drivers() const;
  // How many instances of `driver` RegisterPlugin has added since the
  // handler was created (a registration waiter's "newer than before").
  int64_t RegistrationCount(const std::string& driver) const;
  // The driver's registered endpoints, oldest first (empty when none).
  std::vector<std::string> Endpoints(const std::string& driver) const;

  // Stops the connection monitor and cancels pending wipes. Registered
  // instances stay (the kubelet does not deregister at shutdown).
  void Stop();

  // Waits until the instance of `driver` at `endpoint` is (or is not)
  // connected, as the handler saw it; false after `timeout`. (The kubelet
  // has no such wait; the DRA conformance session and tests use it.)
  bool WaitForConnection(const std::string& driver, const std::string& endpoint, bool connected,
                         absl::Duration timeout) const;

 private:
  struct Instance {
    uint64_t id = 0;
    std::string endpoint;
    std::shared_ptr<DraClient> client;
    bool connected = false;
  };

  DraPluginHandler(DraPluginHandlerOptions opts, std::unique_ptr<Timers> own_timers);
  void OnConnectionChange(uint64_t id, bool connected) ABSL_LOCKS_EXCLUDED(mu_);
  void ScheduleWipeLocked(const std::string& driver) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CancelWipeLocked(const std::string& driver) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnWipeDue(const std::string& driver, Timers::Id id) ABSL_LOCKS_EXCLUDED(mu_);
  bool AnyConnectedLocked(const std::string& driver) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const DraPluginHandlerOptions opts_;
  const DraClientOptions client_opts_;
  // Owned timers (when none were injected), and the ones in use.
  std::unique_ptr<Timers> own_timers_;
  Timers* const timers_;

  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Driver name -> its instances in registration order (newest last).
  std::map<std::string, std::vector<Instance>> drivers_ ABSL_GUARDED_BY(mu_);
  // Driver name -> the instances RegisterPlugin added (RegistrationCount).
  std::map<std::string, int64_t> registrations_ ABSL_GUARDED_BY(mu_);
  // Driver name -> its pending wipe.
  std::map<std::string, Timers::Id> wipes_ ABSL_GUARDED_BY(mu_);

  // Declared last: its thread calls OnConnectionChange, so it must stop
  // before the members above go.
  ConnectionMonitor monitor_;
};

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_DRA_PLUGIN_HANDLER_H_
