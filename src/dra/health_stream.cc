#include "dra/health_stream.h"

#include <algorithm>
#include <utility>

#include "common/logging.h"
#include "dra/health/v1/api.grpc.pb.h"
#include "dra/health/v1alpha1/api.grpc.pb.h"
#include "grpcpp/client_context.h"

namespace devmgr::dra {
namespace {

// RunOnce's answer when the stream was stopped before it was opened.
constexpr int kNotOpened = -1;

bool Advertised(const std::vector<std::string>& versions, const char* service) {
  return std::find(versions.begin(), versions.end(), service) != versions.end();
}

DeviceHealthStatus FromWire(int health) {
  // HealthStatus: UNKNOWN = 0, HEALTHY = 1, UNHEALTHY = 2; any other value
  // is Unknown (toDeviceHealthStatus' default).
  switch (health) {
    case 1:
      return DeviceHealthStatus::kHealthy;
    case 2:
      return DeviceHealthStatus::kUnhealthy;
    default:
      return DeviceHealthStatus::kUnknown;
  }
}

const char* ServiceText(HealthService s) {
  return s == HealthService::kV1 ? kV1DRAResourceHealth : kV1alpha1DRAResourceHealth;
}

}  // namespace

HealthService ChooseHealthService(int minor, bool gate, const std::vector<std::string>& versions) {
  if (!gate) return HealthService::kNone;
  // Up to 1.36 the plugin manager starts the stream for every plugin
  // (dra_plugin_manager.go: only the gate is checked) and always speaks
  // v1alpha1; 1.37 picks from the advertised services, newest first
  // (pickHealthService over healthServicesSupportedByKubelet).
  if (minor < 37) return HealthService::kV1alpha1;
  if (Advertised(versions, kV1DRAResourceHealth)) return HealthService::kV1;
  if (Advertised(versions, kV1alpha1DRAResourceHealth)) return HealthService::kV1alpha1;
  return HealthService::kNone;
}

struct HealthStreams::Stream {
  uint64_t id = 0;
  std::string driver;
  std::shared_ptr<grpc::Channel> channel;
  HealthService service = HealthService::kNone;
  // Guarded by HealthStreams::mu_.
  bool stop = false;
  bool done = false;
  grpc::ClientContext* ctx = nullptr;
  absl::CondVar wake;
  std::thread thread;
};

HealthStreams::HealthStreams(HealthStreamsOptions opts) : opts_(std::move(opts)) {}

HealthStreams::~HealthStreams() { Stop(); }

void HealthStreams::Watch(uint64_t id, const std::string& driver,
                          std::shared_ptr<grpc::Channel> channel,
                          const std::vector<std::string>& versions) {
  const HealthService service = ChooseHealthService(opts_.kubelet_minor, opts_.enabled, versions);
  if (service == HealthService::kNone || opts_.cache == nullptr) return;
  auto s = std::make_shared<Stream>();
  s->id = id;
  s->driver = driver;
  s->channel = std::move(channel);
  s->service = service;
  absl::MutexLock l(&mu_);
  if (stopped_ || streams_.count(id) != 0) return;
  ReapLocked();
  streams_[id] = s;
  s->thread = std::thread([this, s] { Loop(s); });
}

void HealthStreams::Unwatch(uint64_t id) {
  absl::MutexLock l(&mu_);
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  std::shared_ptr<Stream> s = std::move(it->second);
  streams_.erase(it);
  s->stop = true;
  if (s->ctx != nullptr) s->ctx->TryCancel();
  s->wake.Signal();
  retired_.push_back(std::move(s));
  ReapLocked();
}

void HealthStreams::ReapLocked() {
  for (auto it = retired_.begin(); it != retired_.end();) {
    if (!(*it)->done) {
      ++it;
      continue;
    }
    // Done: the thread has left Loop and only returns now.
    (*it)->thread.join();
    it = retired_.erase(it);
  }
}

void HealthStreams::Stop() {
  std::vector<std::shared_ptr<Stream>> all;
  {
    absl::MutexLock l(&mu_);
    stopped_ = true;
    for (auto& [id, s] : streams_) all.push_back(std::move(s));
    streams_.clear();
    for (auto& s : retired_) all.push_back(std::move(s));
    retired_.clear();
    for (auto& s : all) {
      s->stop = true;
      if (s->ctx != nullptr) s->ctx->TryCancel();
      s->wake.Signal();
    }
  }
  for (auto& s : all) {
    if (s->thread.joinable()) s->thread.join();
  }
}

void HealthStreams::Loop(std::shared_ptr<Stream> s) {
  for (;;) {
    const int code = RunOnce(*s);
    if (code == kNotOpened) break;
    {
      // Stop is the kubelet going away: its goroutines end with it and
      // dra_health_state keeps what the streams last reported.
      absl::MutexLock l(&mu_);
      if (stopped_) break;
    }
    // HandleWatchResourcesStream's deferred clearDriver: whatever ended the
    // stream (the driver, an error, a cancel by deregistration), the
    // driver's health is gone. No pod is queued for it; pods show Unknown at
    // their next sync.
    opts_.cache->ClearDriver(s->driver);
    DM_VINFO(2, "WatchResources health stream has ended", {"pluginName", s->driver},
             {"code", std::to_string(code)});
    absl::MutexLock l(&mu_);
    ++ended_;
    if (opts_.kubelet_minor >= 37 && code == grpc::StatusCode::UNIMPLEMENTED) {
      // 1.37: a driver that advertises the service without implementing it
      // is not watched again until it re-registers.
      DM_VINFO(2, "Driver does not support WatchResources health stream, stopping",
               {"pluginName", s->driver});
      break;
    }
    // wait.UntilWithContext: the next attempt one period after this one ended.
    const absl::Time due = absl::Now() + opts_.retry_period;
    while (!s->stop && !s->wake.WaitWithDeadline(&mu_, due)) {
    }
    if (s->stop) break;
  }
  absl::MutexLock l(&mu_);
  s->done = true;
}

namespace {

// Reads one NodeWatchResources stream of the API in `Service` to its end.
template <typename Service, typename Request, typename Response>
grpc::Status ReadStream(grpc::ClientContext* ctx, const std::shared_ptr<grpc::Channel>& channel,
                        const HealthStreamsOptions& opts, const std::string& driver) {
  auto stub = Service::NewStub(channel);
  Request req;
  auto reader = stub->NodeWatchResources(ctx, req);
  Response resp;
  bool first = true;
  while (reader->Read(&resp)) {
    if (first) {
      DM_VINFO(2, "Successfully started WatchResources health stream", {"pluginName", driver});
      first = false;
    }
    std::vector<DeviceHealth> devices;
    devices.reserve(resp.devices_size());
    for (const auto& d : resp.devices()) {
      devices.push_back(ReadDeviceHealth(opts.kubelet_minor, d.device().pool_name(),
                                         d.device().device_name(), FromWire(d.health()),
                                         d.health_check_timeout_seconds(), d.message()));
    }
    std::vector<DeviceHealth> changed = opts.cache->Update(driver, std::move(devices));
    if (!changed.empty() && opts.on_change) opts.on_change(driver, changed);
  }
  return reader->Finish();
}

}  // namespace

int HealthStreams::RunOnce(Stream& s) {
  grpc::ClientContext ctx;
  {
    absl::MutexLock l(&mu_);
    if (s.stop) return kNotOpened;
    s.ctx = &ctx;
    ++opened_;
  }
  DM_VINFO(4, "Attempting to start WatchResources health stream", {"pluginName", s.driver},
           {"healthService", ServiceText(s.service)});
  grpc::Status st;
  if (s.service == HealthService::kV1) {
    st = ReadStream<::v1::DRAResourceHealth, ::v1::NodeWatchResourcesRequest,
                    ::v1::NodeWatchResourcesResponse>(&ctx, s.channel, opts_, s.driver);
  } else {
    st = ReadStream<::v1alpha1::DRAResourceHealth, ::v1alpha1::NodeWatchResourcesRequest,
                    ::v1alpha1::NodeWatchResourcesResponse>(&ctx, s.channel, opts_, s.driver);
  }
  absl::MutexLock l(&mu_);
  s.ctx = nullptr;
  return st.error_code();
}

int64_t HealthStreams::opened() const {
  absl::MutexLock l(&mu_);
  return opened_;
}

int64_t HealthStreams::ended() const {
  absl::MutexLock l(&mu_);
  return ended_;
}

bool HealthStreams::WaitForOpened(int64_t n, absl::Duration timeout) const {
  absl::MutexLock l(&mu_);
  auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return opened_ >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
}

bool HealthStreams::WaitForEnded(int64_t n, absl::Duration timeout) const {
  absl::MutexLock l(&mu_);
  auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ended_ >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
}

}  // namespace devmgr::dra
