// RegistrationServer: the kubelet's device-plugin registration server and
// client handler (pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go and
// handler.go): serves v1beta1.Registration on <dir>/kubelet.sock, validates
// Register requests, dials each plugin back, hands it to the manager
// (ClientHandler) and runs its ListAndWatch on a thread of its own. Also the
// plugin manager's handler for type "DevicePlugin" ("probe mode"; the node
// adds it to its pluginmanager::PluginManager).
#ifndef DEVMGR_TRANSPORT_REGISTRATION_SERVER_H_
#define DEVMGR_TRANSPORT_REGISTRATION_SERVER_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "kubelet/profile.h"
#include "manager/plugin_client.h"
#include "pluginmanager/plugin_handler.h"
#include "transport/grpc_plugin_client.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace devmgr::transport {

// The kubelet's socket name in the device-plugin directory.
inline constexpr char kKubeletSocketName[] = "kubelet.sock";
// The registration server's healthz checker name (1.32+) and its error.
inline constexpr char kHealthzName[] = "device-plugin";
inline constexpr char kHealthzError[] =
    "device plugin registration gRPC server failed and no device plugins can register";

struct RegistrationServerOptions {
  // The device-plugin directory (kubelet.sock lives here). Must be absolute.
  std::string plugin_dir;
  Profile profile = DefaultProfile();
  // The receive limit of every plugin client (--max-recv-msg-size).
  int max_recv_msg_size = kDefaultMaxRecvMsgSize;
  // The blocking dial's timeout for plugin sockets.
  absl::Duration dial_timeout = kDefaultDialTimeout;
};

// Thread-safe. Stop is idempotent, safe without Start, and also run by the
// destructor.
class RegistrationServer final : public pluginmanager::PluginHandler {
 public:
  // Error (InvalidArgument): "bad socketPath, must be an absolute path:
  // <dir>/kubelet.sock" when plugin_dir is empty or relative. `handler`
  // must outlive the server.
  static absl::StatusOr<std::unique_ptr<RegistrationServer>> Create(
      RegistrationServerOptions opts, manager::ClientHandler* handler);
  ~RegistrationServer() override;
  RegistrationServer(const RegistrationServer&) = delete;
  RegistrationServer& operator=(const RegistrationServer&) = delete;

  // MkdirAll(dir, 0750), CleanupPluginDirectory per profile, listen on
  // kubelet.sock and serve. The first error is returned and nothing is left
  // running.
  absl::Status Start();
  // Disconnects every tracked client (PluginDisconnected), cancels every
  // ListAndWatch, stops the gRPC server, joins all threads and removes
  // kubelet.sock.
  void Stop();

  const std::string& SocketPath() const { return socket_path_; }
  const std::string& CheckpointPath() const { return checkpoint_path_; }

  // kubelet_device_plugin_registration_total{resource_name}: Register calls
  // seen for `resource` (counted before validation; probe mode not counted).
  int64_t RegistrationCount(const std::string& resource) const;
  std::map<std::string, int64_t> RegistrationCounts() const;

  // The 1.32+ healthz check: 1.32-1.34 fail with Unavailable(kHealthzError)
  // until started; 1.35+ (and 1.32.11+, 1.33.7+, 1.34.3+) pass before start
  // too. OK while stopping. Profiles without the check always report OK.
  absl::Status HealthCheck() const;
  bool Healthy() const { return HealthCheck().ok(); }

  // The Register RPC's logic (the gRPC service calls this). Errors are what
  // the plugin receives with code Unknown.
  absl::Status Register(const v1beta1::RegisterRequest& req);

  // pluginmanager::PluginHandler (type "DevicePlugin").
  absl::Status ValidatePlugin(const std::string& name, const std::string& endpoint,
                              const std::vector<std::string>& versions) override;
  absl::Status RegisterPlugin(const std::string& name, const std::string& endpoint,
                              const std::vector<std::string>& versions) override;
  void DeRegisterPlugin(const std::string& name, const std::string& endpoint) override;

  // For tests and status: the number of clients tracked (one per resource
  // name before 1.37, one per (resource, socket) in 1.37) and ListAndWatch
  // threads running.
  size_t TrackedClientCount() const;
  size_t RunningStreamCount() const;

 private:
  class Service;
  struct RunThread {
    std::thread thread;
    bool done = false;
  };

  RegistrationServer(RegistrationServerOptions opts, manager::ClientHandler* handler);

  // handler.go registerClient / deregisterClient / getClient: by resource
  // name in 1.30-1.36, by (name, socket path) in 1.37.
  void RegisterClientLocked(const std::string& name, std::shared_ptr<GrpcPluginClient> c)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DeregisterClientLocked(const std::string& name, const std::string& socket_path)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<GrpcPluginClient> GetClientLocked(const std::string& name,
                                                    const std::string& socket_path) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // handler.go connectClient / runClient / disconnectClient.
  absl::Status ConnectClient(const std::string& name, const std::string& socket_path);
  void RunClient(const std::string& name, std::shared_ptr<GrpcPluginClient> client,
                 RunThread* self);
  void DisconnectClient(const std::string& name, const std::shared_ptr<GrpcPluginClient>& c);
  void ReapDoneThreads();

  // Constant after construction.
  const RegistrationServerOptions opts_;
  manager::ClientHandler* const handler_;
  const std::string socket_path_;
  const std::string checkpoint_path_;
  std::unique_ptr<Service> service_;

  absl::Mutex stop_mu_;  // serialises Start and Stop
  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool is_started_ ABSL_GUARDED_BY(mu_) = false;  // the 1.32 healthz flag
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(mu_);
  // resource name -> clients (one before 1.37; in registration order).
  std::map<std::string, std::vector<std::shared_ptr<GrpcPluginClient>>> clients_
      ABSL_GUARDED_BY(mu_);
  // Every client dialled or streaming, tracked or not, so Stop can cancel it.
  std::set<std::shared_ptr<GrpcPluginClient>> live_ ABSL_GUARDED_BY(mu_);
  std::list<std::unique_ptr<RunThread>> threads_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> registration_counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::transport

#endif  // DEVMGR_TRANSPORT_REGISTRATION_SERVER_H_
