// Hostile device plugins over real unix sockets against an in-process emulated kubelet
// (node::Node): garbage on the plugin socket, floods, an oversize device list, a stream that
// never sends its first list, registrations whose endpoint leaves the directory, hundreds of
// resources. For each: what the kubelet does (devmgr must do the same) and that devmgr stays
// responsive: a well-behaved plugin still registers and is served afterwards.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/synchronization/mutex.h"
#include "common/logging.h"
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tests/integration/test_env.h"
#include "tests/robustness/proc_stats.h"
#include "transport/grpc_plugin_client.h"
#include "transport/transport_testutil.h"

namespace devmgr::testutil {
namespace {

using transport::testutil::CallRegister;
using transport::testutil::Devices;
using transport::testutil::FakePlugin;
using transport::testutil::FakePluginConfig;

// A unix socket that accepts connections and answers every read with garbage bytes.
class GarbageServer {
 public:
  explicit GarbageServer(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", path.c_str());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~GarbageServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int accepted() const { return accepted_; }

 private:
  // Polls with a short timeout so that the destructor's stop_ is seen promptly.
  void Serve() {
    std::vector<int> conns;
    while (!stop_) {
      std::vector<pollfd> fds{{fd_, POLLIN, 0}};
      for (int c : conns) fds.push_back({c, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 50) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) {
          conns.push_back(c);
          ++accepted_;
        }
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        char buf[4096];
        static const char junk[] = "\x00\x00\x04\xff\xff\xffHTTP/1.1 400 garbage\r\n\r\n\x17\x03";
        if (::read(fds[i].fd, buf, sizeof(buf)) <= 0 ||
            ::write(fds[i].fd, junk, sizeof(junk)) < 0) {
          ::close(fds[i].fd);
          conns.erase(std::find(conns.begin(), conns.end(), fds[i].fd));
        }
      }
    }
    for (int c : conns) ::close(c);
  }

  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

class HostilePluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::SetConsoleOutput(false);
    node_ = MakeNode(dir_.path(), &clock_, "1.32", &changes_);
    ASSERT_OK(node_->Start());
  }
  void TearDown() override {
    if (node_ != nullptr) node_->Stop();
    log::SetConsoleOutput(true);
  }
  std::string Sock(const std::string& name) const { return dir_.path() + "/" + name; }
  // `service` served on Sock(name); nullptr when the server cannot start.
  std::unique_ptr<grpc::Server> Serve(grpc::Service* service, const std::string& name) const {
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + Sock(name), grpc::InsecureServerCredentials());
    b.RegisterService(service);
    return b.BuildAndStart();
  }
  grpc::Status Register(const std::string& endpoint, const std::string& resource) {
    return CallRegister(Sock("kubelet.sock"), "v1beta1", endpoint, resource);
  }
  bool WaitHealthy(const std::string& r, size_t n) {
    return changes_.WaitFor([&] { return Find(*node_, r).healthy.size() == n; }, absl::Seconds(60));
  }
  // Responsiveness: a well-behaved plugin registers and its devices are tracked.
  void ExpectGoodPluginServed(const std::string& resource = "example.com/good") {
    FakePluginConfig cfg;
    cfg.responses = {Devices(2)};
    auto good = std::make_unique<FakePlugin>(Sock("good.sock"), cfg);
    ASSERT_TRUE(good->Start());
    ASSERT_OK(Register("good.sock", resource));
    EXPECT_TRUE(WaitHealthy(resource, 2));
    good->Stop();
  }

  TempDir dir_;
  FakeClock clock_;
  ChangeSignal changes_;
  std::unique_ptr<node::Node> node_;
};

// The kubelet dials back and calls GetDevicePluginOptions inside Register: garbage on the
// socket fails that call, so Register fails (errFailedToDialDevicePlugin or the RPC error).
TEST_F(HostilePluginTest, GarbageOnThePluginSocketFailsRegister) {
  GarbageServer garbage(Sock("garbage.sock"));
  const absl::Time start = absl::Now();
  const grpc::Status s = Register("garbage.sock", "example.com/garbage");
  EXPECT_FALSE(s.ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(25)) << "bounded by the dial timeout";
  EXPECT_GE(garbage.accepted(), 1);
  EXPECT_EQ(Find(*node_, "example.com/garbage").resource_name, "<absent>");
  ExpectGoodPluginServed();
}

// 20,000 ListAndWatch messages as fast as gRPC takes them: every one replaces the device set
// (the kubelet's genericDeviceUpdateCallback); the last one wins, memory stays bounded.
TEST_F(HostilePluginTest, FloodOfListAndWatchMessages) {
  const ProcStats before = ProcStats::Now();
  FakePluginConfig cfg;
  for (int i = 0; i < 20000; ++i) cfg.responses.push_back(Devices(1 + i % 7));
  cfg.responses.push_back(Devices(8));  // no earlier message has 8
  FakePlugin flood(Sock("flood.sock"), cfg);
  ASSERT_TRUE(flood.Start());
  const absl::Time start = absl::Now();
  ASSERT_OK(Register("flood.sock", "example.com/flood"));
  // Each message rewrites the checkpoint (as the kubelet does): allow for a slow disk.
  const bool done = changes_.WaitFor(
      [&] { return Find(*node_, "example.com/flood").healthy.size() == 8; }, absl::Seconds(600));
  std::printf("flood: %s after %.1f s\n", done ? "last of 20,001 messages applied" : "not done",
              absl::ToDoubleSeconds(absl::Now() - start));
  ASSERT_TRUE(done);
  EXPECT_EQ(flood.CallCount("ListAndWatch"), 1);
  const ProcStats after = ProcStats::Now();
  std::printf("flood: RSS %ld -> %ld KiB\n", before.rss_kib, after.rss_kib);
  // Under ASan, freed memory sits in its quarantine (kRssMeaningful, proc_stats.h).
  if (kRssMeaningful) {
    EXPECT_LT(after.rss_kib - before.rss_kib, 256 * 1024);
  }
  ExpectGoodPluginServed();
}

// A device list larger than the 4 MiB receive limit: gRPC fails the stream with
// RESOURCE_EXHAUSTED, the kubelet treats the stream's end as a disconnect (the resource's
// devices become unhealthy, the endpoint enters its grace period).
TEST_F(HostilePluginTest, OversizeDeviceListEndsTheStream) {
  FakePluginConfig cfg;
  cfg.responses = {Devices(2)};
  v1beta1::ListAndWatchResponse big;
  for (int i = 0; i < 120000; ++i) {
    auto* d = big.add_devices();
    d->set_id("oversize-device-with-a-rather-long-identifier-" + std::to_string(i));
    d->set_health("Healthy");
  }
  ASSERT_GT(big.ByteSizeLong(), 4u * 1024 * 1024);
  cfg.responses.push_back(big);
  FakePlugin p(Sock("big.sock"), cfg);
  ASSERT_TRUE(p.Start());
  ASSERT_OK(Register("big.sock", "example.com/big"));
  ASSERT_TRUE(changes_.WaitFor(
      [&] {
        auto s = Find(*node_, "example.com/big");
        return s.stopped && s.healthy.empty();
      },
      absl::Seconds(60)));
  EXPECT_EQ(Find(*node_, "example.com/big").unhealthy.size(), 2u) << "the last good list";
  ExpectGoodPluginServed();
}

// A stream that never sends its first list: the kubelet waits forever (no deadline on
// ListAndWatch); the resource exists with no devices and nothing else is held up.
TEST_F(HostilePluginTest, StreamThatNeverSendsItsFirstList) {
  FakePluginConfig cfg;  // no responses, stream held open
  FakePlugin p(Sock("silent.sock"), cfg);
  ASSERT_TRUE(p.Start());
  ASSERT_OK(Register("silent.sock", "example.com/silent"));
  ASSERT_TRUE(changes_.WaitFor([&] { return p.CallCount("ListAndWatch") == 1; }));
  auto s = Find(*node_, "example.com/silent");
  EXPECT_TRUE(s.healthy.empty());
  ExpectGoodPluginServed();
  const absl::Time start = absl::Now();
  node_->Stop();  // cancels the held stream
  node_.reset();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_TRUE(p.WaitStreamCancelled());
}

// GetDevicePluginOptions that never answers: the kubelet calls it inside Register with no
// deadline, so its Register handler hangs as long as the plugin does (the plugin's own Register
// call runs into its deadline). Other plugins still register meanwhile; releasing the hung call
// lets the registration complete.
class HangingOptionsPlugin final : public v1beta1::DevicePlugin::Service {
 public:
  grpc::Status GetDevicePluginOptions(grpc::ServerContext* ctx, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions*) override {
    absl::MutexLock l(&mu_);
    ++calls_;
    while (!release_ && !ctx->IsCancelled()) {
      mu_.AwaitWithTimeout(absl::Condition(&release_), absl::Milliseconds(50));
    }
    return grpc::Status::OK;
  }
  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* w) override {
    w->Write(Devices(1));
    while (!ctx->IsCancelled()) absl::SleepFor(absl::Milliseconds(20));
    return grpc::Status::OK;
  }
  void Release() {
    absl::MutexLock l(&mu_);
    release_ = true;
  }
  int calls() {
    absl::MutexLock l(&mu_);
    return calls_;
  }

 private:
  absl::Mutex mu_;
  bool release_ ABSL_GUARDED_BY(mu_) = false;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST_F(HostilePluginTest, OptionsThatNeverAnswerHangOnlyThatRegistration) {
  HangingOptionsPlugin service;
  auto server = Serve(&service, "hang.sock");
  ASSERT_NE(server, nullptr);
  std::thread hung([&] {
    auto channel =
        grpc::CreateChannel("unix:" + Sock("kubelet.sock"), grpc::InsecureChannelCredentials());
    auto stub = v1beta1::Registration::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(3)));
    v1beta1::RegisterRequest req;
    req.set_version("v1beta1");
    req.set_endpoint("hang.sock");
    req.set_resource_name("example.com/hang");
    v1beta1::Empty resp;
    EXPECT_EQ(stub->Register(&ctx, req, &resp).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  });
  ASSERT_TRUE(changes_.WaitFor([&] { return service.calls() == 1; }, absl::Seconds(30)));
  ExpectGoodPluginServed();  // while the hung registration is still waiting
  hung.join();
  EXPECT_EQ(Find(*node_, "example.com/hang").resource_name, "<absent>");
  service.Release();  // the kubelet's handler goes on: the plugin is registered after all
  EXPECT_TRUE(WaitHealthy("example.com/hang", 1));
  node_->Stop();
  node_.reset();
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  server->Wait();
}

// serve reproduces the hang (no deadline, as in the kubelet) but says so while it waits: a
// warning naming the plugin and the RPC after ClientOptions::hang_notice_after, again each time
// the wait doubles, and none for a call that answers in time.
TEST_F(HostilePluginTest, CallWithoutDeadlineLogsThatItWaitsLikeTheKubelet) {
  HangingOptionsPlugin service;
  auto server = Serve(&service, "hang.sock");
  ASSERT_NE(server, nullptr);
  transport::ClientOptions opts;
  opts.hang_notice_after = absl::Milliseconds(100);
  auto client =
      std::make_shared<transport::GrpcPluginClient>("example.com/hang", Sock("hang.sock"), opts);
  ASSERT_OK(client->Dial());
  auto notices = [] {
    std::vector<std::string> out;
    for (const std::string& l : log::RecentLines(200)) {
      if (l.find("Device plugin has not answered the call yet") != std::string::npos) {
        out.push_back(l);
      }
    }
    return out;
  };
  const size_t before = notices().size();
  absl::StatusOr<v1beta1::DevicePluginOptions> result;
  std::thread call([&] { result = client->GetDevicePluginOptions(); });
  // Log lines have no event to await: poll the log (bounded).
  const absl::Time limit = absl::Now() + absl::Seconds(30);
  while (notices().size() < before + 2 && absl::Now() < limit)
    absl::SleepFor(absl::Milliseconds(20));
  const std::vector<std::string> seen = notices();
  ASSERT_GE(seen.size(), before + 2);
  EXPECT_THAT(seen[before],
              ::testing::HasSubstr("without a deadline and waits as long as the plugin"));
  EXPECT_THAT(seen[before], ::testing::HasSubstr("resource=\"example.com/hang\""));
  EXPECT_THAT(seen[before], ::testing::HasSubstr("rpc=\"GetDevicePluginOptions\""));
  EXPECT_THAT(seen[before], ::testing::HasSubstr("waited=\"100ms\""));
  EXPECT_THAT(seen[before + 1], ::testing::HasSubstr("waited=\"200ms\""));
  EXPECT_EQ(service.calls(), 1);
  service.Release();  // the plugin answers at last: the call returns its answer
  call.join();
  EXPECT_OK(result);
  const size_t after = notices().size();
  EXPECT_OK(client->GetDevicePluginOptions());  // answers at once: no notice
  EXPECT_EQ(notices().size(), after);
  client->Close();
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  server->Wait();
}

// filepath.Join(dir, endpoint): "../x.sock" leaves the directory and the kubelet dials it
// there. devmgr does the same (and warns).
TEST_F(HostilePluginTest, EndpointOutsideTheDirectoryIsJoinedAndDialled) {
  TempDir outside;
  FakePluginConfig cfg;
  cfg.responses = {Devices(1)};
  const std::string rel =
      "../" + std::filesystem::path(outside.path()).filename().string() + "/escaped.sock";
  FakePlugin p(outside.path() + "/escaped.sock", cfg);
  ASSERT_TRUE(p.Start());
  ASSERT_OK(Register(rel, "example.com/escaped"));
  ASSERT_TRUE(WaitHealthy("example.com/escaped", 1));
  EXPECT_EQ(Find(*node_, "example.com/escaped").endpoint_socket, outside.path() + "/escaped.sock");
  // A name of a path that does not exist fails the dial, bounded by the dial timeout.
  EXPECT_FALSE(Register("../../no/such/dir/x.sock", "example.com/nowhere").ok());
  ExpectGoodPluginServed();
}

// One plugin process serving a thousand resources, one socket each (a single gRPC server
// listening on every socket; each ListAndWatch sends four devices and stays open). All are
// registered concurrently and tracked; the node still serves a newcomer and stops promptly.
class ManySocketsPlugin final : public v1beta1::DevicePlugin::Service {
 public:
  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions*) override {
    return grpc::Status::OK;
  }
  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* w) override {
    w->Write(Devices(4));
    absl::MutexLock l(&mu_);
    while (!done_ && !ctx->IsCancelled()) {
      mu_.AwaitWithTimeout(absl::Condition(&done_), absl::Milliseconds(50));
    }
    return grpc::Status::OK;
  }
  void Finish() {
    absl::MutexLock l(&mu_);
    done_ = true;
  }

 private:
  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

TEST_F(HostilePluginTest, AThousandResources) {
  constexpr int kResources = 1000;
  // The kubelet's own dial window (10 s): with a thousand sockets and two thousand threads on
  // a loaded 2-core machine a dial can take longer than the tests' 2 s, and it failed there
  // with "failed to dial device plugin: context deadline exceeded" for 3 of 1,000.
  node_->Stop();
  node_ = MakeNode(dir_.path(), &clock_, "1.32", &changes_, "", 4 * 1024 * 1024,
                   transport::kDefaultDialTimeout);
  ASSERT_OK(node_->Start());
  const ProcStats before = ProcStats::Now();
  ManySocketsPlugin service;
  grpc::ServerBuilder b;
  for (int i = 0; i < kResources; ++i) {
    b.AddListeningPort("unix:" + Sock("r" + std::to_string(i) + ".sock"),
                       grpc::InsecureServerCredentials());
  }
  b.RegisterService(&service);
  auto server = b.BuildAndStart();
  ASSERT_NE(server, nullptr);
  // On every way out, a failed assertion included: the plugin's streams end and the server
  // shuts down before it is destroyed (its destructor waits for the open ListAndWatch streams,
  // which the node's stop would end only after this function returns: a failure here hung the
  // test to its 900 s timeout).
  absl::Cleanup stop_plugin = [&] {
    service.Finish();
    server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    server->Wait();
  };
  std::vector<std::thread> regs;
  std::atomic<int> ok{0};
  absl::Mutex failures_mu;
  std::vector<std::string> failures;  // the first few failed registrations, for the report
  const absl::Time start = absl::Now();
  for (int t = 0; t < 8; ++t) {
    regs.emplace_back([&, t] {
      for (int i = t; i < kResources; i += 8) {
        // A plugin whose registration fails registers again, as real plugins do (restarted by
        // their DaemonSet or retrying): on a 2-core machine under a build's load, with the
        // test's own two thousand threads, the kubelet's 10 s dial of the endpoint can still
        // run out for a few of the thousand ("failed to dial device plugin: context deadline
        // exceeded"). Three tries each.
        grpc::Status s;
        for (int attempt = 0; attempt < 3; ++attempt) {
          s = Register("r" + std::to_string(i) + ".sock", "example.com/r" + std::to_string(i));
          if (s.ok()) break;
        }
        if (s.ok()) {
          ++ok;
        } else {
          absl::MutexLock l(&failures_mu);
          if (failures.size() < 5) {
            failures.push_back("r" + std::to_string(i) + ": " + s.error_message());
          }
        }
      }
    });
  }
  for (auto& th : regs) th.join();
  // A failed registration leaves its resource out: report it rather than wait for it.
  ASSERT_EQ(ok.load(), kResources) << ::testing::PrintToString(failures);
  ASSERT_TRUE(changes_.WaitFor(
      [&] {
        int full = 0;
        for (const auto& r : node_->manager().Snapshot()) full += r.healthy.size() == 4;
        return full == kResources;
      },
      absl::Seconds(120)));
  const ProcStats after = ProcStats::Now();
  std::printf(
      "%d resources registered and tracked in %.1f s; threads %ld -> %ld, RSS %ld -> %ld KiB\n",
      kResources, absl::ToDoubleSeconds(absl::Now() - start), before.threads, after.threads,
      before.rss_kib, after.rss_kib);
  ExpectGoodPluginServed();
  const absl::Time stop = absl::Now();
  node_->Stop();
  node_.reset();
  EXPECT_LT(absl::Now() - stop, absl::Seconds(60));
}

}  // namespace
}  // namespace devmgr::testutil
