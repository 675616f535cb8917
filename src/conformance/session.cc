#include "conformance/session.h"

#include <algorithm>
#include <set>
#include <utility>

#include "common/go_format.h"
#include "common/logging.h"
#include "conformance/checks.h"
#include "conformance/validation.h"
#include "fmt/format.h"
#include "metrics/kubelet_metrics.h"
#include "transport/go_grpc_error.h"

namespace devmgr::conformance {

Session::Session(Target* target, SessionOptions opts) : target_(target), opts_(std::move(opts)) {}

Session::~Session() { End(); }

TestKubeletOptions Session::KubeletOptions() const {
  TestKubeletOptions k;
  k.dir = opts_.dir;
  k.resource = target_->resource();
  k.serve_wait = t().serve_wait;
  k.rpc_timeout = t().rpc;
  k.late_connect = t().serve_wait + t().register_within;
  k.metrics = opts_.metrics;
  return k;
}

absl::Status Session::Begin(bool expect_registration) {
  expect_registration_ = expect_registration;
  if (target_->kind() == Target::Kind::kSocket) {
    socket_path_ = target_->socket_path();
    if (!SocketAccepts(socket_path_)) {
      return absl::FailedPreconditionError(
          fmt::format("nothing accepts connections on {}", socket_path_));
    }
    ProbeClient* c = Client();
    if (absl::Status s = c->Dial(t().rpc); !s.ok())
      return absl::FailedPreconditionError(s.message());
    auto opts = c->GetDevicePluginOptions(t().rpc);
    if (opts.ok()) socket_options_ = opts.resp;
    own_stream_ = c->ListAndWatch();
    return absl::OkStatus();
  }
  DM_VINFO(1, "Conformance kubelet starting");
  kubelet_ = std::make_unique<TestKubelet>(KubeletOptions());
  if (absl::Status s = kubelet_->Start(); !s.ok()) return s;
  DM_VINFO(1, "Conformance kubelet started", {"dir", opts_.dir});
  if (target_->StartedByTester()) {
    if (absl::Status s = StartPlugin(); !s.ok()) return s;
  } else {
    plugin_started_at_ = kubelet_->started_at();
  }
  bool registered = false;
  if (expect_registration_) {
    // In slices, so that a plugin that crashed (exited non-zero) is not
    // waited for the whole window; one that exits 0 may have left a daemon.
    const MonoTime deadline = MonoDeadline(t().register_within);
    int code = 0;
    while (!(registered = kubelet_->WaitForRegistrations(1, absl::Milliseconds(100)))) {
      if (MonoNow() >= deadline || (target_->Exited(&code) && code != 0)) break;
    }
  } else {
    // An earlier session saw no registration: a serving socket is enough.
    const MonoTime deadline = MonoDeadline(t().register_within);
    int code = 0;
    while (!(registered = kubelet_->WaitForRegistrations(1, absl::Milliseconds(20)))) {
      if (!FindPluginSockets(opts_.dir).empty() && !SocketPath().empty()) break;
      if (MonoNow() >= deadline || (target_->Exited(&code) && code != 0)) break;
    }
  }
  int code = 0;
  if (!registered && target_->Exited(&code) && (code == 126 || code == 127)) {
    std::string out;
    for (const auto& l : target_->OutputTail(5)) out += "\n  " + l;
    return absl::FailedPreconditionError(
        fmt::format("the plugin command could not run (exit code {}){}", code, out));
  }
  DM_VINFO(1, "Conformance session waited for registration", {"registered", registered});
  if (registered) {
    // The handshake follows the registration; it is bounded by the
    // kubelet's own deadlines.
    kubelet_->WaitForConnections(1, t().serve_wait + t().rpc + t().register_within);
  }
  return absl::OkStatus();
}

void Session::End() {
  // Streams and channels go first, while the plugin still serves: releasing
  // a gRPC channel whose peer has gone can block for seconds. Then the
  // kubelet, so the plugin never waits on a reader that is gone.
  list_stream_ = nullptr;
  own_stream_.reset();
  fallback_stream_.reset();
  client_.reset();
  if (kubelet_) kubelet_->Stop();
  if (plugin_running_) {
    target_->Stop(std::min(t().stop_grace, absl::Seconds(2)));
    plugin_running_ = false;
  }
}

std::optional<RegistrationRecord> Session::FirstRegistration() const {
  if (!kubelet_) return std::nullopt;
  auto regs = kubelet_->Registrations();
  if (regs.empty()) return std::nullopt;
  return regs.front();
}

std::string Session::SocketPath() {
  if (!socket_path_.empty()) return socket_path_;
  if (kubelet_) {
    if (KubeletConnection* c = kubelet_->LatestConnection()) {
      socket_path_ = c->socket_path;
      return socket_path_;
    }
    auto regs = kubelet_->Registrations();
    if (!regs.empty() && !regs.back().socket_path.empty()) {
      socket_path_ = regs.back().socket_path;
      return socket_path_;
    }
    for (const std::string& s : FindPluginSockets(opts_.dir)) {
      if (SocketAccepts(s)) {
        socket_path_ = s;
        break;
      }
    }
  }
  return socket_path_;
}

ProbeClient* Session::Client() {
  if (!client_) {
    const std::string path = SocketPath();
    if (path.empty()) return nullptr;
    client_ = std::make_unique<ProbeClient>(path);
    if (metrics::KubeletMetrics* m = opts_.metrics; m != nullptr) {
      // Named at each call (after its timing): a restart re-registers while
      // the same client may still be in use. The client dies before the
      // session, and concurrent Allocates only read it.
      client_->set_allocate_observer([this, m](const CallResult<v1beta1::AllocateResponse>& r) {
        m->ObserveAllocDuration(AllocateResourceName(), r.latency);
      });
    }
    // A plugin the tester started that exited non-zero serves nothing:
    // its calls fail at once instead of after a dial timeout.
    if (!PluginFailed()) client_->Dial(t().rpc).IgnoreError();
  }
  return client_.get();
}

std::string Session::AllocateResourceName() const {
  if (kubelet_) {
    auto regs = kubelet_->Registrations();
    if (!regs.empty()) return regs.back().request.resource_name();
  }
  return target_->resource();
}

StreamRecorder* Session::KubeletStream() {
  if (own_stream_) return own_stream_.get();
  if (!kubelet_) return nullptr;
  KubeletConnection* c = kubelet_->LatestConnection();
  return c == nullptr ? nullptr : c->stream.get();
}

std::optional<v1beta1::DevicePluginOptions> Session::Options() {
  if (target_->kind() == Target::Kind::kSocket) return socket_options_;
  if (!kubelet_) return std::nullopt;
  KubeletConnection* c = kubelet_->LatestConnection();
  if (c == nullptr || !c->options_called || !c->options.ok()) return std::nullopt;
  return c->options.resp;
}

// How soon a second registration must follow a stream that ended without a
// device list for the tester to wait for its connection.
constexpr absl::Duration kSecondRegisterGrace = absl::Seconds(1);

bool Session::KubeletListArrived() {
  if (kubelet_list_arrived_.has_value()) return *kubelet_list_arrived_;
  // A plugin may register a second time at once (it saw kubelet.sock appear
  // after it had registered). A kubelet then dials the newest registration and
  // the first connection's stream ends; so follow the newest connection until
  // a list arrives or the window is over.
  const MonoTime deadline = MonoDeadline(t().first_list_within);
  kubelet_list_arrived_ = false;
  while (true) {
    const size_t connections = kubelet_ ? kubelet_->ConnectionCount() : 0;
    StreamRecorder* s = KubeletStream();
    if (s == nullptr) break;
    const absl::Duration left = std::max(absl::ZeroDuration(), MonoSub(deadline, MonoNow()));
    if (s->WaitForMessages(1, left)) {
      kubelet_list_arrived_ = true;
      break;
    }
    if (!kubelet_ || !s->ended() || PluginFailed() || MonoNow() >= deadline) break;
    // The stream ended without a list: follow a registration that came after
    // it (its connection may still be dialling), or one that comes at once.
    // A plugin that does not register again fails here without the window.
    const absl::Duration rest = std::max(absl::ZeroDuration(), MonoSub(deadline, MonoNow()));
    const size_t registrations = kubelet_->Registrations().size();
    if (registrations <= connections &&
        !kubelet_->WaitForRegistrations(registrations + 1, std::min(rest, kSecondRegisterGrace))) {
      break;
    }
    if (!kubelet_->WaitForConnections(connections + 1, rest)) break;
  }
  return *kubelet_list_arrived_;
}

StreamRecorder* Session::ListStream() {
  if (!device_list_done_) {
    device_list_done_ = true;
    if (KubeletListArrived()) {
      list_stream_ = KubeletStream();
    } else if (ProbeClient* c = PluginFailed() ? nullptr : Client(); c != nullptr) {
      // Kept open: the law.* checks judge every list of the window on it.
      fallback_stream_ = c->ListAndWatch();
      if (fallback_stream_->WaitForMessages(1, t().first_list_within)) {
        list_stream_ = fallback_stream_.get();
      }
    }
    if (list_stream_ != nullptr) first_list_ = list_stream_->First();
  }
  return list_stream_;
}

const v1beta1::ListAndWatchResponse* Session::DeviceList() {
  ListStream();
  return first_list_ ? &first_list_->resp : nullptr;
}

MonoTime Session::ListWindowEnd() {
  ListStream();
  if (!first_list_) return MonoNow();
  return first_list_->at + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               absl::ToChronoNanoseconds(t().list_window));
}

std::vector<std::shared_ptr<const StreamRecorder::Message>> Session::WindowLists() {
  StreamRecorder* r = ListStream();
  if (r == nullptr) return {};
  const MonoTime end = ListWindowEnd();
  if (!window_waited_) {
    window_waited_ = true;
    const absl::Duration left = MonoSub(end, MonoNow());
    if (left > absl::ZeroDuration()) r->WaitForEnd(left);
  }
  std::vector<std::shared_ptr<const StreamRecorder::Message>> out;
  for (auto& m : r->Messages()) {
    if (m->at <= end) out.push_back(std::move(m));
  }
  return out;
}

namespace {

// Every ID sent with exactly `health`, once: the IDs that are not
// printable first (so that the requests, which take the first IDs, carry
// them as a kubelet would sooner or later), then in byte order.
std::vector<std::string> IdsWithHealth(const v1beta1::ListAndWatchResponse* list,
                                       const std::string& health) {
  if (list == nullptr) return {};
  std::set<std::pair<bool, std::string>> out;  // {printable, id}
  for (const auto& d : list->devices()) {
    if (d.health() == health) out.insert({DeviceIdProblem(d.id()).empty(), d.id()});
  }
  std::vector<std::string> ids;
  for (const auto& [printable, id] : out) ids.push_back(id);
  return ids;
}

}  // namespace

std::string Session::KubeletHoldsNoneWhy() {
  const v1beta1::ListAndWatchResponse* list = DeviceList();
  if (list == nullptr) return "";
  const size_t bytes = list->ByteSizeLong();
  if (bytes > static_cast<size_t>(kKubeletMaxRecvMsgSize)) {
    return fmt::format(
        "the device list is {} bytes, over the kubelet's 4 MiB receive limit: a "
        "kubelet never gets it and has no device to allocate (see law.size)",
        bytes);
  }
  if (profile().validates_utf8) {
    for (const auto& d : list->devices()) {
      if (!IsValidUtf8(d.id())) {
        return fmt::format(
            "device ID {} is not valid UTF-8: a {} kubelet rejects the whole list "
            "and has no device to allocate (see law.first-list)",
            GoQuote(d.id()), profile().name);
      }
    }
  }
  return "";
}

std::vector<std::string> Session::UsableIds() {
  if (!KubeletHoldsNoneWhy().empty()) return {};
  return IdsWithHealth(DeviceList(), kHealthy);
}

std::vector<std::string> Session::UnhealthyIds() {
  if (!KubeletHoldsNoneWhy().empty()) return {};
  return IdsWithHealth(DeviceList(), kUnhealthy);
}

absl::Status Session::RestartKubelet() {
  if (!kubelet_) return absl::FailedPreconditionError("no kubelet in --socket mode");
  kubelet_->Stop();
  if (list_stream_ != nullptr && list_stream_ != fallback_stream_.get()) list_stream_ = nullptr;
  kubelet_list_arrived_.reset();
  kubelet_ = std::make_unique<TestKubelet>(KubeletOptions());
  socket_path_.clear();
  client_.reset();
  return kubelet_->Start();
}

bool Session::StopPlugin() {
  if (list_stream_ == fallback_stream_.get()) list_stream_ = nullptr;
  fallback_stream_.reset();
  client_.reset();
  socket_path_.clear();
  plugin_running_ = false;
  return target_->Stop(t().stop_grace);
}

absl::Status Session::StartPlugin() {
  socket_path_.clear();
  client_.reset();
  plugin_started_at_ = MonoNow();
  absl::Status s = target_->Start(opts_.dir);
  plugin_running_ = s.ok();
  return s;
}

std::string Session::NoRegistrationReason() const {
  int code = 0;
  if (target_->Exited(&code) && code != 0) {
    return fmt::format("the plugin exited with code {} before it registered", code);
  }
  return fmt::format("no Register call within {}", Dur(t().register_within));
}

std::string Session::NoListReason(const StreamRecorder* stream) const {
  int code = 0;
  if (target_->Exited(&code)) {
    return fmt::format("the plugin exited with code {} before it sent a device list", code);
  }
  if (std::optional<grpc::Status> st =
          stream != nullptr ? stream->end_status() : std::optional<grpc::Status>()) {
    return "the stream ended before the first device list (" +
           (st->ok() ? std::string("status OK") : transport::GoRpcErrorText(*st)) + ")";
  }
  return fmt::format("no device list within {}", Dur(t().first_list_within));
}

bool Session::PluginFailed() const {
  int code = 0;
  return target_->Exited(&code) && code != 0;
}

std::vector<std::string> Session::PluginOutput(size_t n) const {
  std::vector<std::string> out;
  for (const auto& l : target_->OutputTail(n)) out.push_back("plugin: " + l);
  return out;
}

}  // namespace devmgr::conformance
