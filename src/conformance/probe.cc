#include "conformance/probe.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "fmt/format.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "transport/go_grpc_error.h"

namespace devmgr::conformance {
namespace {

std::chrono::system_clock::time_point Deadline(absl::Duration d) {
  return absl::ToChronoTime(absl::Now() + d);
}

template <typename Resp, typename Fn>
CallResult<Resp> Timed(absl::Duration timeout, Fn fn) {
  CallResult<Resp> r;
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline(timeout));
  const MonoTime start = MonoNow();
  r.status = fn(&ctx, &r.resp);
  r.latency = MonoSub(MonoNow(), start);
  return r;
}

}  // namespace

template <typename Resp>
std::string CallResult<Resp>::StatusText() const {
  return status.ok() ? "OK" : transport::GoRpcErrorText(status);
}
template struct CallResult<v1beta1::DevicePluginOptions>;
template struct CallResult<v1beta1::AllocateResponse>;
template struct CallResult<v1beta1::PreferredAllocationResponse>;
template struct CallResult<v1beta1::PreStartContainerResponse>;

StreamRecorder::~StreamRecorder() { Cancel(); }

void StreamRecorder::Read(std::shared_ptr<v1beta1::DevicePlugin::Stub> stub) {
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> reader =
      stub->ListAndWatch(&ctx_, v1beta1::Empty());
  v1beta1::ListAndWatchResponse resp;
  while (reader->Read(&resp)) {
    auto m = std::make_shared<Message>();
    m->at = MonoNow();
    m->bytes = static_cast<int64_t>(resp.ByteSizeLong());
    m->resp = std::move(resp);
    resp = v1beta1::ListAndWatchResponse();
    absl::MutexLock lock(&mu_);
    messages_.push_back(std::move(m));
  }
  grpc::Status s = reader->Finish();
  absl::MutexLock lock(&mu_);
  end_ = s;
  ended_at_ = MonoNow();
}

void StreamRecorder::Cancel() {
  {
    absl::MutexLock lock(&mu_);
    if (!end_.has_value()) cancelled_ = true;
  }
  ctx_.TryCancel();
  if (reader_.joinable()) reader_.join();
}

bool StreamRecorder::WaitForMessages(size_t n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto cond = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return messages_.size() >= n || end_.has_value();
  };
  mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
  return messages_.size() >= n;
}

bool StreamRecorder::WaitForEnd(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto cond = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return end_.has_value(); };
  return mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
}

size_t StreamRecorder::MessageCount() const {
  absl::MutexLock lock(&mu_);
  return messages_.size();
}

std::vector<std::shared_ptr<const StreamRecorder::Message>> StreamRecorder::Messages() const {
  absl::MutexLock lock(&mu_);
  return messages_;
}

std::shared_ptr<const StreamRecorder::Message> StreamRecorder::First() const {
  absl::MutexLock lock(&mu_);
  return messages_.empty() ? nullptr : messages_.front();
}

std::shared_ptr<const StreamRecorder::Message> StreamRecorder::Last() const {
  absl::MutexLock lock(&mu_);
  return messages_.empty() ? nullptr : messages_.back();
}

bool StreamRecorder::ended() const {
  absl::MutexLock lock(&mu_);
  return end_.has_value();
}

std::optional<grpc::Status> StreamRecorder::end_status() const {
  absl::MutexLock lock(&mu_);
  return end_;
}

MonoTime StreamRecorder::ended_at() const {
  absl::MutexLock lock(&mu_);
  return ended_at_;
}

bool StreamRecorder::cancelled_by_tester() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

ProbeClient::ProbeClient(std::string socket_path, int max_recv_msg_size)
    : socket_path_(std::move(socket_path)) {
  grpc::ChannelArguments args;
  args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
  args.SetMaxReceiveMessageSize(max_recv_msg_size);
  // A connection of its own, like a separate Go ClientConn: never one left
  // over from a plugin server that is going away.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // Reconnect quickly after a plugin restart.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 200);
  channel_ =
      grpc::CreateCustomChannel("unix:" + socket_path_, grpc::InsecureChannelCredentials(), args);
  stub_ = v1beta1::DevicePlugin::NewStub(channel_);
}

absl::Status ProbeClient::Dial(absl::Duration timeout) {
  if (channel_->WaitForConnected(Deadline(timeout))) return absl::OkStatus();
  return absl::DeadlineExceededError(fmt::format("could not connect to {} within {}", socket_path_,
                                                 absl::FormatDuration(timeout)));
}

CallResult<v1beta1::DevicePluginOptions> ProbeClient::GetDevicePluginOptions(
    absl::Duration timeout) {
  return Timed<v1beta1::DevicePluginOptions>(timeout, [&](grpc::ClientContext* c, auto* r) {
    return stub_->GetDevicePluginOptions(c, v1beta1::Empty(), r);
  });
}

CallResult<v1beta1::AllocateResponse> ProbeClient::Allocate(const v1beta1::AllocateRequest& req,
                                                            absl::Duration timeout) {
  auto r = Timed<v1beta1::AllocateResponse>(
      timeout, [&](grpc::ClientContext* c, auto* r) { return stub_->Allocate(c, req, r); });
  if (allocate_observer_) allocate_observer_(r);
  return r;
}

CallResult<v1beta1::PreferredAllocationResponse> ProbeClient::GetPreferredAllocation(
    const v1beta1::PreferredAllocationRequest& req, absl::Duration timeout) {
  return Timed<v1beta1::PreferredAllocationResponse>(timeout, [&](grpc::ClientContext* c, auto* r) {
    return stub_->GetPreferredAllocation(c, req, r);
  });
}

CallResult<v1beta1::PreStartContainerResponse> ProbeClient::PreStartContainer(
    const v1beta1::PreStartContainerRequest& req, absl::Duration timeout) {
  return Timed<v1beta1::PreStartContainerResponse>(timeout, [&](grpc::ClientContext* c, auto* r) {
    return stub_->PreStartContainer(c, req, r);
  });
}

std::unique_ptr<StreamRecorder> ProbeClient::ListAndWatch() {
  std::unique_ptr<StreamRecorder> rec(new StreamRecorder());
  rec->opened_at_ = MonoNow();
  StreamRecorder* raw = rec.get();
  rec->reader_ = std::thread([raw, stub = stub_] { raw->Read(stub); });
  return rec;
}

v1beta1::AllocateRequest AllocateRequestFor(
    const std::vector<std::vector<std::string>>& containers) {
  v1beta1::AllocateRequest req;
  for (const auto& ids : containers) {
    auto* c = req.add_container_requests();
    for (const auto& id : ids) c->add_devices_ids(id);
  }
  return req;
}

bool SocketAccepts(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) return false;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace devmgr::conformance
