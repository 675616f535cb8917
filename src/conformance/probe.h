// The tester's own gRPC client to a plugin socket: every unary call has a
// deadline (a hung plugin is a finding, never a hang) and its latency is
// measured; ListAndWatch streams are recorded message by message with
// arrival times and serialized sizes. The receive limit is far above the
// kubelet's 4 MiB so that oversized lists can be measured, not just lost.
#ifndef DEVMGR_CONFORMANCE_PROBE_H_
#define DEVMGR_CONFORMANCE_PROBE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "conformance/mono_time.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"

namespace devmgr::conformance {

// The tester's receive limit (64 MiB).
inline constexpr int kProbeMaxRecvMsgSize = 64 * 1024 * 1024;

template <typename Resp>
struct CallResult {
  grpc::Status status;
  Resp resp;
  absl::Duration latency;
  bool ok() const { return status.ok(); }
  // "OK" or Go's "rpc error: code = X desc = Y".
  std::string StatusText() const;
};

// Thread-safe. Owned by one check; destroyed after its streams.
class StreamRecorder {
 public:
  struct Message {
    MonoTime at;
    v1beta1::ListAndWatchResponse resp;
    int64_t bytes = 0;  // serialized size
  };
  ~StreamRecorder();

  // Waits until at least n messages arrived, the stream ended, or timeout.
  // True when n messages are there.
  bool WaitForMessages(size_t n, absl::Duration timeout) const;
  // Waits for the end of the stream. True when it ended.
  bool WaitForEnd(absl::Duration timeout) const;
  // Cancels the stream (a client disconnect) and joins the reader.
  void Cancel();

  size_t MessageCount() const;
  std::vector<std::shared_ptr<const Message>> Messages() const;
  std::shared_ptr<const Message> First() const;  // nullptr if none
  std::shared_ptr<const Message> Last() const;   // nullptr if none
  MonoTime opened_at() const { return opened_at_; }
  bool ended() const;
  // The end status (set once ended) and when it ended.
  std::optional<grpc::Status> end_status() const;
  MonoTime ended_at() const;
  // True when the end was caused by Cancel().
  bool cancelled_by_tester() const;

 private:
  friend class ProbeClient;
  StreamRecorder() = default;
  void Read(std::shared_ptr<v1beta1::DevicePlugin::Stub> stub);

  MonoTime opened_at_;
  grpc::ClientContext ctx_;
  std::thread reader_;
  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<const Message>> messages_ ABSL_GUARDED_BY(mu_);
  std::optional<grpc::Status> end_ ABSL_GUARDED_BY(mu_);
  MonoTime ended_at_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

// Called after every Allocate RPC the client made (failed ones included)
// with its result, on the calling thread.
using AllocateObserver = std::function<void(const CallResult<v1beta1::AllocateResponse>&)>;

// Thread-safe, except set_allocate_observer.
class ProbeClient {
 public:
  explicit ProbeClient(std::string socket_path, int max_recv_msg_size = kProbeMaxRecvMsgSize);

  // Observes every later Allocate (empty = none). Call before the client is
  // shared with other threads.
  void set_allocate_observer(AllocateObserver observer) {
    allocate_observer_ = std::move(observer);
  }

  const std::string& socket_path() const { return socket_path_; }
  // Waits until the channel connects. DeadlineExceeded with "could not
  // connect to <path> within <t>" on timeout.
  absl::Status Dial(absl::Duration timeout);

  CallResult<v1beta1::DevicePluginOptions> GetDevicePluginOptions(absl::Duration timeout);
  CallResult<v1beta1::AllocateResponse> Allocate(const v1beta1::AllocateRequest& req,
                                                 absl::Duration timeout);
  CallResult<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const v1beta1::PreferredAllocationRequest& req, absl::Duration timeout);
  CallResult<v1beta1::PreStartContainerResponse> PreStartContainer(
      const v1beta1::PreStartContainerRequest& req, absl::Duration timeout);
  // Opens a ListAndWatch stream read on a thread of its own.
  std::unique_ptr<StreamRecorder> ListAndWatch();

 private:
  const std::string socket_path_;
  std::shared_ptr<grpc::Channel> channel_;
  std::shared_ptr<v1beta1::DevicePlugin::Stub> stub_;
  AllocateObserver allocate_observer_;
};

// A one-container Allocate request.
v1beta1::AllocateRequest AllocateRequestFor(
    const std::vector<std::vector<std::string>>& containers);

// True when a unix socket at `path` accepts a connection right now.
bool SocketAccepts(const std::string& path);

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_PROBE_H_
