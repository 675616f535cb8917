#include "transport/registration_server.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/logging.h"
#include "common/status_testutil.h"
#include "gtest/gtest.h"
#include "transport/transport_testutil.h"

namespace devmgr::transport {
namespace {

using testutil::CallRegister;
using testutil::FakeClientHandler;
using testutil::FakePlugin;
using testutil::FakePluginConfig;

Profile P(const std::string& v) { return *ProfileForVersion(v); }

class RegistrationServerTest : public testing::Test {
 protected:
  void StartServer(const std::string& profile = "1.32", int max_recv = kDefaultMaxRecvMsgSize) {
    RegistrationServerOptions o;
    o.plugin_dir = dir_.path();
    o.profile = P(profile);
    // Short enough for the tests of a failing dial (which wait it out), long
    // enough that a dial that should succeed does on a loaded machine (the
    // sanitizer runs share two cores); the kubelet's is 10 s.
    o.dial_timeout = absl::Seconds(2);
    o.max_recv_msg_size = max_recv;
    auto s = RegistrationServer::Create(o, &handler_);
    ASSERT_OK(s);
    server_ = std::move(*s);
    ASSERT_OK(server_->Start());
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Stop();
  }
  std::unique_ptr<FakePlugin> StartPlugin(const std::string& name, FakePluginConfig cfg = {}) {
    auto p = std::make_unique<FakePlugin>(dir_.Join(name), std::move(cfg));
    EXPECT_TRUE(p->Start());
    return p;
  }
  grpc::Status Register(const std::string& endpoint, const std::string& resource,
                        const std::string& version = "v1beta1") {
    return CallRegister(server_->SocketPath(), version, endpoint, resource);
  }

  testutil::TempDir dir_;
  FakeClientHandler handler_;
  std::unique_ptr<RegistrationServer> server_;
};

TEST(RegistrationServerCreateTest, RejectsARelativeDirectory) {
  FakeClientHandler h;
  RegistrationServerOptions o;
  o.plugin_dir = "device-plugins";
  EXPECT_EQ(RegistrationServer::Create(o, &h).status().message(),
            "bad socketPath, must be an absolute path: device-plugins/kubelet.sock");
  o.plugin_dir = "";
  EXPECT_EQ(RegistrationServer::Create(o, &h).status().message(),
            "bad socketPath, must be an absolute path: kubelet.sock");
}

TEST_F(RegistrationServerTest, RejectsAnUnsupportedVersionWithCodeUnknown) {
  StartServer();
  const grpc::Status st = Register("p.sock", "example.com/gpu", "v1alpha");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(st.error_message(),
            "requested API version \"v1alpha\" is not supported by kubelet. Supported version "
            "is [\"v1beta1\"]");
  EXPECT_EQ(server_->RegistrationCount("example.com/gpu"), 1);
}

TEST_F(RegistrationServerTest, RejectsAnInvalidResourceNameButCountsIt) {
  StartServer();
  for (const std::string name : {"gpu", "kubernetes.io/gpu", "example.com/a/b"}) {
    const grpc::Status st = Register("p.sock", name);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNKNOWN);
    EXPECT_EQ(st.error_message(), "the ResourceName \"" + name + "\" is invalid");
    EXPECT_EQ(server_->RegistrationCount(name), 1);
  }
  EXPECT_EQ(handler_.Events().size(), 0u);
}

TEST_F(RegistrationServerTest, DialBackFailure) {
  StartServer();
  const grpc::Status st = Register("nobody.sock", "example.com/gpu");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(st.error_message(), "failed to dial device plugin: context deadline exceeded");
  EXPECT_EQ(handler_.Events().size(), 0u);
  EXPECT_EQ(server_->TrackedClientCount(), 0u);
}

TEST_F(RegistrationServerTest, OptionsFailureFailsTheRegistration) {
  StartServer();
  FakePluginConfig cfg;
  cfg.options_status = grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "not here");
  auto plugin = StartPlugin("p.sock", cfg);
  const grpc::Status st = Register("p.sock", "example.com/gpu");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(st.error_message(),
            "failed to get device plugin options: rpc error: code = Unimplemented desc = not here");
  EXPECT_EQ(handler_.Count("connected"), 0);
  EXPECT_EQ(server_->TrackedClientCount(), 0u);
  EXPECT_EQ(plugin->Calls(), std::vector<std::string>{"GetDevicePluginOptions"});
}

TEST_F(RegistrationServerTest, RegistersAndStreamsDevices) {
  StartServer();
  FakePluginConfig cfg;
  cfg.responses = {testutil::Devices(2)};
  auto plugin = StartPlugin("p.sock", cfg);
  ASSERT_OK(Register("p.sock", "example.com/gpu"));
  ASSERT_TRUE(handler_.WaitFor("list", 1));
  EXPECT_EQ(handler_.Last("connected").socket, dir_.Join("p.sock"));
  EXPECT_EQ(handler_.Last("list").devices, 2);
  EXPECT_EQ(server_->TrackedClientCount(), 1u);
  EXPECT_EQ(server_->RegistrationCount("example.com/gpu"), 1);

  // Stop disconnects the client and cancels its stream.
  server_->Stop();
  EXPECT_EQ(handler_.Count("disconnected"), 1);
  EXPECT_TRUE(plugin->WaitStreamCancelled());
  EXPECT_FALSE(std::filesystem::exists(dir_.Join("kubelet.sock")));
  server_->Stop();  // idempotent
  EXPECT_EQ(handler_.Count("disconnected"), 1);
  EXPECT_EQ(plugin->Calls(), (std::vector<std::string>{"GetDevicePluginOptions", "ListAndWatch"}));
}

TEST_F(RegistrationServerTest, EndpointIsJoinedLikeGo) {
  StartServer();
  std::filesystem::create_directory(dir_.Join("sub"));
  auto plugin = StartPlugin("sub/p.sock");
  ASSERT_OK(Register("sub/../sub/./p.sock", "example.com/gpu"));
  EXPECT_EQ(handler_.Last("connected").socket, dir_.Join("sub/p.sock"));
}

TEST_F(RegistrationServerTest, ListAndWatchFailingAtOnceDisconnectsAndIsNeverRetried) {
  StartServer();
  FakePluginConfig cfg;
  cfg.hold_stream = false;
  cfg.list_and_watch_status = grpc::Status(grpc::StatusCode::INTERNAL, "no devices for you");
  auto plugin = StartPlugin("p.sock", cfg);
  ASSERT_OK(Register("p.sock", "example.com/gpu"));
  ASSERT_TRUE(handler_.WaitFor("disconnected", 1));
  EXPECT_EQ(handler_.Count("list"), 0);
  EXPECT_EQ(server_->TrackedClientCount(), 0u);
  server_->Stop();
  EXPECT_EQ(plugin->Calls(), (std::vector<std::string>{"GetDevicePluginOptions", "ListAndWatch"}));
  EXPECT_EQ(handler_.Count("disconnected"), 1);
}

// p1 registers, p2 re-registers the same resource on another socket, then
// p1's stream ends.
class ReRegistrationTest : public RegistrationServerTest {
 protected:
  void Run(const std::string& profile) {
    StartServer(profile);
    FakePluginConfig cfg;
    cfg.responses = {testutil::Devices(2)};
    p1_ = StartPlugin("p1.sock", cfg);
    ASSERT_OK(Register("p1.sock", "example.com/gpu"));
    ASSERT_TRUE(handler_.WaitFor("list", 1));
    c1_ = handler_.Last("connected").client;
    p2_ = StartPlugin("p2.sock", cfg);
    ASSERT_OK(Register("p2.sock", "example.com/gpu"));
    ASSERT_TRUE(handler_.WaitFor("list", 2));
    c2_ = handler_.Last("connected").client;
    ASSERT_NE(c1_, c2_);
    p1_->EndStreams();
    ASSERT_TRUE(handler_.WaitFor("disconnected", 1));
  }
  std::unique_ptr<FakePlugin> p1_, p2_;
  manager::PluginClient* c1_ = nullptr;
  manager::PluginClient* c2_ = nullptr;
};

TEST_F(ReRegistrationTest, Profile132DisconnectsTheNewClient_Kubernetes121994) {
  Run("1.32");
  const auto ev = handler_.Last("disconnected");
  EXPECT_EQ(ev.client, c2_);
  EXPECT_EQ(ev.socket, dir_.Join("p2.sock"));
  // The new plugin's stream is cancelled by the close of its connection.
  EXPECT_TRUE(p2_->WaitStreamCancelled());
  EXPECT_EQ(server_->TrackedClientCount(), 0u);
  server_->Stop();
  EXPECT_EQ(handler_.Count("disconnected"), 1);
}

TEST_F(ReRegistrationTest, Profile136StillDisconnectsTheNewClient_Kubernetes121994) {
  Run("1.36");
  EXPECT_EQ(handler_.Last("disconnected").client, c2_);
  EXPECT_TRUE(p2_->WaitStreamCancelled());
  EXPECT_EQ(server_->TrackedClientCount(), 0u);
}

TEST_F(ReRegistrationTest, Profile137DisconnectsOnlyTheEndedStreamsClient) {
  Run("1.37");
  EXPECT_EQ(handler_.Last("disconnected").client, c1_);
  EXPECT_EQ(server_->TrackedClientCount(), 1u);
  EXPECT_FALSE(p2_->WaitStreamCancelled(absl::Milliseconds(200)));
  server_->Stop();
  EXPECT_EQ(handler_.Count("disconnected"), 2);
  EXPECT_EQ(handler_.Last("disconnected").client, c2_);
}

TEST_F(RegistrationServerTest, FailedReRegistrationUntracksTheOldClient) {
  StartServer("1.31");
  auto p1 = StartPlugin("p1.sock");
  ASSERT_OK(Register("p1.sock", "example.com/gpu"));
  ASSERT_FALSE(Register("gone.sock", "example.com/gpu").ok());
  EXPECT_EQ(server_->TrackedClientCount(), 0u);
  // The old stream's end then disconnects nothing.
  p1->EndStreams();
  absl::SleepFor(absl::Milliseconds(200));  // nothing to await: asserting an absence
  EXPECT_EQ(handler_.Count("disconnected"), 0);
}

TEST_F(RegistrationServerTest, Profile137FailedRegisterUntracksOnlyItsSocket) {
  StartServer("1.37");
  auto p1 = StartPlugin("p1.sock");
  ASSERT_OK(Register("p1.sock", "example.com/gpu"));
  auto p2 = StartPlugin("p2.sock");
  ASSERT_OK(Register("p2.sock", "example.com/gpu"));
  EXPECT_EQ(server_->TrackedClientCount(), 2u);
  // A failed dial on a third socket forgets nothing else.
  ASSERT_FALSE(Register("gone.sock", "example.com/gpu").ok());
  EXPECT_EQ(server_->TrackedClientCount(), 2u);
  // The handler refusing p1's socket again (as the 1.37 manager does for a
  // connected pair) untracks the client running there.
  handler_.SetConnectError(absl::UnknownError("device plugin already connected: x"));
  EXPECT_EQ(Register("p1.sock", "example.com/gpu").error_message(),
            "device plugin already connected: x");
  EXPECT_EQ(server_->TrackedClientCount(), 1u);
}

TEST_F(RegistrationServerTest, HealthCheckBeforeStartPerVersion) {
  // The 1.32.11 and 1.33.7 backports of #135153 (k8s.io/kubernetes v1.32.13,
  // v1.33.13 pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go, Check).
  for (const char* v : {"1.31", "1.32", "1.32.10", "1.32.11", "1.33.6", "1.33.7", "1.34", "1.34.3",
                        "1.35", "1.37"}) {
    SCOPED_TRACE(v);
    RegistrationServerOptions o;
    o.plugin_dir = dir_.path();
    o.profile = P(v);
    auto s = RegistrationServer::Create(o, &handler_);
    ASSERT_OK(s);
    const std::string ver = v;
    const bool fails = ver == "1.32" || ver == "1.32.10" || ver == "1.33.6" || ver == "1.34";
    EXPECT_EQ((*s)->HealthCheck().ok(), !fails);
    if (fails) {
      EXPECT_EQ((*s)->HealthCheck().message(), kHealthzError);
    }
  }
}

TEST_F(RegistrationServerTest, OversizeListEndsTheStreamAndIsLogged) {
  StartServer();
  FakePluginConfig cfg;
  v1beta1::ListAndWatchResponse big;
  auto* d = big.add_devices();
  d->set_id(std::string(5000000, 'x'));
  d->set_health("Healthy");
  cfg.responses = {big};
  auto plugin = StartPlugin("p.sock", cfg);
  ASSERT_OK(Register("p.sock", "example.com/gpu"));
  ASSERT_TRUE(handler_.WaitFor("disconnected", 1));
  EXPECT_EQ(handler_.Count("list"), 0);
  const std::string size = std::to_string(big.ByteSizeLong());
  bool logged = false;
  for (const std::string& line : log::RecentLines(20)) {
    if (line.find("Received message larger than max (" + size + " vs. 4194304)") !=
            std::string::npos &&
        line.find("messageSize=" + size) != std::string::npos) {
      logged = true;
    }
  }
  EXPECT_TRUE(logged);
}

TEST_F(RegistrationServerTest, ALargerReceiveLimitAcceptsTheSameList) {
  StartServer("1.32", 8 * 1024 * 1024);
  FakePluginConfig cfg;
  v1beta1::ListAndWatchResponse big;
  big.add_devices()->set_id(std::string(5000000, 'x'));
  cfg.responses = {big};
  auto plugin = StartPlugin("p.sock", cfg);
  ASSERT_OK(Register("p.sock", "example.com/gpu"));
  ASSERT_TRUE(handler_.WaitFor("list", 1));
}

TEST_F(RegistrationServerTest, Profile134RejectsInvalidUtf8InRegisterBeforeTheHandler) {
  StartServer("1.34");
  auto plugin = StartPlugin("p.sock");
  const grpc::Status st = Register("p.sock", "example.com/\xff\xfe");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(st.error_message(),
            "grpc: error unmarshalling request: string field contains invalid UTF-8");
  EXPECT_TRUE(server_->RegistrationCounts().empty());  // the handler never ran
  EXPECT_EQ(Register("\xff.sock", "example.com/gpu").error_message(), st.error_message());
  EXPECT_EQ(Register("p.sock", "example.com/gpu", "v1beta1\xff").error_message(),
            st.error_message());
  EXPECT_TRUE(server_->RegistrationCounts().empty());
  EXPECT_EQ(plugin->CallCount("GetDevicePluginOptions"), 0);
}

TEST_F(RegistrationServerTest, Profile133PassesInvalidUtf8InRegisterToTheHandler) {
  StartServer("1.33");
  const grpc::Status st = Register("p.sock", "example.com/\xff\xfe");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNKNOWN);  // the handler's validation
  EXPECT_EQ(st.error_message(), "the ResourceName \"example.com/\\xff\\xfe\" is invalid");
  EXPECT_EQ(server_->RegistrationCount("example.com/\xff\xfe"), 1);
}

TEST_F(RegistrationServerTest, Profile134EndsAStreamWithAnInvalidDeviceId) {
  StartServer("1.34+");
  FakePluginConfig cfg;
  v1beta1::ListAndWatchResponse r;
  r.add_devices()->set_id("\xff\xfe");
  cfg.responses = {testutil::Devices(2), r};
  auto plugin = StartPlugin("p.sock", cfg);
  ASSERT_OK(Register("p.sock", "example.com/gpu"));
  ASSERT_TRUE(handler_.WaitFor("disconnected", 1));
  EXPECT_EQ(handler_.Count("list"), 1);
  EXPECT_TRUE(plugin->WaitStreamCancelled());
  EXPECT_EQ(server_->TrackedClientCount(), 0u);
}

class StartCleanupTest : public RegistrationServerTest {
 protected:
  void SetUp() override {
    std::filesystem::create_directory(dir_.Join("sub"));
    std::ofstream(dir_.Join("stray")) << "x";
    std::ofstream(dir_.Join("kubelet_internal_checkpoint")) << "{}";
  }
};

TEST_F(StartCleanupTest, Profile132RemovesFilesButKeepsDirectoriesAndTheCheckpoint) {
  StartServer("1.32");
  EXPECT_FALSE(std::filesystem::exists(dir_.Join("stray")));
  EXPECT_TRUE(std::filesystem::exists(dir_.Join("sub")));
  EXPECT_TRUE(std::filesystem::exists(dir_.Join("kubelet_internal_checkpoint")));
  EXPECT_TRUE(std::filesystem::is_socket(dir_.Join("kubelet.sock")));
}

TEST_F(StartCleanupTest, Profile133KeepsRegularFiles) {
  StartServer("1.33");
  EXPECT_TRUE(std::filesystem::exists(dir_.Join("stray")));
  EXPECT_TRUE(std::filesystem::exists(dir_.Join("sub")));
}

TEST(RegistrationServerStartTest, CreatesTheDirectoryWithMode0750) {
  testutil::TempDir tmp;
  FakeClientHandler h;
  RegistrationServerOptions o;
  o.plugin_dir = tmp.Join("a/b");
  auto s = RegistrationServer::Create(o, &h);
  ASSERT_OK(s);
  ASSERT_OK((*s)->Start());
  struct stat st {};
  ASSERT_EQ(::stat(o.plugin_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777 & ~0750, 0u);
  (*s)->Stop();
}

TEST(RegistrationServerHealthzTest, PerProfile) {
  testutil::TempDir tmp;
  FakeClientHandler h;
  RegistrationServerOptions o;
  o.plugin_dir = tmp.path();
  o.profile = P("1.32");
  auto s = RegistrationServer::Create(o, &h);
  ASSERT_OK(s);
  EXPECT_EQ((*s)->HealthCheck().message(),
            "device plugin registration gRPC server failed and no device plugins can register");
  EXPECT_FALSE((*s)->Healthy());
  ASSERT_OK((*s)->Start());
  EXPECT_TRUE((*s)->Healthy());
  (*s)->Stop();
  EXPECT_TRUE((*s)->Healthy());  // "healthy while shutting down"

  o.profile = P("1.31");
  auto old = RegistrationServer::Create(o, &h);
  ASSERT_OK(old);
  EXPECT_TRUE((*old)->Healthy());  // no checker before 1.32
}

TEST(RegistrationServerStopTest, StopCancelsARegistrationStillDialling) {
  testutil::TempDir tmp;
  FakeClientHandler h;
  RegistrationServerOptions o;
  o.plugin_dir = tmp.path();  // dial timeout stays the kubelet's 10 s
  auto s = RegistrationServer::Create(o, &h);
  ASSERT_OK(s);
  ASSERT_OK((*s)->Start());
  grpc::Status st;
  std::thread reg([&] { st = CallRegister((*s)->SocketPath(), "v1beta1", "nobody.sock", "a/b"); });
  const absl::Time give_up = absl::Now() + absl::Seconds(5);
  while ((*s)->TrackedClientCount() == 0 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(5));  // polling a state without an event
  }
  ASSERT_EQ((*s)->TrackedClientCount(), 1u);
  const absl::Time start = absl::Now();
  (*s)->Stop();
  reg.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(h.Count("connected"), 0);
}

TEST(RegistrationServerStopTest, StopWithoutStartIsSafe) {
  testutil::TempDir tmp;
  FakeClientHandler h;
  RegistrationServerOptions o;
  o.plugin_dir = tmp.path();
  auto s = RegistrationServer::Create(o, &h);
  ASSERT_OK(s);
  (*s)->Stop();
  (*s)->Stop();
  EXPECT_EQ((*s)->Start().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace devmgr::transport
