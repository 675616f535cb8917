// TestKubelet: the conformance tester's emulated kubelet. It serves
// v1beta1.Registration on <dir>/kubelet.sock after wiping the directory as
// a starting kubelet does, records every RegisterRequest with its arrival
// time, and does the kubelet's handshake (dial back, GetDevicePluginOptions,
// ListAndWatch) with a deadline on every step. It is lenient on purpose:
// every registration is answered OK and the plugin is dialled even when a
// real kubelet would have refused it (the refusal is recorded, with the
// kubelet's exact error text, for the registration checks), so that one
// defect does not hide the rest of the catalogue.
#ifndef DEVMGR_CONFORMANCE_TEST_KUBELET_H_
#define DEVMGR_CONFORMANCE_TEST_KUBELET_H_

#include <list>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "conformance/mono_time.h"
#include "conformance/probe.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace devmgr::metrics {
class KubeletMetrics;
}  // namespace devmgr::metrics

namespace devmgr::conformance {

struct TestKubeletOptions {
  std::string dir;  // absolute device-plugin directory
  // Only registrations for this resource are handled ("" = any).
  std::string resource;
  // How long the dial-back inside Register waits (the kubelet's is 10 s).
  absl::Duration serve_wait = absl::Seconds(10);
  // Deadline of the handshake's GetDevicePluginOptions.
  absl::Duration rpc_timeout = absl::Seconds(10);
  // When the plugin did not serve during Register: how long to keep
  // dialling afterwards.
  absl::Duration late_connect = absl::Seconds(10);
  // When set, every Register RPC received is counted here
  // (kubelet_device_plugin_registration_total), with the resource name as
  // sent, before any check and whatever `resource` is, as the kubelet counts
  // before validating. Not owned; must outlive the TestKubelet.
  metrics::KubeletMetrics* metrics = nullptr;
};

struct RegistrationRecord {
  MonoTime at;
  v1beta1::RegisterRequest request;
  // What a real 1.30-1.33 kubelet answers to the request's version and name
  // ("" = accepted), e.g. `the ResourceName "gpu" is invalid`.
  std::string kubelet_error;
  // filepath.Join(dir, endpoint), the path the kubelet dials.
  std::string joined_path;
  // True when joined_path is a socket inside the directory.
  bool endpoint_is_socket = false;
  // The socket used for the handshake: joined_path, or the plugin socket
  // found in the directory when joined_path does not work. "" when none.
  std::string socket_path;
  // True when the plugin accepted the dial-back while Register was pending.
  bool served_during_register = false;
};

// One kubelet-to-plugin connection after a registration.
struct KubeletConnection {
  std::string socket_path;
  std::shared_ptr<ProbeClient> client;
  bool options_called = false;
  CallResult<v1beta1::DevicePluginOptions> options;
  std::unique_ptr<StreamRecorder> stream;
};

// Thread-safe. Stop (also run by the destructor) joins every thread.
class TestKubelet {
 public:
  explicit TestKubelet(TestKubeletOptions opts);
  ~TestKubelet();
  TestKubelet(const TestKubelet&) = delete;
  TestKubelet& operator=(const TestKubelet&) = delete;

  // Creates the directory, removes every non-directory entry in it (as the
  // kubelet's CleanupPluginDirectory does) and serves kubelet.sock.
  absl::Status Start();
  void Stop();
  MonoTime started_at() const;
  const std::string& socket_path() const { return socket_path_; }

  // Waits until n registrations were recorded.
  bool WaitForRegistrations(size_t n, absl::Duration timeout) const;
  std::vector<RegistrationRecord> Registrations() const;
  // Waits for the first registration that arrived at or after `since` and
  // returns its index in Registrations(); nullopt on timeout. Earlier
  // registrations (a plugin that registered twice before `since`) never
  // count, so `Registrations()[i].at - since` is never negative.
  std::optional<size_t> WaitForRegistrationSince(MonoTime since, absl::Duration timeout) const;
  // Waits until n handshakes finished (options called, stream opened).
  bool WaitForConnections(size_t n, absl::Duration timeout) const;
  size_t ConnectionCount() const;
  // The newest connection; nullptr if none. Its stream and client are
  // released by Stop().
  KubeletConnection* LatestConnection() const;

  // The Register RPC's logic (the gRPC service calls this).
  void HandleRegister(const v1beta1::RegisterRequest& req);

 private:
  class Service;
  // The handshake for registration `index`; an empty socket_path: find
  // the plugin's socket first (it did not serve during Register).
  void Connect(std::string socket_path, size_t index);

  const TestKubeletOptions opts_;
  const std::string socket_path_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  MonoTime started_at_ ABSL_GUARDED_BY(mu_);
  std::vector<RegistrationRecord> registrations_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<KubeletConnection>> connections_ ABSL_GUARDED_BY(mu_);
  std::list<std::thread> late_threads_ ABSL_GUARDED_BY(mu_);
};

// The plugin sockets in `dir` (every unix socket but kubelet.sock), newest
// first.
std::vector<std::string> FindPluginSockets(const std::string& dir);

// MkdirAll + remove every non-directory entry (the kubelet's start-up
// cleanup; the checkpoint is removed too: each check starts afresh).
absl::Status WipeDirectory(const std::string& dir);

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_TEST_KUBELET_H_
