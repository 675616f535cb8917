// GrpcPluginClient: the kubelet's device-plugin client
// (pkg/kubelet/cm/devicemanager/plugin/v1beta1/client.go) over C++ gRPC.
// It dials a plugin's unix socket the way the kubelet does (blocking, 10 s,
// insecure, :authority "localhost", gRPC's default 4 MiB receive limit),
// reports plugin errors in Go's gRPC text, and runs ListAndWatch, handing
// every response to the manager's ClientHandler.
#ifndef DEVMGR_TRANSPORT_GRPC_PLUGIN_CLIENT_H_
#define DEVMGR_TRANSPORT_GRPC_PLUGIN_CLIENT_H_

#include <functional>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "manager/plugin_client.h"

namespace devmgr::transport {

// gRPC's default max receive message size, which the kubelet's client to
// plugins leaves unchanged.
inline constexpr int kDefaultMaxRecvMsgSize = 4 * 1024 * 1024;
// The kubelet's dial timeout for plugin sockets.
inline constexpr absl::Duration kDefaultDialTimeout = absl::Seconds(10);

struct ClientOptions {
  absl::Duration dial_timeout = kDefaultDialTimeout;
  int max_recv_msg_size = kDefaultMaxRecvMsgSize;
  // Profile::validates_utf8 (1.34+): a response with invalid UTF-8 in a
  // field the kubelet's Go struct declares `string` fails as Go's unmarshal
  // does (ClientInvalidUtf8Status in transport/utf8_fields.h).
  bool validate_utf8 = false;
  // A call the kubelet makes without a deadline (GetDevicePluginOptions,
  // Allocate, GetPreferredAllocation) waits as long as the plugin does, as on
  // a real node. While it waits, a warning naming the plugin and the RPC is
  // logged after this long, and again each time the wait doubles. Zero: never.
  absl::Duration hang_notice_after = absl::Seconds(10);
};

// Creates the channel the kubelet would: "unix:<socket_path>", insecure,
// :authority "localhost", the given receive limit, and a subchannel of its
// own (like a separate Go ClientConn). Does not connect.
std::shared_ptr<grpc::Channel> NewUnixChannel(const std::string& socket_path,
                                              int max_recv_msg_size);

// Blocks until `channel` is READY, `timeout` passes or `cancelled()` turns
// true (polled every 50 ms). Returns OK, DeadlineExceeded("context deadline
// exceeded") or Cancelled("context canceled"), Go's context error texts.
absl::Status WaitForReady(grpc::Channel* channel, absl::Duration timeout,
                          const std::function<bool()>& cancelled);

// Thread-safe. Usually owned through a shared_ptr (the manager keeps one per
// endpoint); Connect requires that.
class GrpcPluginClient final : public manager::PluginClient,
                               public std::enable_shared_from_this<GrpcPluginClient> {
 public:
  GrpcPluginClient(std::string resource_name, std::string socket_path, ClientOptions opts);
  ~GrpcPluginClient() override;
  GrpcPluginClient(const GrpcPluginClient&) = delete;
  GrpcPluginClient& operator=(const GrpcPluginClient&) = delete;

  const std::string& ResourceName() const { return resource_name_; }
  const std::string& SocketPath() const override { return socket_path_; }

  // The blocking dial. Error: Unavailable "failed to dial device plugin:
  // context deadline exceeded" (or "... context canceled" when Close()d
  // meanwhile).
  absl::Status Dial();

  // The kubelet's client.Connect: Dial, then
  // handler->PluginConnected(resource, this). Returns the first error as is.
  // REQUIRES: *this is owned by a shared_ptr; `handler` outlives the client.
  absl::Status Connect(manager::ClientHandler* handler);

  // The kubelet's client.Run: ListAndWatch, each response passed to
  // handler->PluginListAndWatchReceiver, until the stream ends, fails or the
  // client is Close()d. Logs "ListAndWatch ended unexpectedly for device
  // plugin" (and, when a response exceeded the receive limit, the size).
  // With validate_utf8, a response failing the UTF-8 check ends the stream
  // the same way (the call is cancelled; error: Internal "grpc: failed to
  // unmarshal the received message: string field contains invalid UTF-8")
  // and is not passed on. Never retries. REQUIRES: Dial succeeded.
  void Run(manager::ClientHandler* handler);

  // Go's conn.Close: cancels every call in flight (the ListAndWatch stream
  // included); later calls fail with Canceled "grpc: the client connection
  // is closing". Idempotent.
  void Close();
  bool IsClosed() const;

  // The unary calls. With validate_utf8, Allocate and GetPreferredAllocation
  // fail with Go's unmarshal error (Internal, see Run) on a response failing
  // the UTF-8 check; the other two responses have no string fields.
  absl::StatusOr<v1beta1::DevicePluginOptions> GetDevicePluginOptions() override;
  absl::StatusOr<v1beta1::AllocateResponse> Allocate(const v1beta1::AllocateRequest& req) override;
  absl::StatusOr<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const v1beta1::PreferredAllocationRequest& req) override;
  absl::StatusOr<v1beta1::PreStartContainerResponse> PreStartContainer(
      const v1beta1::PreStartContainerRequest& req, absl::Duration timeout) override;

 private:
  // Registers `ctx` as in flight and returns the stub, or nullptr with
  // `*err` set when closed or not dialled.
  std::shared_ptr<v1beta1::DevicePlugin::Stub> BeginCall(grpc::ClientContext* ctx,
                                                         absl::Status* err);
  void EndCall(grpc::ClientContext* ctx);
  // Rewrites a cancellation caused by Close() into Go's closing error.
  absl::Status CallResult(const grpc::Status& status);
  // One unary call; `rpc` names it in the hang notice (see ClientOptions),
  // logged while a call without a deadline waits.
  template <typename Resp, typename Fn>
  absl::StatusOr<Resp> Unary(const char* rpc, Fn fn, absl::Duration timeout);

  // Constant after construction.
  const std::string resource_name_;
  const std::string socket_path_;
  const ClientOptions opts_;

  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<grpc::Channel> channel_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<v1beta1::DevicePlugin::Stub> stub_ ABSL_GUARDED_BY(mu_);
  std::set<grpc::ClientContext*> in_flight_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::transport

#endif  // DEVMGR_TRANSPORT_GRPC_PLUGIN_CLIENT_H_
