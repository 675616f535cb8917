// DraSession: one DRA check's world. A fresh kubelet root (plugins_registry,
// plugins, cdi), the embedded API endpoint with the node and a kubeconfig,
// the kubelet's plugin manager with its "DRAPlugin" handler watching the
// registry, and the driver started by the tester. The checks read what the
// driver did (its registration, its ResourceSlices) and make the kubelet's
// calls through the handler's client with claims allocated in the store
// from the driver's slices.
#ifndef DEVMGR_CONFORMANCE_DRA_SESSION_H_
#define DEVMGR_CONFORMANCE_DRA_SESSION_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "apiserver/server.h"
#include "conformance/dra_target.h"
#include "conformance/mono_time.h"
#include "dra/dra_client.h"
#include "dra/dra_plugin_handler.h"
#include "dra/timers.h"
#include "grpcpp/channel.h"
#include "kubelet/profile.h"
#include "nlohmann/json.hpp"
#include "pluginmanager/plugin_manager.h"

namespace devmgr::conformance {

// Every wait of a DRA session (docs/conformance.md, "Time windows").
struct DraTimeouts {
  // dra.registration: a registration socket answering GetInfo within this
  // long of the driver's start (the device-plugin catalogue's window).
  absl::Duration register_within = absl::Seconds(30);
  // dra.slices: the driver's ResourceSlices for the node within this long
  // of its registration.
  absl::Duration publish_within = absl::Seconds(30);
  // dra.health.stream: the first message of NodeWatchResources within this
  // long of the call. The kubelet waits without a deadline; this is its
  // report timeout (healthTimeout, pkg/kubelet/cm/dra/healthinfo.go), how
  // long one report keeps a device's health from reading Unknown.
  absl::Duration health_within = absl::Seconds(30);
  // The deadline of every NodePrepareResources and NodeUnprepareResources:
  // the kubelet's defaultClientCallTimeout.
  absl::Duration call = dra::kDefaultCallTimeout;
  // How long the driver may take to exit after SIGTERM at the session's end.
  absl::Duration stop_grace = absl::Seconds(2);
};

struct DraSessionOptions {
  std::string dir;  // absolute kubelet root, wiped at Begin
  DraTimeouts timeouts;
  Profile profile = DefaultProfile();
  std::string node_name = "devmgr-conformance-node";
  // Fault SPECs for the API endpoint (--api-fault), already checked.
  std::vector<std::string> api_faults;
};

// One registration attempt as the plugin manager made it.
struct DraRegistrationRecord {
  std::string socket;  // the registration socket
  MonoTime at;         // when GetInfo answered (or failed)
  absl::Status info_status;
  pluginmanager::RegistrationInfo info;
  // Whether the endpoint (an absolute path) accepted a connection right
  // after GetInfo answered.
  bool served_at_info = false;
  // What the kubelet told the driver (NotifyRegistrationStatus); unset until then.
  std::optional<bool> registered;
  std::string error;
};

// A claim the session created, allocated and reserved for a pod of its own.
struct DraTestClaim {
  dra::Claim claim;
  nlohmann::json pod;
  // status.allocation.devices.results of the claim.
  nlohmann::json results = nlohmann::json::array();
};

// One NodePrepareResources or NodeUnprepareResources call of the session.
struct DraCallRecord {
  std::string method;
  std::vector<std::string> claims;  // "ns/name"
  absl::Duration took;
  absl::Status status;
};

// Not thread-safe: driven by one check at a time (the plugin manager's
// threads only record registrations).
class DraSession {
 public:
  DraSession(DraTarget* target, DraSessionOptions opts);
  ~DraSession();
  DraSession(const DraSession&) = delete;
  DraSession& operator=(const DraSession&) = delete;

  // Prepares the root, starts the API endpoint, the plugin manager and the
  // driver, then waits (bounded by register_within from the driver's start)
  // until the kubelet accepted a registration or refused one, and for an
  // accepted one until the kubelet's client is connected to the endpoint, so
  // that a driver serving late is judged by dra.serves-first only. Errors
  // are environment problems only.
  absl::Status Begin();
  // Stops the driver, the plugin manager and the API endpoint.
  void End();

  const DraTimeouts& t() const { return opts_.timeouts; }
  const Profile& profile() const { return opts_.profile; }
  const DraEnv& env() const { return env_; }
  DraTarget& target() { return *target_; }
  // Where the kubelet dials a path the driver registered: the host path of one
  // inside the driver's binds (--private-mount), else the path itself.
  std::string HostPath(const std::string& path) const { return HostPathOf(path, binds_); }
  apiserver::ApiServer& api() { return *api_; }
  MonoTime driver_started_at() const { return started_at_; }

  // Every registration attempt so far, oldest first.
  std::vector<DraRegistrationRecord> Registrations() const;
  // The first attempt whose GetInfo answered; nullopt when none did.
  std::optional<DraRegistrationRecord> FirstInfo() const;
  // The driver name the kubelet registered; "" when it accepted none.
  std::string Driver() const;
  // Why no registration was accepted: the driver exited, the kubelet refused
  // it, or none came within the window. For skips: "... (see dra.registration)".
  std::string NoRegistrationReason() const;

  // The driver's ResourceSlices for the node, waited for once (up to
  // publish_within after Begin) until its pools are complete. Empty when
  // none came.
  const std::vector<nlohmann::json>& Slices();

  // A claim named `name` with one request of `count` devices of the driver,
  // created in the store, allocated from its slices and reserved for a pod
  // of its own. Errors say why (no devices left, ...).
  absl::StatusOr<DraTestClaim> NewClaim(const std::string& name, int count = 1);
  // The same with `devices` as the claim's spec.devices (requests naming
  // DeviceClass kDraDeviceClass, configs).
  absl::StatusOr<DraTestClaim> NewClaimWith(const std::string& name, const nlohmann::json& devices);
  // Releases the pod's reservation, the allocation and the claim.
  void DeleteClaim(const DraTestClaim& claim);
  // Publishes, once, a ResourceSlice of a second driver of the tester's own
  // (kDraOtherDriver: pool the node's name, devices kDraOtherDevices) for the
  // node, and DeviceClass kDraOtherDeviceClass selecting its devices, so that
  // a claim can hold devices of two drivers. Nothing serves that driver.
  absl::Status PublishOtherDriver();

  // The gRPC channel of the kubelet's client of the registered driver (the
  // connection the kubelet opens its health stream on); FailedPrecondition
  // when no driver registered.
  absl::StatusOr<std::shared_ptr<grpc::Channel>> DriverChannel();

  // The kubelet's calls through the client its DRA handler hands out, each
  // recorded with its time. FailedPrecondition when no driver registered.
  absl::StatusOr<dra::PreparedClaims> Prepare(const std::vector<dra::Claim>& claims);
  absl::Status Unprepare(const std::vector<dra::Claim>& claims);
  std::vector<DraCallRecord> Calls() const { return calls_; }

  // The driver's last output lines, as evidence.
  std::vector<std::string> DriverOutput(size_t n = 10) const;

  // Disruptions, for the checks that have a session of their own.
  // Stops the driver (SIGTERM, up to stop_grace, then kill); true when it
  // exited in time.
  bool StopDriver();
  // Starts the driver again and waits (up to register_within) until the
  // kubelet accepted a registration made after this start and its client is
  // connected. Errors say why not: the driver exited, the kubelet refused
  // it, none in time.
  absl::Status StartDriver();
  // Stops the kubelet's plugin manager and DRA handler (a kubelet going down).
  void StopKubelet();
  // Starts them again as a kubelet starts: it deletes the node's
  // ResourceSlices, then watches plugins_registry.
  absl::Status StartKubelet();
  // Waits until the kubelet scheduled the wipe of the driver's ResourceSlices
  // (no instance of it connected), moves the kubelet's clock past the wiping
  // delay instead of waiting it out, and waits for the wipe. False when no
  // wipe was scheduled within stop_grace plus 10 s.
  bool SkipToWipe();
  // The driver's ResourceSlices for the node now.
  std::vector<nlohmann::json> ListSlices();
  // Waits up to `within` until the driver's ResourceSlices for the node make
  // complete pools; empty when they do not.
  std::vector<nlohmann::json> WaitForSlices(absl::Duration within);
  // Whether the driver's slices were complete when Slices() looked; nullopt
  // before it did.
  std::optional<bool> SlicesPublished() const {
    if (!slices_) return std::nullopt;
    return !slices_->empty();
  }

 private:
  class RecordingClient;
  absl::Status PrepareRoot();
  absl::Status StartApi();
  absl::Status StartPluginManager();
  void WaitForRegistration();
  void WaitForConnection();
  absl::Status EnsureDeviceClass();
  void Record(const std::string& method, const std::vector<dra::Claim>& claims, MonoTime start,
              const absl::Status& status);
  void OnInfo(const std::string& socket, const absl::StatusOr<pluginmanager::RegistrationInfo>& r)
      ABSL_LOCKS_EXCLUDED(mu_);
  void OnNotify(const std::string& socket, bool registered, const std::string& error)
      ABSL_LOCKS_EXCLUDED(mu_);

  DraTarget* const target_;
  const DraSessionOptions opts_;
  DraEnv env_;
  // The target's binds, set by Begin before the driver starts; constant after.
  std::vector<BindPath> binds_;
  MonoTime started_at_;
  bool driver_running_ = false;
  std::unique_ptr<apiserver::ApiServer> api_;
  // The kubelet's timers (the slice wipe); outlive the handler.
  std::unique_ptr<dra::RealTimers> timers_;
  std::unique_ptr<dra::DraPluginHandler> handler_;
  std::unique_ptr<pluginmanager::PluginManager> plugin_manager_;
  std::optional<std::vector<nlohmann::json>> slices_;
  bool device_class_ = false;
  bool other_driver_ = false;
  std::vector<DraCallRecord> calls_;

  mutable absl::Mutex mu_;
  mutable absl::CondVar changed_;
  std::vector<DraRegistrationRecord> registrations_ ABSL_GUARDED_BY(mu_);
};

// The DeviceClass the session's claims use: every device of the driver.
inline constexpr char kDraDeviceClass[] = "devmgr-conformance";
// The namespace of the session's claims and pods.
inline constexpr char kDraNamespace[] = "default";
// The second driver of dra.prepare.multi-driver (PublishOtherDriver): its
// name, its DeviceClass and how many devices its slice has.
inline constexpr char kDraOtherDriver[] = "other.conformance.devmgr.io";
inline constexpr char kDraOtherDeviceClass[] = "devmgr-conformance-other";
inline constexpr int kDraOtherDevices = 2;

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_DRA_SESSION_H_
