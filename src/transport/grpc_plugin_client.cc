#include "transport/grpc_plugin_client.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <thread>
#include <type_traits>
#include <utility>

#include "common/logging.h"
#include "fmt/format.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "transport/go_grpc_error.h"
#include "transport/utf8_fields.h"

namespace devmgr::transport {
namespace {

// Messages without string fields pass Go's UTF-8 check trivially.
template <typename Resp>
bool FailsUtf8Check(const Resp& resp) {
  if constexpr (std::is_same_v<Resp, v1beta1::AllocateResponse> ||
                std::is_same_v<Resp, v1beta1::PreferredAllocationResponse>) {
    return FirstInvalidUtf8Field(resp).has_value();
  } else {
    return false;
  }
}

// The kubelet's errFailedToDialDevicePlugin.
constexpr char kFailedToDial[] = "failed to dial device plugin:";

// C++ gRPC reports an oversize message as RESOURCE_EXHAUSTED "Received
// message larger than max (N vs. M)" (grpc-go: "grpc: received message
// larger than max (N vs. M)"). Returns N, or -1 when `status` is not that.
long long OversizeMessageBytes(const grpc::Status& status) {
  if (status.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) return -1;
  const std::string& msg = status.error_message();
  const size_t pos = msg.find("larger than max (");
  if (pos == std::string::npos) return -1;
  long long n = -1;
  if (std::sscanf(msg.c_str() + pos, "larger than max (%lld", &n) != 1) return -1;
  return n;
}

// Announces calls that wait without a deadline. One process-wide thread, started by the first
// call that needs it and never stopped, keeps every such call in flight and logs a warning for
// each when it has waited `after`, 2x`after`, 4x`after`... A call costs a map insert and erase.
class HangWatcher {
 public:
  static HangWatcher& Get() {
    static HangWatcher* w = new HangWatcher();  // never destroyed: its thread outlives main
    return *w;
  }
  uint64_t Begin(absl::Duration after, const std::string& resource, const char* rpc,
                 const std::string& endpoint) {
    absl::MutexLock lock(&mu_);
    if (!started_) {
      started_ = true;
      std::thread([this] { Loop(); }).detach();
    }
    const absl::Time now = absl::Now();
    const uint64_t id = ++next_id_;
    calls_.emplace(id, Call{resource, rpc, endpoint, now, after, now + after});
    if (now + after < wake_at_) wake_ = true;
    return id;
  }
  void End(uint64_t id) {
    absl::MutexLock lock(&mu_);
    calls_.erase(id);
  }

 private:
  struct Call {
    std::string resource;
    const char* rpc;
    std::string endpoint;
    absl::Time start;
    absl::Duration after;
    absl::Time next;  // when the next notice is due
  };
  void Loop() {
    absl::MutexLock lock(&mu_);
    while (true) {
      wake_at_ = absl::InfiniteFuture();
      for (const auto& [id, c] : calls_) wake_at_ = std::min(wake_at_, c.next);
      wake_ = false;
      mu_.AwaitWithDeadline(absl::Condition(&wake_), wake_at_);
      const absl::Time now = absl::Now();
      for (auto& [id, c] : calls_) {
        if (c.next > now) continue;
        const absl::Duration waited = c.next - c.start;
        c.next = c.start + 2 * waited;
        DM_WARN(
            "Device plugin has not answered the call yet; the kubelet makes this call without a "
            "deadline and waits as long as the plugin does, and so does devmgr",
            {"resource", c.resource}, {"rpc", c.rpc}, {"endpoint", c.endpoint},
            {"waited", absl::FormatDuration(waited)});
      }
    }
  }

  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time wake_at_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, Call> calls_ ABSL_GUARDED_BY(mu_);
};

// Registers one call with the HangWatcher for its lifetime (nothing when `after` is zero).
class HangNotice {
 public:
  HangNotice(absl::Duration after, const std::string& resource, const char* rpc,
             const std::string& endpoint)
      : id_(after > absl::ZeroDuration() ? HangWatcher::Get().Begin(after, resource, rpc, endpoint)
                                         : 0) {}
  ~HangNotice() {
    if (id_ != 0) HangWatcher::Get().End(id_);
  }
  HangNotice(const HangNotice&) = delete;
  HangNotice& operator=(const HangNotice&) = delete;

 private:
  const uint64_t id_;
};

}  // namespace

std::shared_ptr<grpc::Channel> NewUnixChannel(const std::string& socket_path,
                                              int max_recv_msg_size) {
  grpc::ChannelArguments args;
  args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
  args.SetMaxReceiveMessageSize(max_recv_msg_size);
  // A Go ClientConn never shares its connection with another one.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel("unix:" + socket_path, grpc::InsecureChannelCredentials(), args);
}

absl::Status WaitForReady(grpc::Channel* channel, absl::Duration timeout,
                          const std::function<bool()>& cancelled) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (cancelled && cancelled()) return absl::CancelledError("context canceled");
    const absl::Time now = absl::Now();
    if (now >= deadline) return absl::DeadlineExceededError("context deadline exceeded");
    const absl::Time slice = std::min(deadline, now + absl::Milliseconds(50));
    if (channel->WaitForConnected(absl::ToChronoTime(slice))) return absl::OkStatus();
  }
}

GrpcPluginClient::GrpcPluginClient(std::string resource_name, std::string socket_path,
                                   ClientOptions opts)
    : resource_name_(std::move(resource_name)), socket_path_(std::move(socket_path)), opts_(opts) {}

GrpcPluginClient::~GrpcPluginClient() { Close(); }

absl::Status GrpcPluginClient::Dial() {
  auto channel = NewUnixChannel(socket_path_, opts_.max_recv_msg_size);
  const absl::Status ready =
      WaitForReady(channel.get(), opts_.dial_timeout, [this] { return IsClosed(); });
  if (!ready.ok()) {
    return absl::UnavailableError(
        fmt::format("{} {}", kFailedToDial, std::string(ready.message())));
  }
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::UnavailableError(fmt::format("{} context canceled", kFailedToDial));
  channel_ = channel;
  stub_ = v1beta1::DevicePlugin::NewStub(channel);
  return absl::OkStatus();
}

absl::Status GrpcPluginClient::Connect(manager::ClientHandler* handler) {
  if (absl::Status s = Dial(); !s.ok()) {
    DM_ERROR(std::string(s.message()), "Unable to connect to device plugin client with socket path",
             {"path", socket_path_});
    return s;
  }
  return handler->PluginConnected(resource_name_, shared_from_this());
}

void GrpcPluginClient::Close() {
  absl::MutexLock lock(&mu_);
  if (closed_) return;
  closed_ = true;
  for (grpc::ClientContext* ctx : in_flight_) ctx->TryCancel();
  stub_.reset();
  channel_.reset();
}

bool GrpcPluginClient::IsClosed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

std::shared_ptr<v1beta1::DevicePlugin::Stub> GrpcPluginClient::BeginCall(grpc::ClientContext* ctx,
                                                                         absl::Status* err) {
  absl::MutexLock lock(&mu_);
  if (closed_) {
    *err = absl::CancelledError(
        GoRpcErrorText(grpc::Status(grpc::StatusCode::CANCELLED, kClientConnClosing)));
    return nullptr;
  }
  if (stub_ == nullptr) {
    *err = absl::FailedPreconditionError("device plugin client is not connected");
    return nullptr;
  }
  in_flight_.insert(ctx);
  return stub_;
}

void GrpcPluginClient::EndCall(grpc::ClientContext* ctx) {
  absl::MutexLock lock(&mu_);
  in_flight_.erase(ctx);
}

absl::Status GrpcPluginClient::CallResult(const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::CANCELLED && IsClosed()) {
    return FromGrpcStatus(grpc::Status(grpc::StatusCode::CANCELLED, kClientConnClosing));
  }
  // The client's own deadline expiring: Go reports the context's error.
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
      status.error_message() == "Deadline Exceeded") {
    return FromGrpcStatus(
        grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "context deadline exceeded"));
  }
  return FromGrpcStatus(status);
}

template <typename Resp, typename Fn>
absl::StatusOr<Resp> GrpcPluginClient::Unary(const char* rpc, Fn fn, absl::Duration timeout) {
  grpc::ClientContext ctx;
  const bool bounded = timeout != absl::InfiniteDuration();
  if (bounded) ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  absl::Status err;
  auto stub = BeginCall(&ctx, &err);
  if (stub == nullptr) return err;
  Resp resp;
  grpc::Status status;
  {
    // No deadline, as in the kubelet: the wait is as long as the plugin's, and is announced.
    HangNotice notice(bounded ? absl::ZeroDuration() : opts_.hang_notice_after, resource_name_, rpc,
                      socket_path_);
    status = fn(stub.get(), &ctx, &resp);
  }
  EndCall(&ctx);
  if (!status.ok()) return CallResult(status);
  // 1.34+: the Go codec's unmarshal fails, so the call does.
  if (opts_.validate_utf8 && FailsUtf8Check(resp)) return CallResult(ClientInvalidUtf8Status());
  return resp;
}

absl::StatusOr<v1beta1::DevicePluginOptions> GrpcPluginClient::GetDevicePluginOptions() {
  return Unary<v1beta1::DevicePluginOptions>(
      "GetDevicePluginOptions",
      [](v1beta1::DevicePlugin::Stub* stub, grpc::ClientContext* ctx,
         v1beta1::DevicePluginOptions* resp) {
        return stub->GetDevicePluginOptions(ctx, v1beta1::Empty(), resp);
      },
      absl::InfiniteDuration());
}

absl::StatusOr<v1beta1::AllocateResponse> GrpcPluginClient::Allocate(
    const v1beta1::AllocateRequest& req) {
  return Unary<v1beta1::AllocateResponse>(
      "Allocate",
      [&req](v1beta1::DevicePlugin::Stub* stub, grpc::ClientContext* ctx,
             v1beta1::AllocateResponse* resp) { return stub->Allocate(ctx, req, resp); },
      absl::InfiniteDuration());
}

absl::StatusOr<v1beta1::PreferredAllocationResponse> GrpcPluginClient::GetPreferredAllocation(
    const v1beta1::PreferredAllocationRequest& req) {
  return Unary<v1beta1::PreferredAllocationResponse>(
      "GetPreferredAllocation",
      [&req](v1beta1::DevicePlugin::Stub* stub, grpc::ClientContext* ctx,
             v1beta1::PreferredAllocationResponse* resp) {
        return stub->GetPreferredAllocation(ctx, req, resp);
      },
      absl::InfiniteDuration());
}

absl::StatusOr<v1beta1::PreStartContainerResponse> GrpcPluginClient::PreStartContainer(
    const v1beta1::PreStartContainerRequest& req, absl::Duration timeout) {
  return Unary<v1beta1::PreStartContainerResponse>(
      "PreStartContainer",
      [&req](v1beta1::DevicePlugin::Stub* stub, grpc::ClientContext* ctx,
             v1beta1::PreStartContainerResponse* resp) {
        return stub->PreStartContainer(ctx, req, resp);
      },
      timeout);
}

void GrpcPluginClient::Run(manager::ClientHandler* handler) {
  grpc::ClientContext ctx;
  absl::Status err;
  auto stub = BeginCall(&ctx, &err);
  if (stub == nullptr) {
    DM_ERROR(std::string(err.message()), "ListAndWatch ended unexpectedly for device plugin",
             {"resource", resource_name_});
    return;
  }
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> reader =
      stub->ListAndWatch(&ctx, v1beta1::Empty());
  v1beta1::ListAndWatchResponse resp;
  // Set when a response fails Go's unmarshal (1.34+ UTF-8 check): Recv
  // returns that error and grpc-go cancels the stream.
  grpc::Status unmarshal_error;
  while (reader->Read(&resp)) {
    // Once the connection is closed (disconnectClient), Go's Recv fails; a
    // message gRPC had already buffered must not reach the manager.
    if (IsClosed()) break;
    if (opts_.validate_utf8 && FirstInvalidUtf8Field(resp).has_value()) {
      unmarshal_error = ClientInvalidUtf8Status();
      ctx.TryCancel();
      break;
    }
    DM_VINFO(2, "State pushed for device plugin", {"resource", resource_name_},
             {"resourceCapacity", resp.devices_size()});
    handler->PluginListAndWatchReceiver(resource_name_, this, resp);
  }
  grpc::Status status = reader->Finish();
  EndCall(&ctx);
  if (!unmarshal_error.ok()) status = unmarshal_error;
  // A stream the plugin ends cleanly is io.EOF in Go.
  const std::string text = status.ok() ? "EOF" : std::string(CallResult(status).message());
  DM_ERROR(text, "ListAndWatch ended unexpectedly for device plugin", {"resource", resource_name_});
  if (const long long size = OversizeMessageBytes(status); size >= 0) {
    // On a real node this is all the kubelet says; spell out the consequence.
    DM_ERROR(status.error_message(),
             "ListAndWatch response exceeds the gRPC max receive message size; the kubelet "
             "drops the stream and the resource will read 0 allocatable (raise "
             "--max-recv-msg-size to emulate a larger limit)",
             {"resource", resource_name_}, {"messageSize", static_cast<int64_t>(size)},
             {"maxRecvMsgSize", opts_.max_recv_msg_size});
  }
}

}  // namespace devmgr::transport
