// SampleDraDriver: the reference DRA driver (`devmgr sample-dra-driver`), a
// configurable test instrument that does what a driver built on the upstream
// kubeletplugin helper does on a node: serves the DRAPlugin service (v1 and
// v1beta1) on <plugin-dir>/<driver>/dra.sock, registers through the plugin
// watcher on <registry-dir>/<driver>-reg.sock, publishes one ResourceSlice for
// its node, and prepares claims into CDI specs — misbehaving where its
// config says so (docs/sample-dra-driver.md).
#ifndef DEVMGR_DRAPLUGIN_SAMPLE_DRA_DRIVER_H_
#define DEVMGR_DRAPLUGIN_SAMPLE_DRA_DRIVER_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "draplugin/api_client.h"
#include "draplugin/call_log.h"
#include "draplugin/config.h"
#include "draplugin/driver_core.h"
#include "draplugin/health_service.h"
#include "draplugin/registration_service.h"

namespace grpc {
class Server;
class Service;
}  // namespace grpc

namespace devmgr::draplugin {

struct DriverOptions {
  std::string registry_dir = kDefaultRegistryDir;
  std::string plugin_dir = kDefaultPluginDir;
  std::string cdi_dir = kDefaultCdiDir;
  std::string node_name;
  std::string kubeconfig;  // its current cluster's server is the API server
  // A file of health control lines (HealthService::ApplyControlLine), read
  // as lines are appended; "" = none.
  std::string health_control;
  // The call log (call_log.h); "" = none.
  std::string call_log;
  // How often the control file is looked at.
  absl::Duration health_control_poll = absl::Milliseconds(100);
};

// Thread-safe, except that Start and Stop are called from one owning thread.
// Start once; Stop is idempotent, safe before Start and run by the destructor.
class SampleDraDriver {
 public:
  SampleDraDriver(Config config, DriverOptions options);
  ~SampleDraDriver();
  SampleDraDriver(const SampleDraDriver&) = delete;
  SampleDraDriver& operator=(const SampleDraDriver&) = delete;

  // Reads the kubeconfig, restores the state file, publishes the slice (a
  // failure is logged and kept in publish_status(); the driver runs on), then
  // serves the DRA socket and the registration socket (in the other order,
  // the DRA one late, with misbehave.register_before_serving). Errors:
  // a bad kubeconfig or state file, a socket that cannot be served.
  absl::Status Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Stops serving, joins its thread and removes both sockets.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  std::string registration_socket() const;
  std::string dra_socket() const;
  // The outcome of publishing the slice at Start.
  absl::Status publish_status() const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until the DRA socket is served; false on timeout.
  bool WaitUntilServing(absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);

  // REQUIRES: Start was called (and returned OK).
  DriverCore& core() { return *core_; }
  RegistrationService& registration() { return *registration_; }
  // Device health (DRAResourceHealth), served per config.health.
  HealthService& health() { return *health_; }

 private:
  absl::Status ServeDra() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status ServeRegistration() ABSL_LOCKS_EXCLUDED(mu_);
  void Publish() ABSL_LOCKS_EXCLUDED(mu_);
  // Applies the control file's new lines until Stop.
  void ReadHealthControl();

  // Constant after construction.
  const Config config_;
  const DriverOptions options_;
  // Set by Start before anything is served.
  std::unique_ptr<ApiClient> api_;
  std::unique_ptr<DriverCore> core_;
  std::unique_ptr<CallLog> call_log_;
  std::unique_ptr<RegistrationService> registration_;
  std::unique_ptr<grpc::Service> dra_v1_;
  std::unique_ptr<grpc::Service> dra_v1beta1_;
  absl::Notification stop_;
  std::unique_ptr<HealthService> health_;
  std::thread late_serve_;  // misbehave.register_before_serving
  std::thread health_control_;

  mutable absl::Mutex mu_;
  std::unique_ptr<grpc::Server> dra_server_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::Server> registration_server_ ABSL_GUARDED_BY(mu_);
  absl::Status publish_status_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace devmgr::draplugin

#endif  // DEVMGR_DRAPLUGIN_SAMPLE_DRA_DRIVER_H_
