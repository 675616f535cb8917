#include "dra/dra_client.h"

#include <cassert>
#include <string_view>
#include <utility>

#include "common/go_format.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "fmt/format.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "transport/go_grpc_error.h"
#include "transport/utf8_fields.h"

namespace devmgr::dra {
namespace {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

// The generated types of one DRAPlugin version.
template <typename Service, typename PrepReq, typename PrepResp, typename UnprepReq,
          typename UnprepResp>
struct ApiTypes {
  using Stub = typename Service::Stub;
  static constexpr std::string_view kService = Service::service_full_name();
  static std::unique_ptr<Stub> NewStub(const std::shared_ptr<grpc::Channel>& ch) {
    return Service::NewStub(ch);
  }
  using PrepareRequest = PrepReq;
  using PrepareResponse = PrepResp;
  using UnprepareRequest = UnprepReq;
  using UnprepareResponse = UnprepResp;
};
using V1Api = ApiTypes<drav1::DRAPlugin, drav1::NodePrepareResourcesRequest,
                       drav1::NodePrepareResourcesResponse, drav1::NodeUnprepareResourcesRequest,
                       drav1::NodeUnprepareResourcesResponse>;
using V1beta1Api =
    ApiTypes<drav1beta1::DRAPlugin, drav1beta1::NodePrepareResourcesRequest,
             drav1beta1::NodePrepareResourcesResponse, drav1beta1::NodeUnprepareResourcesRequest,
             drav1beta1::NodeUnprepareResourcesResponse>;

std::shared_ptr<grpc::Channel> NewChannel(const std::string& endpoint,
                                          const DraClientOptions& opts) {
  grpc::ChannelArguments args;
  args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
  // A Go ClientConn never shares its connection with another one: two
  // instances of a driver are two connections.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  if (opts.initial_reconnect_backoff > absl::ZeroDuration()) {
    const int ms = static_cast<int>(absl::ToInt64Milliseconds(opts.initial_reconnect_backoff));
    // Not GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: C++ gRPC also takes it as the
    // connect timeout (20 s by default).
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, ms);
  }
  if (opts.max_reconnect_backoff > absl::ZeroDuration()) {
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
                static_cast<int>(absl::ToInt64Milliseconds(opts.max_reconnect_backoff)));
  }
  return grpc::CreateCustomChannel("unix:" + endpoint, grpc::InsecureChannelCredentials(), args);
}

template <typename Request>
void FillClaims(const std::vector<Claim>& claims, Request* req) {
  for (const Claim& c : claims) {
    auto* out = req->add_claims();
    out->set_namespace_(c.namespace_);
    out->set_uid(c.uid);
    out->set_name(c.name);
  }
}

template <typename Device>
ResponseDevice ToResponseDevice(const Device& d, bool read_share_id) {
  ResponseDevice out;
  out.request_names.assign(d.request_names().begin(), d.request_names().end());
  out.pool_name = d.pool_name();
  out.device_name = d.device_name();
  out.cdi_device_ids.assign(d.cdi_device_ids().begin(), d.cdi_device_ids().end());
  if constexpr (requires { d.has_share_id(); }) {
    if (read_share_id && d.has_share_id()) out.share_id = d.share_id();
  }
  return out;
}

template <typename List>
bool AllValidUtf8(const List& list) {
  for (const std::string& s : list) {
    if (!IsValidUtf8(s)) return false;
  }
  return true;
}

// Go's unmarshal (1.35+) checks every `string` field of the response; the
// map keys are `string` in devmgr's protos too, so C++ has checked them.
template <typename Response>
bool PrepareResponseValidUtf8(const Response& resp) {
  for (const auto& [uid, entry] : resp.claims()) {
    if (!IsValidUtf8(entry.error())) return false;
    for (const auto& d : entry.devices()) {
      if (!AllValidUtf8(d.request_names()) || !AllValidUtf8(d.cdi_device_ids())) return false;
      if (!IsValidUtf8(d.pool_name()) || !IsValidUtf8(d.device_name())) return false;
      if constexpr (requires { d.share_id(); }) {
        if (!IsValidUtf8(d.share_id())) return false;
      }
    }
  }
  return true;
}

template <typename Response>
bool UnprepareResponseValidUtf8(const Response& resp) {
  for (const auto& [uid, entry] : resp.claims()) {
    if (!IsValidUtf8(entry.error())) return false;
  }
  return true;
}

// What a response says, per claim UID.
template <typename Response>
std::map<std::string, PrepareEntry> PrepareEntries(const Response& resp, bool read_share_id) {
  std::map<std::string, PrepareEntry> out;
  for (const auto& [uid, entry] : resp.claims()) {
    PrepareEntry& e = out[uid];
    e.error = entry.error();
    for (const auto& d : entry.devices()) e.devices.push_back(ToResponseDevice(d, read_share_id));
  }
  return out;
}

template <typename Response>
std::map<std::string, std::string> UnprepareErrors(const Response& resp) {
  std::map<std::string, std::string> out;
  for (const auto& [uid, entry] : resp.claims()) out[uid] = entry.error();
  return out;
}

// A failed call as grpc-go reports it. The deadline's text is Go's context
// error, which grpc-go puts in the status; an answer over the receive limit
// (4 MiB in both) is "grpc: received message larger than max (N vs. M)" in
// grpc-go, "Received message larger than max (N vs. M)" in gRPC C++.
absl::Status CallStatus(const grpc::Status& s) {
  constexpr std::string_view kCppTooLarge = "Received message larger than max (";
  grpc::Status go = s;
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    go = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "context deadline exceeded");
  } else if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
             s.error_message().rfind(kCppTooLarge, 0) == 0) {
    go = grpc::Status(s.error_code(), "grpc: received message larger than max (" +
                                          s.error_message().substr(kCppTooLarge.size()));
  }
  return absl::Status(static_cast<absl::StatusCode>(go.error_code()),
                      transport::GoRpcErrorText(go));
}

// A failed call as the kubelet wraps it: "<RPC>: " in front of the gRPC
// error (k8s.io/kubernetes v1.34.4-v1.37.2, pkg/kubelet/cm/dra/manager.go,
// prepareResources and unprepareResources).
absl::Status CallError(std::string_view rpc, const absl::Status& call) {
  return absl::Status(call.code(), fmt::format("{}: {}", rpc, std::string(call.message())));
}

const Claim* FindClaim(const std::vector<Claim>& claims, const std::string& uid) {
  for (const Claim& c : claims) {
    if (c.uid == uid) return &c;
  }
  return nullptr;
}

// The kubelet's checks of a response map (claim UID -> entry with `error`):
// an entry for a claim not asked for, an entry with an error, and claims
// without an entry fail the whole call. The kubelet walks the map in Go's
// random order, so with several faults which one is reported varies; devmgr
// walks UIDs in ascending order. `on_ok` gets each entry that passed.
// Texts, for both RPCs, as dra::Manager has them (k8s.io/kubernetes
// v1.34.4-v1.37.2, pkg/kubelet/cm/dra/manager.go, prepareResources and
// unprepareResources): "<RPC> returned result for unknown claim UID <uid>",
// "<RPC> failed for ResourceClaim <name>: <error>" (the claim's name only, no
// namespace) and "<RPC> skipped <n> ResourceClaims".
template <typename Map, typename OnOk>
absl::Status CheckResponse(std::string_view rpc, const std::vector<Claim>& claims,
                           const Map& entries, OnOk on_ok) {
  const std::map<std::string, const typename Map::mapped_type*> sorted = [&] {
    std::map<std::string, const typename Map::mapped_type*> m;
    for (const auto& [uid, entry] : entries) m.emplace(uid, &entry);
    return m;
  }();
  size_t unfinished = claims.size();
  for (const auto& [uid, entry] : sorted) {
    const Claim* claim = FindClaim(claims, uid);
    if (claim == nullptr) {
      return absl::UnknownError(
          fmt::format("{} returned result for unknown claim UID {}", rpc, uid));
    }
    if (!entry->error().empty()) {
      return absl::UnknownError(
          fmt::format("{} failed for ResourceClaim {}: {}", rpc, claim->name, entry->error()));
    }
    on_ok(uid, *entry);
    --unfinished;
  }
  if (unfinished != 0) {
    return absl::UnknownError(fmt::format("{} skipped {} ResourceClaims", rpc, unfinished));
  }
  return absl::OkStatus();
}

// grpc-go's codec error for a message that is not the response type: the
// proto library's text for bad wire data. (gRPC C++ itself fails such a
// call with Internal and an empty message; the kubelet's text is Go's.)
grpc::Status UnparseableStatus() {
  return grpc::Status(grpc::StatusCode::INTERNAL,
                      "grpc: failed to unmarshal the received message: proto: cannot parse "
                      "invalid wire-format data");
}

template <typename Response>
absl::StatusOr<Response> ParseResponse(std::string_view bytes, bool validate_utf8,
                                       bool (*valid_utf8)(const Response&)) {
  Response resp;
  if (!resp.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return CallStatus(UnparseableStatus());
  }
  if (validate_utf8 && !valid_utf8(resp)) return CallStatus(transport::ClientInvalidUtf8Status());
  return resp;
}

template <typename Api>
absl::StatusOr<std::map<std::string, PrepareEntry>> ReadPrepare(std::string_view bytes,
                                                                const DraClientOptions& opts) {
  using Response = typename Api::PrepareResponse;
  absl::StatusOr<Response> resp =
      ParseResponse<Response>(bytes, opts.validate_utf8, &PrepareResponseValidUtf8<Response>);
  if (!resp.ok()) return resp.status();
  return PrepareEntries(*resp, opts.read_share_id);
}

template <typename Api>
absl::StatusOr<std::map<std::string, std::string>> ReadUnprepare(std::string_view bytes,
                                                                 const DraClientOptions& opts) {
  using Response = typename Api::UnprepareResponse;
  absl::StatusOr<Response> resp =
      ParseResponse<Response>(bytes, opts.validate_utf8, &UnprepareResponseValidUtf8<Response>);
  if (!resp.ok()) return resp.status();
  return UnprepareErrors(*resp);
}

}  // namespace

absl::StatusOr<std::map<std::string, PrepareEntry>> ReadPrepareResponse(
    DraService service, std::string_view bytes, const DraClientOptions& opts) {
  return service == DraService::kV1 ? ReadPrepare<V1Api>(bytes, opts)
                                    : ReadPrepare<V1beta1Api>(bytes, opts);
}

absl::StatusOr<std::map<std::string, std::string>> ReadUnprepareResponse(
    DraService service, std::string_view bytes, const DraClientOptions& opts) {
  return service == DraService::kV1 ? ReadUnprepare<V1Api>(bytes, opts)
                                    : ReadUnprepare<V1beta1Api>(bytes, opts);
}

DraClient::DraClient(std::string driver, std::string endpoint, DraService service,
                     DraClientOptions opts)
    : driver_(std::move(driver)),
      endpoint_(std::move(endpoint)),
      service_(service),
      opts_(opts),
      channel_(NewChannel(endpoint_, opts_)) {}

absl::StatusOr<PreparedClaims> DraClient::NodePrepareResources(const std::vector<Claim>& claims) {
  assert(!claims.empty());
  return service_ == DraService::kV1 ? Prepare<V1Api>(claims) : Prepare<V1beta1Api>(claims);
}

absl::Status DraClient::NodeUnprepareResources(const std::vector<Claim>& claims) {
  assert(!claims.empty());
  return service_ == DraService::kV1 ? Unprepare<V1Api>(claims) : Unprepare<V1beta1Api>(claims);
}

absl::StatusOr<std::map<std::string, PrepareEntry>> DraClient::CallNodePrepareResources(
    const std::vector<Claim>& claims) {
  assert(!claims.empty());
  return service_ == DraService::kV1 ? RawPrepare<V1Api>(claims) : RawPrepare<V1beta1Api>(claims);
}

absl::StatusOr<std::map<std::string, std::string>> DraClient::CallNodeUnprepareResources(
    const std::vector<Claim>& claims) {
  assert(!claims.empty());
  return service_ == DraService::kV1 ? RawUnprepare<V1Api>(claims)
                                     : RawUnprepare<V1beta1Api>(claims);
}

void DraClient::ObserveRpc(std::string_view service, std::string_view rpc, const grpc::Status& s,
                           absl::Time start) const {
  if (!opts_.on_rpc) return;
  opts_.on_rpc(driver_, fmt::format("/{}/{}", service, rpc),
               transport::GoCodeName(static_cast<int>(s.error_code())), absl::Now() - start);
}

template <typename Api>
absl::StatusOr<typename Api::PrepareResponse> DraClient::PrepareCall(
    const std::vector<Claim>& claims) {
  typename Api::PrepareRequest req;
  FillClaims(claims, &req);
  typename Api::PrepareResponse resp;
  grpc::ClientContext ctx;
  const absl::Time start = absl::Now();
  ctx.set_deadline(absl::ToChronoTime(start + opts_.call_timeout));
  grpc::Status s = Api::NewStub(channel_)->NodePrepareResources(&ctx, req, &resp);
  if (s.ok() && opts_.validate_utf8 && !PrepareResponseValidUtf8(resp)) {
    s = transport::ClientInvalidUtf8Status();
  }
  ObserveRpc(Api::kService, "NodePrepareResources", s, start);
  if (!s.ok()) return CallStatus(s);
  return resp;
}

template <typename Api>
absl::StatusOr<typename Api::UnprepareResponse> DraClient::UnprepareCall(
    const std::vector<Claim>& claims) {
  typename Api::UnprepareRequest req;
  FillClaims(claims, &req);
  typename Api::UnprepareResponse resp;
  grpc::ClientContext ctx;
  const absl::Time start = absl::Now();
  ctx.set_deadline(absl::ToChronoTime(start + opts_.call_timeout));
  grpc::Status s = Api::NewStub(channel_)->NodeUnprepareResources(&ctx, req, &resp);
  if (s.ok() && opts_.validate_utf8 && !UnprepareResponseValidUtf8(resp)) {
    s = transport::ClientInvalidUtf8Status();
  }
  ObserveRpc(Api::kService, "NodeUnprepareResources", s, start);
  if (!s.ok()) return CallStatus(s);
  return resp;
}

template <typename Api>
absl::StatusOr<PreparedClaims> DraClient::Prepare(const std::vector<Claim>& claims) {
  constexpr std::string_view kRpc = "NodePrepareResources";
  absl::StatusOr<typename Api::PrepareResponse> resp = PrepareCall<Api>(claims);
  if (!resp.ok()) return CallError(kRpc, resp.status());
  PreparedClaims out;
  absl::Status check =
      CheckResponse(kRpc, claims, resp->claims(), [&](const std::string& uid, const auto& entry) {
        std::vector<ResponseDevice>& devices = out[uid];
        for (const auto& d : entry.devices()) {
          devices.push_back(ToResponseDevice(d, opts_.read_share_id));
        }
      });
  if (!check.ok()) return check;
  return out;
}

template <typename Api>
absl::Status DraClient::Unprepare(const std::vector<Claim>& claims) {
  constexpr std::string_view kRpc = "NodeUnprepareResources";
  absl::StatusOr<typename Api::UnprepareResponse> resp = UnprepareCall<Api>(claims);
  if (!resp.ok()) return CallError(kRpc, resp.status());
  return CheckResponse(kRpc, claims, resp->claims(), [](const std::string&, const auto&) {});
}

template <typename Api>
absl::StatusOr<std::map<std::string, PrepareEntry>> DraClient::RawPrepare(
    const std::vector<Claim>& claims) {
  absl::StatusOr<typename Api::PrepareResponse> resp = PrepareCall<Api>(claims);
  if (!resp.ok()) return resp.status();
  return PrepareEntries(*resp, opts_.read_share_id);
}

template <typename Api>
absl::StatusOr<std::map<std::string, std::string>> DraClient::RawUnprepare(
    const std::vector<Claim>& claims) {
  absl::StatusOr<typename Api::UnprepareResponse> resp = UnprepareCall<Api>(claims);
  if (!resp.ok()) return resp.status();
  return UnprepareErrors(*resp);
}

}  // namespace devmgr::dra
