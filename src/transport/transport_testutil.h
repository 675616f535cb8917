// Test doubles for the transport tests: a temp directory, a ClientHandler
// that records calls (and, like the manager, calls GetDevicePluginOptions
// in PluginConnected), and a tiny in-process device plugin serving
// v1beta1.DevicePlugin (and optionally pluginregistration.Registration) on
// a unix socket. Header-only; included by *_test.cc only.
#ifndef DEVMGR_TRANSPORT_TRANSPORT_TESTUTIL_H_
#define DEVMGR_TRANSPORT_TRANSPORT_TESTUTIL_H_

#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/temp_dir_testutil.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "manager/plugin_client.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace devmgr::transport::testutil {

using ::devmgr::testutil::TempDir;

// Records every ClientHandler call. Thread-safe.
class FakeClientHandler : public manager::ClientHandler {
 public:
  struct Event {
    std::string kind;  // "connected", "list", "disconnected"
    std::string resource;
    manager::PluginClient* client = nullptr;
    std::string socket;
    int devices = 0;
  };

  absl::Status PluginConnected(const std::string& resource,
                               std::shared_ptr<manager::PluginClient> client) override {
    // ManagerImpl.PluginConnected's first step.
    auto opts = client->GetDevicePluginOptions();
    if (!opts.ok()) {
      return absl::UnknownError("failed to get device plugin options: " +
                                std::string(opts.status().message()));
    }
    absl::MutexLock lock(&mu_);
    if (!connect_error_.ok()) return connect_error_;
    clients_.push_back(client);
    events_.push_back({"connected", resource, client.get(), client->SocketPath(), 0});
    return absl::OkStatus();
  }
  // Every later PluginConnected fails with `s` (after GetDevicePluginOptions).
  void SetConnectError(absl::Status s) {
    absl::MutexLock lock(&mu_);
    connect_error_ = std::move(s);
  }
  void PluginDisconnected(const std::string& resource, manager::PluginClient* client) override {
    absl::MutexLock lock(&mu_);
    events_.push_back({"disconnected", resource, client, client->SocketPath(), 0});
  }
  void PluginListAndWatchReceiver(const std::string& resource, manager::PluginClient* client,
                                  const v1beta1::ListAndWatchResponse& resp) override {
    absl::MutexLock lock(&mu_);
    events_.push_back({"list", resource, client, client->SocketPath(), resp.devices_size()});
  }

  std::vector<Event> Events() const {
    absl::MutexLock lock(&mu_);
    return events_;
  }
  int Count(const std::string& kind) const {
    absl::MutexLock lock(&mu_);
    return CountLocked(kind);
  }
  // Waits until at least `n` events of `kind` were seen.
  bool WaitFor(const std::string& kind, int n, absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto cond = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return CountLocked(kind) >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
  }
  // The last event of `kind` (default-constructed when none).
  Event Last(const std::string& kind) const {
    absl::MutexLock lock(&mu_);
    for (auto it = events_.rbegin(); it != events_.rend(); ++it) {
      if (it->kind == kind) return *it;
    }
    return {};
  }

 private:
  absl::Status connect_error_ ABSL_GUARDED_BY(mu_);
  int CountLocked(const std::string& kind) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int n = 0;
    for (const Event& e : events_) n += e.kind == kind ? 1 : 0;
    return n;
  }
  mutable absl::Mutex mu_;
  std::vector<Event> events_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<manager::PluginClient>> clients_ ABSL_GUARDED_BY(mu_);
};

struct FakePluginConfig {
  grpc::Status options_status = grpc::Status::OK;
  v1beta1::DevicePluginOptions options;
  // Sent by ListAndWatch in order.
  std::vector<v1beta1::ListAndWatchResponse> responses;
  // After the responses, keep the stream open until EndStreams() or a
  // cancellation; otherwise finish at once.
  bool hold_stream = true;
  // The status ListAndWatch finishes with.
  grpc::Status list_and_watch_status = grpc::Status::OK;
  // Allocate's answer; unset: one container response with envs {A: 1}.
  std::optional<v1beta1::AllocateResponse> allocate_response;
  // GetPreferredAllocation's answer (default: empty).
  v1beta1::PreferredAllocationResponse preferred_response;
  // Probe mode: also serve pluginregistration.Registration.
  bool serve_registration = false;
  pluginregistration::PluginInfo info;
};

// A device plugin in the test process. Thread-safe.
class FakePlugin {
 public:
  FakePlugin(std::string socket_path, FakePluginConfig cfg)
      : socket_path_(std::move(socket_path)), cfg_(std::move(cfg)), dp_(this), reg_(this) {}
  ~FakePlugin() { Stop(); }

  bool Start() {
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials());
    b.RegisterService(&dp_);
    if (cfg_.serve_registration) b.RegisterService(&reg_);
    server_ = b.BuildAndStart();
    return server_ != nullptr;
  }
  void Stop() {
    EndStreams();
    if (server_ != nullptr) {
      server_->Shutdown(absl::ToChronoTime(absl::Now()));
      server_->Wait();
      server_.reset();
    }
  }
  // Held ListAndWatch streams finish with cfg.list_and_watch_status.
  void EndStreams() {
    absl::MutexLock lock(&mu_);
    end_streams_ = true;
  }
  std::vector<std::string> Calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  int CallCount(const std::string& method) const {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (const auto& c : calls_) n += c == method ? 1 : 0;
    return n;
  }
  // Waits until a ListAndWatch stream was cancelled by the client.
  bool WaitStreamCancelled(absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&stream_cancelled_), timeout);
  }
  bool WaitNotification(absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto cond = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !notifications_.empty(); };
    return mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
  }
  std::vector<pluginregistration::RegistrationStatus> Notifications() const {
    absl::MutexLock lock(&mu_);
    return notifications_;
  }
  const std::string& socket_path() const { return socket_path_; }

 private:
  class DevicePluginService final : public v1beta1::DevicePlugin::Service {
   public:
    explicit DevicePluginService(FakePlugin* p) : p_(p) {}
    grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                        v1beta1::DevicePluginOptions* resp) override {
      p_->Record("GetDevicePluginOptions");
      *resp = p_->cfg_.options;
      return p_->cfg_.options_status;
    }
    grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                              grpc::ServerWriter<v1beta1::ListAndWatchResponse>* w) override {
      p_->Record("ListAndWatch");
      for (const auto& r : p_->cfg_.responses) {
        if (!w->Write(r)) break;
      }
      if (p_->cfg_.hold_stream) {
        absl::MutexLock lock(&p_->mu_);
        while (!p_->end_streams_ && !ctx->IsCancelled()) {
          p_->mu_.AwaitWithTimeout(absl::Condition(&p_->end_streams_), absl::Milliseconds(20));
        }
        if (ctx->IsCancelled()) {
          p_->stream_cancelled_ = true;
          return grpc::Status::CANCELLED;
        }
      }
      return p_->cfg_.list_and_watch_status;
    }
    grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest*,
                          v1beta1::AllocateResponse* resp) override {
      p_->Record("Allocate");
      if (p_->cfg_.allocate_response.has_value()) {
        *resp = *p_->cfg_.allocate_response;
      } else {
        resp->add_container_responses()->mutable_envs()->insert({"A", "1"});
      }
      return grpc::Status::OK;
    }
    grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                        const v1beta1::PreferredAllocationRequest*,
                                        v1beta1::PreferredAllocationResponse* resp) override {
      p_->Record("GetPreferredAllocation");
      *resp = p_->cfg_.preferred_response;
      return grpc::Status::OK;
    }
    grpc::Status PreStartContainer(grpc::ServerContext* ctx,
                                   const v1beta1::PreStartContainerRequest*,
                                   v1beta1::PreStartContainerResponse*) override {
      p_->Record("PreStartContainer");
      // Hangs until the client's deadline.
      while (!ctx->IsCancelled()) absl::SleepFor(absl::Milliseconds(10));
      return grpc::Status::CANCELLED;
    }

   private:
    FakePlugin* const p_;
  };
  class RegistrationService final : public pluginregistration::Registration::Service {
   public:
    explicit RegistrationService(FakePlugin* p) : p_(p) {}
    grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                         pluginregistration::PluginInfo* resp) override {
      p_->Record("GetInfo");
      *resp = p_->cfg_.info;
      return grpc::Status::OK;
    }
    grpc::Status NotifyRegistrationStatus(
        grpc::ServerContext*, const pluginregistration::RegistrationStatus* req,
        pluginregistration::RegistrationStatusResponse*) override {
      absl::MutexLock lock(&p_->mu_);
      p_->calls_.push_back("NotifyRegistrationStatus");
      p_->notifications_.push_back(*req);
      return grpc::Status::OK;
    }

   private:
    FakePlugin* const p_;
  };

  void Record(const std::string& m) {
    absl::MutexLock lock(&mu_);
    calls_.push_back(m);
  }

  const std::string socket_path_;
  const FakePluginConfig cfg_;
  DevicePluginService dp_;
  RegistrationService reg_;
  std::unique_ptr<grpc::Server> server_;
  mutable absl::Mutex mu_;
  bool end_streams_ ABSL_GUARDED_BY(mu_) = false;
  bool stream_cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  std::vector<pluginregistration::RegistrationStatus> notifications_ ABSL_GUARDED_BY(mu_);
};

// A ListAndWatch response with `n` healthy devices "dev-0".."dev-<n-1>".
inline v1beta1::ListAndWatchResponse Devices(int n) {
  v1beta1::ListAndWatchResponse r;
  for (int i = 0; i < n; ++i) {
    auto* d = r.add_devices();
    d->set_id("dev-" + std::to_string(i));
    d->set_health("Healthy");
  }
  return r;
}

// Calls Register on a kubelet socket, as a plugin does.
inline grpc::Status CallRegister(const std::string& kubelet_socket, const std::string& version,
                                 const std::string& endpoint, const std::string& resource) {
  auto channel = grpc::CreateChannel("unix:" + kubelet_socket, grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  v1beta1::RegisterRequest req;
  req.set_version(version);
  req.set_endpoint(endpoint);
  req.set_resource_name(resource);
  v1beta1::Empty resp;
  return stub->Register(&ctx, req, &resp);
}

}  // namespace devmgr::transport::testutil

#endif  // DEVMGR_TRANSPORT_TRANSPORT_TESTUTIL_H_
