#include "transport/registration_server.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/fs.h"
#include "common/go_format.h"
#include "common/logging.h"
#include "common/resource_name.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "fmt/format.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "transport/go_grpc_error.h"
#include "transport/go_path.h"
#include "transport/plugin_dir_cleanup.h"
#include "transport/utf8_fields.h"

namespace devmgr::transport {
namespace {

// v1beta1 constants.
constexpr char kVersion[] = "v1beta1";
const std::vector<std::string>& SupportedVersions() {
  static const std::vector<std::string> v = {kVersion};
  return v;
}

bool IsVersionCompatible(const std::vector<std::string>& versions) {
  for (const std::string& v : versions) {
    for (const std::string& s : SupportedVersions()) {
      if (v == s) return true;
    }
  }
  return false;
}

}  // namespace

class RegistrationServer::Service final : public v1beta1::Registration::Service {
 public:
  explicit Service(RegistrationServer* server) : server_(server) {}
  grpc::Status Register(grpc::ServerContext* /*ctx*/, const v1beta1::RegisterRequest* req,
                        v1beta1::Empty* /*resp*/) override {
    // 1.34+: grpc-go fails to unmarshal the request and never calls the
    // handler (nothing counted or logged).
    if (server_->opts_.profile.validates_utf8 && FirstInvalidUtf8Field(*req).has_value()) {
      return ServerInvalidUtf8Status();
    }
    // Go's gRPC server sends a plain error as code Unknown.
    return ToGrpcUnknown(server_->Register(*req));
  }

 private:
  RegistrationServer* const server_;
};

absl::StatusOr<std::unique_ptr<RegistrationServer>> RegistrationServer::Create(
    RegistrationServerOptions opts, manager::ClientHandler* handler) {
  const std::string socket_path = GoPathJoin({opts.plugin_dir, kKubeletSocketName});
  if (opts.plugin_dir.empty() || opts.plugin_dir.front() != '/') {
    return absl::InvalidArgumentError(
        fmt::format("bad socketPath, must be an absolute path: {}", socket_path));
  }
  return std::unique_ptr<RegistrationServer>(new RegistrationServer(std::move(opts), handler));
}

RegistrationServer::RegistrationServer(RegistrationServerOptions opts,
                                       manager::ClientHandler* handler)
    : opts_(std::move(opts)),
      handler_(handler),
      socket_path_(GoPathJoin({opts_.plugin_dir, kKubeletSocketName})),
      checkpoint_path_(GoPathJoin({opts_.plugin_dir, kCheckpointFileName})),
      service_(std::make_unique<Service>(this)) {}

RegistrationServer::~RegistrationServer() { Stop(); }

absl::Status RegistrationServer::Start() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (started_ || stopping_) {
      return absl::FailedPreconditionError("device plugin registration server already started");
    }
  }
  DM_VINFO(2, "Starting device plugin registration server");
  const std::string dir = GoPathClean(opts_.plugin_dir);
  if (absl::Status s = fs::MkdirAll(*fs::Default(), dir, 0750); !s.ok()) {
    DM_ERROR(std::string(s.message()), "Failed to create the device plugin socket directory",
             {"directory", dir});
    return s;
  }
  if (absl::Status s =
          CleanupPluginDirectory(dir, checkpoint_path_, opts_.profile.cleanup_sockets_only);
      !s.ok()) {
    return s;
  }
  if (socket_path_.size() >= sizeof(sockaddr_un::sun_path)) {
    const std::string err = fmt::format("listen unix {}: bind: invalid argument", socket_path_);
    DM_ERROR(err, "Failed to listen to socket while starting device plugin registry");
    return absl::InvalidArgumentError(err);
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    const std::string err = fmt::format("listen unix {}: cannot serve gRPC", socket_path_);
    DM_ERROR(err, "Failed to listen to socket while starting device plugin registry");
    return absl::UnavailableError(err);
  }
  {
    absl::MutexLock lock(&mu_);
    server_ = std::move(server);
    started_ = true;
    is_started_ = true;
  }
  return absl::OkStatus();
}

void RegistrationServer::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  std::map<std::string, std::vector<std::shared_ptr<GrpcPluginClient>>> clients;
  std::set<std::shared_ptr<GrpcPluginClient>> live;
  std::unique_ptr<grpc::Server> server;
  bool was_started;
  {
    absl::MutexLock lock(&mu_);
    was_started = started_;
    stopping_ = true;
    // 1.32: "healthy while shutting down".
    if (opts_.profile.registration_healthz) is_started_ = true;
    clients.swap(clients_);
    live = live_;
    server = std::move(server_);
  }
  for (auto& [name, list] : clients) {
    for (auto& c : list) DisconnectClient(name, c);
  }
  // Clients no longer tracked (replaced, or still dialling) keep streams the
  // kubelet would leak; cancel them so their threads can be joined.
  for (const auto& c : live) c->Close();
  if (server != nullptr) {
    server->Shutdown(absl::ToChronoTime(absl::Now()));
    server->Wait();
  }
  while (true) {
    std::list<std::unique_ptr<RunThread>> threads;
    {
      absl::MutexLock lock(&mu_);
      threads.swap(threads_);
    }
    if (threads.empty()) break;
    for (auto& t : threads) t->thread.join();
  }
  if (was_started && server != nullptr) ::unlink(socket_path_.c_str());
}

int64_t RegistrationServer::RegistrationCount(const std::string& resource) const {
  absl::MutexLock lock(&mu_);
  auto it = registration_counts_.find(resource);
  return it == registration_counts_.end() ? 0 : it->second;
}

std::map<std::string, int64_t> RegistrationServer::RegistrationCounts() const {
  absl::MutexLock lock(&mu_);
  return registration_counts_;
}

absl::Status RegistrationServer::HealthCheck() const {
  if (!opts_.profile.registration_healthz) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  if (is_started_) return absl::OkStatus();
  // 1.35+ (and the 1.32.11+, 1.33.7+ and 1.34.3+ backports of #135153): the
  // check passes until the server's Serve has failed; devmgr's server never
  // fails once started. A failed listen records nothing, so the check still
  // passes (k8s.io/kubernetes v1.35.4,
  // pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go, Start and Check).
  if (opts_.profile.healthz_passes_before_start) return absl::OkStatus();
  return absl::UnavailableError(kHealthzError);
}

size_t RegistrationServer::TrackedClientCount() const {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [name, list] : clients_) n += list.size();
  return n;
}

size_t RegistrationServer::RunningStreamCount() const {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& t : threads_) n += t->done ? 0 : 1;
  return n;
}

absl::Status RegistrationServer::Register(const v1beta1::RegisterRequest& req) {
  const std::string& name = req.resource_name();
  DM_INFO("Got registration request from device plugin with resource", {"resourceName", name});
  {
    absl::MutexLock lock(&mu_);
    ++registration_counts_[name];
  }
  if (!IsVersionCompatible({req.version()})) {
    const std::string err =
        fmt::format("requested API version {} is not supported by kubelet. Supported version is {}",
                    GoQuote(req.version()), GoQuoteList(SupportedVersions()));
    DM_INFO("Bad registration request from device plugin with resource", {"resourceName", name},
            {"err", err});
    return absl::UnknownError(err);
  }
  if (!IsExtendedResourceName(name)) {
    const std::string err = fmt::format("the ResourceName {} is invalid", GoQuote(name));
    DM_INFO("Bad registration request from device plugin", {"err", err});
    return absl::UnknownError(err);
  }
  // filepath.Join(socketDir, endpoint): lexical, ".." normalised, an
  // absolute endpoint appended.
  const std::string socket_path = GoPathJoin({opts_.plugin_dir, req.endpoint()});
  if (!IsPlainSocketName(req.endpoint())) {
    DM_WARN(
        "Device plugin endpoint is not a plain socket file name; joined with the device "
        "plugin directory as the kubelet does",
        {"resourceName", name}, {"endpoint", req.endpoint()}, {"path", socket_path});
  }
  if (absl::Status s = ConnectClient(name, socket_path); !s.ok()) {
    DM_INFO("Error connecting to device plugin client", {"err", std::string(s.message())});
    return absl::UnknownError(std::string(s.message()));
  }
  return absl::OkStatus();
}

absl::Status RegistrationServer::ValidatePlugin(const std::string& name,
                                                const std::string& endpoint,
                                                const std::vector<std::string>& versions) {
  DM_VINFO(2, "Got plugin at endpoint with versions", {"plugin", name}, {"endpoint", endpoint},
           {"versions", GoList(versions)});
  if (!IsVersionCompatible(versions)) {
    return absl::InvalidArgumentError(
        fmt::format("manager version, {}, is not among plugin supported versions {}", kVersion,
                    GoList(versions)));
  }
  if (!IsExtendedResourceName(name)) {
    return absl::InvalidArgumentError(fmt::format(
        "invalid name of device plugin socket: the ResourceName {} is invalid", GoQuote(name)));
  }
  return absl::OkStatus();
}

absl::Status RegistrationServer::RegisterPlugin(const std::string& name,
                                                const std::string& endpoint,
                                                const std::vector<std::string>& /*versions*/) {
  DM_VINFO(2, "Registering plugin at endpoint", {"plugin", name}, {"endpoint", endpoint});
  // Probe mode uses the endpoint as is, and does not count registrations.
  return ConnectClient(name, endpoint);
}

void RegistrationServer::DeRegisterPlugin(const std::string& name, const std::string& endpoint) {
  std::shared_ptr<GrpcPluginClient> c;
  {
    absl::MutexLock lock(&mu_);
    // 1.30-1.36 look the client up by name; 1.37 by (name, socket path).
    c = GetClientLocked(name, endpoint);
    if (c == nullptr) return;
    DeregisterClientLocked(name, c->SocketPath());
  }
  DisconnectClient(name, c);
}

void RegistrationServer::RegisterClientLocked(const std::string& name,
                                              std::shared_ptr<GrpcPluginClient> c) {
  std::vector<std::shared_ptr<GrpcPluginClient>>& list = clients_[name];
  // 1.37 appends (several sockets per resource); before, the new client
  // replaces the previous one, whose stream keeps running.
  if (!opts_.profile.endpoints_per_socket) list.clear();
  list.push_back(std::move(c));
}

void RegistrationServer::DeregisterClientLocked(const std::string& name,
                                                const std::string& socket_path) {
  auto it = clients_.find(name);
  if (it == clients_.end()) return;
  if (!opts_.profile.endpoints_per_socket) {
    clients_.erase(it);
    return;
  }
  // Every client at that path goes, whichever instance it is (as in the
  // kubelet, a late call for an old client evicts a newer one there).
  std::vector<std::shared_ptr<GrpcPluginClient>>& list = it->second;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](const auto& c) { return c->SocketPath() == socket_path; }),
             list.end());
  if (list.empty()) clients_.erase(it);
}

std::shared_ptr<GrpcPluginClient> RegistrationServer::GetClientLocked(
    const std::string& name, const std::string& socket_path) const {
  auto it = clients_.find(name);
  if (it == clients_.end() || it->second.empty()) return nullptr;
  if (!opts_.profile.endpoints_per_socket) return it->second.front();
  for (const auto& c : it->second) {
    if (c->SocketPath() == socket_path) return c;
  }
  return nullptr;
}

void RegistrationServer::ReapDoneThreads() {
  std::vector<std::unique_ptr<RunThread>> done;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = threads_.begin(); it != threads_.end();) {
      if ((*it)->done) {
        done.push_back(std::move(*it));
        it = threads_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& t : done) t->thread.join();
}

absl::Status RegistrationServer::ConnectClient(const std::string& name,
                                               const std::string& socket_path) {
  ReapDoneThreads();
  auto client = std::make_shared<GrpcPluginClient>(
      name, socket_path,
      ClientOptions{opts_.dial_timeout, opts_.max_recv_msg_size, opts_.profile.validates_utf8});
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("device plugin registration server is stopped");
    RegisterClientLocked(name, client);
    live_.insert(client);
  }
  if (absl::Status s = client->Connect(handler_); !s.ok()) {
    {
      absl::MutexLock lock(&mu_);
      // deregisterClient: this also forgets a previous client (by name
      // before 1.37; at the same socket path in 1.37, where the rejected
      // "already connected" registration thus untracks the running one).
      DeregisterClientLocked(name, socket_path);
      live_.erase(client);
    }
    DM_ERROR(std::string(s.message()), "Failed to connect to new client", {"resource", name});
    return s;
  }
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      auto t = std::make_unique<RunThread>();
      RunThread* raw = t.get();
      threads_.push_back(std::move(t));
      raw->thread = std::thread([this, name, client, raw] { RunClient(name, client, raw); });
      DM_VINFO(2, "Connected to new client", {"resource", name});
      return absl::OkStatus();
    }
    live_.erase(client);
  }
  client->Close();
  return absl::UnavailableError("device plugin registration server is stopped");
}

void RegistrationServer::RunClient(const std::string& name,
                                   std::shared_ptr<GrpcPluginClient> client, RunThread* self) {
  client->Run(handler_);
  std::shared_ptr<GrpcPluginClient> current;
  {
    absl::MutexLock lock(&mu_);
    live_.erase(client);
    // 1.30-1.36 look the client up by name only: if a newer registration
    // replaced this one, the old stream's end disconnects the new client
    // (kubernetes#121994). 1.37 looks it up by (name, socket path).
    current = GetClientLocked(name, client->SocketPath());
    if (current != nullptr) DeregisterClientLocked(name, current->SocketPath());
  }
  if (current != nullptr) {
    if (current != client) {
      DM_WARN(opts_.profile.endpoints_per_socket
                  ? "ListAndWatch of an earlier device plugin client ended; disconnecting the "
                    "client now registered on the same socket, as kubelet 1.37 does"
                  : "ListAndWatch of a replaced device plugin client ended; disconnecting the "
                    "current client as kubelet 1.30-1.36 do (kubernetes#121994)",
              {"resource", name}, {"endedSocket", client->SocketPath()},
              {"disconnectedSocket", current->SocketPath()});
    }
    DisconnectClient(name, current);
  }
  absl::MutexLock lock(&mu_);
  self->done = true;
}

void RegistrationServer::DisconnectClient(const std::string& name,
                                          const std::shared_ptr<GrpcPluginClient>& c) {
  c->Close();
  handler_->PluginDisconnected(name, c.get());
}

}  // namespace devmgr::transport
