// FakeDraDriver: a DRA driver's gRPC side for tests, serving the v1 and
// v1beta1 DRAPlugin services on a unix socket, recording every call and
// answering through handlers a test can replace (by default every claim is
// prepared with one device and unprepared without error). With EnableHealth
// it also serves DRAResourceHealth (v1alpha1 and/or v1): every stream sends
// the current list (SetHealth) at once and again at each change, until the
// test ends the streams (EndHealthStreams) or the driver stops.
// Header-only; for *_test.cc files.
#ifndef DEVMGR_DRA_FAKE_DRIVER_TESTUTIL_H_
#define DEVMGR_DRA_FAKE_DRIVER_TESTUTIL_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "dra/health/v1/api.grpc.pb.h"
#include "dra/health/v1alpha1/api.grpc.pb.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"

namespace devmgr::dra::testutil {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

inline constexpr char kV1Prepare[] =
    "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources";
inline constexpr char kV1Unprepare[] =
    "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources";
inline constexpr char kV1beta1Prepare[] =
    "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources";
inline constexpr char kV1beta1Unprepare[] =
    "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources";

inline constexpr char kV1alpha1Watch[] = "/v1alpha1.DRAResourceHealth/NodeWatchResources";
inline constexpr char kV1Watch[] = "/v1.DRAResourceHealth/NodeWatchResources";

// One call received: the full gRPC method and the claim UIDs, in order.
struct FakeCall {
  std::string method;
  std::vector<std::string> claim_uids;
};

// Both versions share the v1 messages (v1beta1 is v1 without share_id on the
// wire); v1beta1 calls are converted through their bytes.
using PrepareFn = std::function<grpc::Status(const drav1::NodePrepareResourcesRequest&,
                                             drav1::NodePrepareResourcesResponse*)>;
using UnprepareFn = std::function<grpc::Status(const drav1::NodeUnprepareResourcesRequest&,
                                               drav1::NodeUnprepareResourcesResponse*)>;

// The default answer: each claim gets device "dev-<uid>" in pool "pool",
// CDI ID "vendor.com/dev=<uid>".
inline grpc::Status PrepareAll(const drav1::NodePrepareResourcesRequest& req,
                               drav1::NodePrepareResourcesResponse* resp) {
  for (const drav1::Claim& c : req.claims()) {
    drav1::Device* d = (*resp->mutable_claims())[c.uid()].add_devices();
    d->set_pool_name("pool");
    d->set_device_name("dev-" + c.uid());
    d->add_cdi_device_ids("vendor.com/dev=" + c.uid());
  }
  return grpc::Status::OK;
}

inline grpc::Status UnprepareAll(const drav1::NodeUnprepareResourcesRequest& req,
                                 drav1::NodeUnprepareResourcesResponse* resp) {
  for (const drav1::Claim& c : req.claims()) (*resp->mutable_claims())[c.uid()];
  return grpc::Status::OK;
}

// Thread-safe.
class FakeDraDriver {
 public:
  explicit FakeDraDriver(std::string socket_path) : path_(std::move(socket_path)) {}
  ~FakeDraDriver() { Stop(); }
  FakeDraDriver(const FakeDraDriver&) = delete;
  FakeDraDriver& operator=(const FakeDraDriver&) = delete;

  const std::string& path() const { return path_; }

  // Listens on the socket (again, after Stop). False when it cannot.
  bool Start() {
    v1_ = std::make_unique<V1>(this);
    v1beta1_ = std::make_unique<V1beta1>(this);
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + path_, grpc::InsecureServerCredentials());
    b.RegisterService(v1_.get());
    b.RegisterService(v1beta1_.get());
    {
      absl::MutexLock l(&mu_);
      stopping_ = false;
    }
    if (health_v1alpha1_) {
      h1alpha1_ = std::make_unique<HealthV1alpha1>(this);
      b.RegisterService(h1alpha1_.get());
    }
    if (health_v1_) {
      h1_ = std::make_unique<HealthV1>(this);
      b.RegisterService(h1_.get());
    }
    server_ = b.BuildAndStart();
    return server_ != nullptr;
  }
  // Closes the socket and every connection; waits for running handlers.
  void Stop() {
    if (server_ == nullptr) return;
    {
      absl::MutexLock l(&mu_);
      stopping_ = true;
    }
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
    server_.reset();
  }

  void SetPrepare(PrepareFn fn) {
    absl::MutexLock l(&mu_);
    prepare_ = std::move(fn);
  }
  void SetUnprepare(UnprepareFn fn) {
    absl::MutexLock l(&mu_);
    unprepare_ = std::move(fn);
  }
  std::vector<FakeCall> Calls() {
    absl::MutexLock l(&mu_);
    return calls_;
  }
  // Which DRAResourceHealth versions Start serves (none by default).
  void EnableHealth(bool v1alpha1, bool v1) {
    health_v1alpha1_ = v1alpha1;
    health_v1_ = v1;
  }
  // The list every health stream sends now (and streams opened later first).
  void SetHealth(const ::v1alpha1::NodeWatchResourcesResponse& list) {
    absl::MutexLock l(&mu_);
    health_ = list;
    ++health_version_;
  }
  // Ends the health streams open now with `status`.
  void EndHealthStreams(grpc::Status status) {
    absl::MutexLock l(&mu_);
    end_status_ = std::move(status);
    ++end_generation_;
  }
  // Health streams opened so far, by full method name.
  std::vector<std::string> HealthCalls() {
    absl::MutexLock l(&mu_);
    return health_calls_;
  }
  bool WaitForHealthCalls(size_t n, absl::Duration timeout) {
    absl::MutexLock l(&mu_);
    auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return health_calls_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
  }

  std::vector<std::string> Methods() {
    std::vector<std::string> out;
    for (const FakeCall& c : Calls()) out.push_back(c.method);
    return out;
  }

 private:
  template <typename Req>
  void Record(const char* method, const Req& req) {
    FakeCall call{method, {}};
    for (const auto& c : req.claims()) call.claim_uids.push_back(c.uid());
    absl::MutexLock l(&mu_);
    calls_.push_back(std::move(call));
  }
  grpc::Status Prepare(const char* method, const drav1::NodePrepareResourcesRequest& req,
                       drav1::NodePrepareResourcesResponse* resp) {
    Record(method, req);
    PrepareFn fn;
    {
      absl::MutexLock l(&mu_);
      fn = prepare_;
    }
    return fn(req, resp);
  }
  grpc::Status Unprepare(const char* method, const drav1::NodeUnprepareResourcesRequest& req,
                         drav1::NodeUnprepareResourcesResponse* resp) {
    Record(method, req);
    UnprepareFn fn;
    {
      absl::MutexLock l(&mu_);
      fn = unprepare_;
    }
    return fn(req, resp);
  }
  // Runs `call` on the v1 form of a v1beta1 request and converts the answer.
  template <typename V1Req, typename V1Resp, typename Req, typename Resp, typename Call>
  static grpc::Status Converted(const Req* req, Resp* resp, Call call) {
    V1Req v1req;
    v1req.ParseFromString(req->SerializeAsString());
    V1Resp v1resp;
    grpc::Status s = call(v1req, &v1resp);
    resp->ParseFromString(v1resp.SerializeAsString());
    return s;
  }

  class V1 final : public drav1::DRAPlugin::Service {
   public:
    explicit V1(FakeDraDriver* d) : d_(d) {}
    grpc::Status NodePrepareResources(grpc::ServerContext*,
                                      const drav1::NodePrepareResourcesRequest* req,
                                      drav1::NodePrepareResourcesResponse* resp) override {
      return d_->Prepare(kV1Prepare, *req, resp);
    }
    grpc::Status NodeUnprepareResources(grpc::ServerContext*,
                                        const drav1::NodeUnprepareResourcesRequest* req,
                                        drav1::NodeUnprepareResourcesResponse* resp) override {
      return d_->Unprepare(kV1Unprepare, *req, resp);
    }

   private:
    FakeDraDriver* d_;
  };

  class V1beta1 final : public drav1beta1::DRAPlugin::Service {
   public:
    explicit V1beta1(FakeDraDriver* d) : d_(d) {}
    grpc::Status NodePrepareResources(grpc::ServerContext*,
                                      const drav1beta1::NodePrepareResourcesRequest* req,
                                      drav1beta1::NodePrepareResourcesResponse* resp) override {
      return Converted<drav1::NodePrepareResourcesRequest, drav1::NodePrepareResourcesResponse>(
          req, resp,
          [this](const auto& r, auto* out) { return d_->Prepare(kV1beta1Prepare, r, out); });
    }
    grpc::Status NodeUnprepareResources(grpc::ServerContext*,
                                        const drav1beta1::NodeUnprepareResourcesRequest* req,
                                        drav1beta1::NodeUnprepareResourcesResponse* resp) override {
      return Converted<drav1::NodeUnprepareResourcesRequest, drav1::NodeUnprepareResourcesResponse>(
          req, resp,
          [this](const auto& r, auto* out) { return d_->Unprepare(kV1beta1Unprepare, r, out); });
    }

   private:
    FakeDraDriver* d_;
  };

  // One health stream: the list each time it changes, until cancelled,
  // ended by the test or the driver stops.
  template <typename Response>
  grpc::Status Watch(const char* method, grpc::ServerContext* ctx,
                     grpc::ServerWriter<Response>* writer) {
    uint64_t sent = 0;
    uint64_t end_gen;
    {
      absl::MutexLock l(&mu_);
      health_calls_.push_back(method);
      end_gen = end_generation_;
    }
    for (;;) {
      Response resp;
      {
        absl::MutexLock l(&mu_);
        auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return health_version_ != sent || end_generation_ != end_gen || stopping_;
        };
        mu_.AwaitWithTimeout(absl::Condition(&changed), absl::Milliseconds(50));
        if (ctx->IsCancelled() || stopping_) return grpc::Status::CANCELLED;
        if (end_generation_ != end_gen) return end_status_;
        if (health_version_ == sent) continue;
        sent = health_version_;
        resp.ParseFromString(health_.SerializeAsString());
      }
      if (!writer->Write(resp)) return grpc::Status::CANCELLED;
    }
  }

  class HealthV1alpha1 final : public ::v1alpha1::DRAResourceHealth::Service {
   public:
    explicit HealthV1alpha1(FakeDraDriver* d) : d_(d) {}
    grpc::Status NodeWatchResources(
        grpc::ServerContext* ctx, const ::v1alpha1::NodeWatchResourcesRequest*,
        grpc::ServerWriter<::v1alpha1::NodeWatchResourcesResponse>* w) override {
      return d_->Watch(kV1alpha1Watch, ctx, w);
    }

   private:
    FakeDraDriver* d_;
  };
  class HealthV1 final : public ::v1::DRAResourceHealth::Service {
   public:
    explicit HealthV1(FakeDraDriver* d) : d_(d) {}
    grpc::Status NodeWatchResources(
        grpc::ServerContext* ctx, const ::v1::NodeWatchResourcesRequest*,
        grpc::ServerWriter<::v1::NodeWatchResourcesResponse>* w) override {
      return d_->Watch(kV1Watch, ctx, w);
    }

   private:
    FakeDraDriver* d_;
  };

  const std::string path_;
  bool health_v1alpha1_ = false;
  bool health_v1_ = false;
  std::unique_ptr<HealthV1alpha1> h1alpha1_;
  std::unique_ptr<HealthV1> h1_;
  std::unique_ptr<V1> v1_;
  std::unique_ptr<V1beta1> v1beta1_;
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex mu_;
  PrepareFn prepare_ ABSL_GUARDED_BY(mu_) = PrepareAll;
  UnprepareFn unprepare_ ABSL_GUARDED_BY(mu_) = UnprepareAll;
  std::vector<FakeCall> calls_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  ::v1alpha1::NodeWatchResourcesResponse health_ ABSL_GUARDED_BY(mu_);
  uint64_t health_version_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::Status end_status_ ABSL_GUARDED_BY(mu_);
  uint64_t end_generation_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> health_calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::dra::testutil

#endif  // DEVMGR_DRA_FAKE_DRIVER_TESTUTIL_H_
