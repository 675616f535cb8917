#include "podresources/client.h"

#include <chrono>

#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "podresources/v1/api.grpc.pb.h"
#include "transport/go_grpc_error.h"

namespace devmgr::podresources {

struct Client::Impl {
  std::unique_ptr<v1::PodResourcesLister::Stub> stub;
  absl::Duration timeout;

  void SetDeadline(grpc::ClientContext* ctx) const {
    ctx->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  }
};

Client::Client(const std::string& socket_path, absl::Duration timeout)
    : impl_(std::make_unique<Impl>()) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kClientMaxRecvMsgSize);
  auto channel =
      grpc::CreateCustomChannel("unix:" + socket_path, grpc::InsecureChannelCredentials(), args);
  impl_->stub = v1::PodResourcesLister::NewStub(channel);
  impl_->timeout = timeout;
}

Client::~Client() = default;

absl::StatusOr<v1::ListPodResourcesResponse> Client::List() {
  grpc::ClientContext ctx;
  impl_->SetDeadline(&ctx);
  v1::ListPodResourcesResponse resp;
  grpc::Status s = impl_->stub->List(&ctx, v1::ListPodResourcesRequest(), &resp);
  if (!s.ok()) return transport::FromGrpcStatus(s);
  return resp;
}

absl::StatusOr<v1::AllocatableResourcesResponse> Client::GetAllocatableResources() {
  grpc::ClientContext ctx;
  impl_->SetDeadline(&ctx);
  v1::AllocatableResourcesResponse resp;
  grpc::Status s =
      impl_->stub->GetAllocatableResources(&ctx, v1::AllocatableResourcesRequest(), &resp);
  if (!s.ok()) return transport::FromGrpcStatus(s);
  return resp;
}

absl::StatusOr<v1::GetPodResourcesResponse> Client::Get(const std::string& pod_namespace,
                                                        const std::string& pod_name) {
  grpc::ClientContext ctx;
  impl_->SetDeadline(&ctx);
  v1::GetPodResourcesRequest req;
  req.set_pod_namespace(pod_namespace);
  req.set_pod_name(pod_name);
  v1::GetPodResourcesResponse resp;
  grpc::Status s = impl_->stub->Get(&ctx, req, &resp);
  if (!s.ok()) return transport::FromGrpcStatus(s);
  return resp;
}

}  // namespace devmgr::podresources
