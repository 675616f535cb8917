#include "transport/registration_client.h"

#include <utility>

#include "fmt/format.h"
#include "grpcpp/client_context.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "transport/go_grpc_error.h"
#include "transport/grpc_plugin_client.h"

namespace devmgr::transport {
namespace {

class GrpcRegistrationClient final : public pluginmanager::RegistrationClient {
 public:
  explicit GrpcRegistrationClient(std::shared_ptr<grpc::Channel> channel)
      : stub_(pluginregistration::Registration::NewStub(channel)) {}

  absl::StatusOr<pluginmanager::RegistrationInfo> GetInfo(absl::Duration timeout) override {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    pluginregistration::PluginInfo resp;
    const grpc::Status st = stub_->GetInfo(&ctx, pluginregistration::InfoRequest(), &resp);
    if (!st.ok()) return FromGrpcStatus(st);
    pluginmanager::RegistrationInfo info;
    info.type = resp.type();
    info.name = resp.name();
    info.endpoint = resp.endpoint();
    info.supported_versions.assign(resp.supported_versions().begin(),
                                   resp.supported_versions().end());
    return info;
  }

  absl::Status NotifyRegistrationStatus(bool registered, const std::string& error,
                                        absl::Duration timeout) override {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    pluginregistration::RegistrationStatus req;
    req.set_plugin_registered(registered);
    req.set_error(error);
    pluginregistration::RegistrationStatusResponse resp;
    return FromGrpcStatus(stub_->NotifyRegistrationStatus(&ctx, req, &resp));
  }

 private:
  std::unique_ptr<pluginregistration::Registration::Stub> stub_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<pluginmanager::RegistrationClient>> DialRegistration(
    const std::string& socket_path, absl::Duration timeout,
    const std::function<bool()>& cancelled) {
  std::shared_ptr<grpc::Channel> channel = NewUnixChannel(socket_path, kDefaultMaxRecvMsgSize);
  if (absl::Status s = WaitForReady(channel.get(), timeout, cancelled); !s.ok()) {
    // The kubelet's dial wraps the context error so.
    return absl::Status(s.code(), fmt::format("failed to dial socket {}, err: {}", socket_path,
                                              std::string(s.message())));
  }
  return std::make_unique<GrpcRegistrationClient>(std::move(channel));
}

}  // namespace devmgr::transport
