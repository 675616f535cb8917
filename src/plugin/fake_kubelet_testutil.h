// Test-only: a tiny fake kubelet for the sample plugin's tests. It serves
// v1beta1.Registration on <dir>/kubelet.sock and, like the real one, dials
// back inside Register, calls GetDevicePluginOptions, then reads ListAndWatch
// on its own thread. Not part of any library (header-only, test binaries only).
#ifndef DEVMGR_PLUGIN_FAKE_KUBELET_TESTUTIL_H_
#define DEVMGR_PLUGIN_FAKE_KUBELET_TESTUTIL_H_

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace devmgr::plugin::testing_util {

inline constexpr absl::Duration kTimeout = absl::Seconds(10);
inline constexpr char kReceived[] = "received";

inline std::chrono::system_clock::time_point Deadline(absl::Duration d) {
  return std::chrono::system_clock::now() + std::chrono::milliseconds(absl::ToInt64Milliseconds(d));
}

inline std::shared_ptr<grpc::Channel> Dial(const std::string& path) {
  grpc::ChannelArguments args;
  args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
  return grpc::CreateCustomChannel("unix:" + path, grpc::InsecureChannelCredentials(), args);
}

// The kubelet side, reduced to what a plugin sees.
class FakeKubelet final : public v1beta1::Registration::Service {
 public:
  explicit FakeKubelet(std::string dir) : dir_(std::move(dir)) {}
  ~FakeKubelet() override { Stop(); }

  void Start() {
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + dir_ + "/kubelet.sock", grpc::InsecureServerCredentials());
    b.RegisterService(this);
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }

  void Stop() {
    {
      absl::MutexLock l(&mu_);
      for (auto& s : streams_) s->ctx.TryCancel();
    }
    if (server_) {
      server_->Shutdown(Deadline(absl::Seconds(1)));
      server_->Wait();
      server_.reset();
    }
    for (auto& s : streams_) {
      if (s->thread.joinable()) s->thread.join();
    }
  }

  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req,
                        v1beta1::Empty*) override {
    {
      absl::MutexLock l(&mu_);
      requests_.push_back(*req);
    }
    auto channel = Dial(dir_ + "/" + req->endpoint());
    if (!channel->WaitForConnected(Deadline(dial_timeout_))) {
      return grpc::Status(grpc::StatusCode::UNKNOWN,
                          "failed to dial device plugin: context deadline exceeded");
    }
    auto stub = v1beta1::DevicePlugin::NewStub(channel);
    grpc::ClientContext octx;
    v1beta1::DevicePluginOptions options;
    grpc::Status s = stub->GetDevicePluginOptions(&octx, v1beta1::Empty(), &options);
    if (!s.ok()) {
      return grpc::Status(grpc::StatusCode::UNKNOWN,
                          "failed to get device plugin options: " + s.error_message());
    }
    auto stream = std::make_unique<Stream>();
    Stream* raw = stream.get();
    raw->stub = std::move(stub);
    {
      absl::MutexLock l(&mu_);
      options_ = options;
      streams_.push_back(std::move(stream));
    }
    raw->thread = std::thread([this, raw] {
      auto reader = raw->stub->ListAndWatch(&raw->ctx, v1beta1::Empty());
      v1beta1::ListAndWatchResponse r;
      while (reader->Read(&r)) {
        absl::MutexLock l(&mu_);
        raw->updates.push_back(r);
      }
      grpc::Status st = reader->Finish();
      absl::MutexLock l(&mu_);
      raw->end = st;
      raw->ended = true;
    });
    return grpc::Status::OK;
  }

  // Waits for stream `i` to have at least n updates; returns the last one.
  std::optional<v1beta1::ListAndWatchResponse> WaitForUpdate(size_t i, size_t n) {
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return streams_.size() > i && streams_[i]->updates.size() >= n;
    };
    absl::MutexLock l(&mu_);
    if (!mu_.AwaitWithTimeout(absl::Condition(&ready), kTimeout)) return std::nullopt;
    return streams_[i]->updates[n - 1];
  }

  // Waits for stream `i` to end; returns its status.
  std::optional<grpc::Status> WaitForEnd(size_t i) {
    auto ended = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return streams_.size() > i && streams_[i]->ended;
    };
    absl::MutexLock l(&mu_);
    if (!mu_.AwaitWithTimeout(absl::Condition(&ended), kTimeout)) return std::nullopt;
    return streams_[i]->end;
  }

  size_t UpdateCount(size_t i) {
    absl::MutexLock l(&mu_);
    return streams_.size() > i ? streams_[i]->updates.size() : 0;
  }

  std::vector<v1beta1::RegisterRequest> requests() {
    absl::MutexLock l(&mu_);
    return requests_;
  }
  v1beta1::DevicePluginOptions options() {
    absl::MutexLock l(&mu_);
    return options_;
  }
  void set_dial_timeout(absl::Duration d) { dial_timeout_ = d; }

 private:
  struct Stream {
    std::unique_ptr<v1beta1::DevicePlugin::Stub> stub;
    grpc::ClientContext ctx;
    std::thread thread;
    std::vector<v1beta1::ListAndWatchResponse> updates;
    bool ended = false;
    grpc::Status end;
  };

  const std::string dir_;
  absl::Duration dial_timeout_ = absl::Seconds(10);
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex mu_;
  std::vector<v1beta1::RegisterRequest> requests_ ABSL_GUARDED_BY(mu_);
  v1beta1::DevicePluginOptions options_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Stream>> streams_;  // appended under mu_
};

}  // namespace devmgr::plugin::testing_util

#endif  // DEVMGR_PLUGIN_FAKE_KUBELET_TESTUTIL_H_
