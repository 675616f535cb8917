#include "draplugin/health_service.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "dra/health/v1/api.grpc.pb.h"
#include "dra/health/v1alpha1/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace devmgr::draplugin {
namespace {

// HealthStatus: UNKNOWN = 0, HEALTHY = 1, UNHEALTHY = 2 (both versions).
int WireHealth(const std::string& health) {
  if (health == "Healthy") return 1;
  if (health == "Unhealthy") return 2;
  return 0;
}

// The first word of `line` from `*pos` on (spaces and tabs separate words).
std::string NextWord(const std::string& line, size_t* pos) {
  size_t i = line.find_first_not_of(" \t", *pos);
  if (i == std::string::npos) {
    *pos = line.size();
    return "";
  }
  size_t j = line.find_first_of(" \t", i);
  if (j == std::string::npos) j = line.size();
  *pos = j;
  return line.substr(i, j - i);
}

}  // namespace

struct HealthService::Streamer {
  // One NodeWatchResources stream: the list now and after each change, until
  // the kubelet cancels it, end-health-streams or Stop.
  template <typename Response, typename Writer>
  static grpc::Status Watch(HealthService* h, grpc::ServerContext* ctx, Writer* writer) {
    uint64_t sent = 0;
    uint64_t end_gen;
    {
      absl::MutexLock l(&h->mu_);
      if (h->stopped_) return grpc::Status::CANCELLED;
      end_gen = h->end_generation_;
      ++h->open_;
    }
    DM_INFO("Health stream opened (NodeWatchResources)", {"peer", ctx->peer()});
    grpc::Status out;
    for (;;) {
      Response resp;
      {
        absl::MutexLock l(&h->mu_);
        auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(h->mu_) {
          return h->version_ != sent || h->end_generation_ != end_gen || h->stopped_;
        };
        // Woken by every change; the timeout only notices a cancelled call.
        h->mu_.AwaitWithTimeout(absl::Condition(&changed), absl::Milliseconds(200));
        if (ctx->IsCancelled() || h->stopped_) {
          out = grpc::Status::CANCELLED;
          break;
        }
        if (h->end_generation_ != end_gen) {
          out = grpc::Status::OK;
          break;
        }
        if (h->version_ == sent) continue;
        sent = h->version_;
        Fill(*h, &resp);
      }
      if (!writer->Write(resp)) {
        out = grpc::Status::CANCELLED;
        break;
      }
    }
    absl::MutexLock l(&h->mu_);
    --h->open_;
    return out;
  }

  template <typename Response>
  static void Fill(const HealthService& h, Response* resp) ABSL_EXCLUSIVE_LOCKS_REQUIRED(h.mu_) {
    const int64_t now = absl::ToUnixSeconds(absl::Now());
    for (const std::string& name : h.order_) {
      if (h.silenced_.at(name)) continue;
      const DeviceHealthState& st = h.devices_.at(name);
      auto* d = resp->add_devices();
      d->mutable_device()->set_pool_name(h.pool_);
      d->mutable_device()->set_device_name(name);
      d->set_health(static_cast<decltype(d->health())>(WireHealth(st.health)));
      d->set_last_updated_time(now);
      d->set_health_check_timeout_seconds(h.timeout_seconds_);
      d->set_message(st.message);
    }
  }
};

namespace {

// The DRAResourceHealth service of one API version: its one RPC handed to
// `watch` (v1alpha1 and v1 differ only in their message types).
template <typename Base, typename Request, typename Response>
class WatchService final : public Base {
 public:
  using Watch = std::function<grpc::Status(grpc::ServerContext*, grpc::ServerWriter<Response>*)>;
  explicit WatchService(Watch watch) : watch_(std::move(watch)) {}
  grpc::Status NodeWatchResources(grpc::ServerContext* ctx, const Request*,
                                  grpc::ServerWriter<Response>* w) override {
    return watch_(ctx, w);
  }

 private:
  Watch watch_;
};

using V1alpha1Service =
    WatchService<::v1alpha1::DRAResourceHealth::Service, ::v1alpha1::NodeWatchResourcesRequest,
                 ::v1alpha1::NodeWatchResourcesResponse>;
using V1Service = WatchService<::v1::DRAResourceHealth::Service, ::v1::NodeWatchResourcesRequest,
                               ::v1::NodeWatchResourcesResponse>;

std::vector<std::string> NamesOf(const Config& config) {
  std::vector<std::string> out;
  for (const DeviceConfig& d : config.devices) out.push_back(d.name);
  return out;
}

}  // namespace

HealthService::HealthService(const Config& config, std::string pool)
    : pool_(std::move(pool)),
      order_(NamesOf(config)),
      timeout_seconds_(config.health.timeout_seconds) {
  for (const DeviceConfig& d : config.devices) {
    devices_[d.name] = DeviceHealthState{d.health, d.health_message};
    const std::vector<std::string>& omit = config.misbehave.health_omit_devices;
    silenced_[d.name] = std::find(omit.begin(), omit.end(), d.name) != omit.end();
  }
  const std::vector<std::string> served = config.ServedHealth();
  auto serves = [&](const char* s) {
    return std::find(served.begin(), served.end(), s) != served.end();
  };
  if (serves(kHealthV1alpha1)) {
    v1alpha1_ = std::make_unique<V1alpha1Service>([this](auto* ctx, auto* w) {
      return Streamer::Watch<::v1alpha1::NodeWatchResourcesResponse>(this, ctx, w);
    });
  }
  if (serves(kHealthV1)) {
    v1_ = std::make_unique<V1Service>([this](auto* ctx, auto* w) {
      return Streamer::Watch<::v1::NodeWatchResourcesResponse>(this, ctx, w);
    });
  }
}

HealthService::~HealthService() { Stop(); }

std::vector<grpc::Service*> HealthService::Services() {
  std::vector<grpc::Service*> out;
  if (v1alpha1_) out.push_back(v1alpha1_.get());
  if (v1_) out.push_back(v1_.get());
  return out;
}

absl::Status HealthService::ApplyControlLine(const std::string& raw) {
  const std::string line(absl::StripAsciiWhitespace(raw));
  if (line.empty() || line[0] == '#') return absl::OkStatus();
  size_t pos = 0;
  const std::string cmd = NextWord(line, &pos);
  absl::MutexLock l(&mu_);
  if (cmd == "end-health-streams") {
    ++end_generation_;
    return absl::OkStatus();
  }
  if (cmd != "health" && cmd != "silence") {
    return absl::InvalidArgumentError("unknown command '" + cmd +
                                      "' (want health, silence or end-health-streams)");
  }
  const std::string device = NextWord(line, &pos);
  auto it = devices_.find(device);
  if (it == devices_.end()) return absl::InvalidArgumentError("unknown device '" + device + "'");
  if (cmd == "silence") {
    silenced_[device] = true;
    ++version_;
    return absl::OkStatus();
  }
  const std::string health = NextWord(line, &pos);
  if (health != "Healthy" && health != "Unhealthy" && health != "Unknown") {
    return absl::InvalidArgumentError("bad health '" + health +
                                      "' (want Healthy, Unhealthy or Unknown)");
  }
  const size_t msg = line.find_first_not_of(" \t", pos);
  it->second = DeviceHealthState{health, msg == std::string::npos ? "" : line.substr(msg)};
  silenced_[device] = false;
  ++version_;
  return absl::OkStatus();
}

void HealthService::Stop() {
  absl::MutexLock l(&mu_);
  stopped_ = true;
}

int HealthService::open_streams() const {
  absl::MutexLock l(&mu_);
  return open_;
}

bool HealthService::WaitForStreams(int n, absl::Duration timeout) const {
  absl::MutexLock l(&mu_);
  auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return open_ >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
}

std::vector<std::pair<std::string, DeviceHealthState>> HealthService::List() const {
  absl::MutexLock l(&mu_);
  std::vector<std::pair<std::string, DeviceHealthState>> out;
  for (const std::string& name : order_) {
    if (!silenced_.at(name)) out.emplace_back(name, devices_.at(name));
  }
  return out;
}

}  // namespace devmgr::draplugin
