#include "podresources/server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "common/logging.h"
#include "fmt/format.h"
#include "grpcpp/grpcpp.h"
#include "podresources/v1/api.grpc.pb.h"
#include "transport/go_grpc_error.h"

namespace devmgr::podresources {

using metrics::PodResourcesMethod;

// Thin: rate limit, count, ask the Lister, convert the status.
class Server::Service final : public v1::PodResourcesLister::Service {
 public:
  explicit Service(Server* s) : s_(s) {}

  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* resp) override {
    if (!s_->limiter_.Allow()) return Limited();
    Count(PodResourcesMethod::kList);
    *resp = s_->lister_.List();
    return grpc::Status::OK;
  }

  grpc::Status GetAllocatableResources(grpc::ServerContext*, const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse* resp) override {
    if (!s_->limiter_.Allow()) return Limited();
    Count(PodResourcesMethod::kGetAllocatableResources);
    *resp = s_->lister_.GetAllocatableResources();
    return grpc::Status::OK;
  }

  grpc::Status Get(grpc::ServerContext*, const v1::GetPodResourcesRequest* req,
                   v1::GetPodResourcesResponse* resp) override {
    if (!s_->limiter_.Allow()) return Limited();
    Count(PodResourcesMethod::kGet);
    absl::StatusOr<v1::GetPodResourcesResponse> r =
        s_->lister_.Get(req->pod_namespace(), req->pod_name());
    if (!r.ok()) {
      if (s_->opts_.metrics != nullptr) {
        s_->opts_.metrics->CountPodResourcesError(PodResourcesMethod::kGet);
      }
      return transport::ToGrpcUnknown(r.status());
    }
    *resp = std::move(*r);
    return grpc::Status::OK;
  }

 private:
  static grpc::Status Limited() {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, kRateLimited);
  }
  void Count(PodResourcesMethod m) {
    if (s_->opts_.metrics != nullptr) s_->opts_.metrics->CountPodResourcesRequest(m);
  }
  Server* const s_;
};

Server::Server(node::Node* node, node::PodManager* pods, ServerOptions opts)
    : opts_(std::move(opts)), lister_(node, pods, opts_.api), limiter_(opts_.qps, opts_.burst) {}

Server::~Server() { Stop(); }

absl::Status Server::Start() {
  if (server_) return absl::FailedPreconditionError("pod resources server already started");
  const std::string& path = opts_.socket_path;
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(
        fmt::format("bad socketPath, must be an absolute path: {}", path));
  }
  if (path.size() >= 108) {
    return absl::InvalidArgumentError(
        fmt::format("{} is too long for a unix socket path (107 bytes at most)", path));
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::UnavailableError(fmt::format("cannot create directory {}: {}", dir, ec.message()));
  }
  ::chmod(dir.c_str(), 0750);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::UnavailableError(
        fmt::format("failed to unlink socket file {}: {}", path, std::strerror(errno)));
  }
  service_ = std::make_unique<Service>(this);
  grpc::ServerBuilder b;
  b.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  b.RegisterService(service_.get());
  server_ = b.BuildAndStart();
  if (!server_) {
    service_.reset();
    return absl::UnavailableError(fmt::format("failed to listen on {}", path));
  }
  DM_VINFO(2, "Starting to serve the podresources API", {"endpoint", "unix://" + path});
  return absl::OkStatus();
}

void Server::Stop() {
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  server_.reset();
  service_.reset();
  ::unlink(opts_.socket_path.c_str());
}

}  // namespace devmgr::podresources
