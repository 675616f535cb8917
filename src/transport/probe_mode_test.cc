// Probe mode: the plugin manager with the registration server as its
// "DevicePlugin" handler, over real unix sockets, as the node wires them.
#include <filesystem>
#include <fstream>

#include "common/status_testutil.h"
#include "gtest/gtest.h"
#include "pluginmanager/plugin_manager.h"
#include "transport/registration_client.h"
#include "transport/registration_server.h"
#include "transport/transport_testutil.h"

namespace devmgr::transport {
namespace {

using testutil::FakeClientHandler;
using testutil::FakePlugin;
using testutil::FakePluginConfig;

// The node's probe-mode wiring (node::Node::Start).
struct ProbeNode {
  struct Options {
    std::string plugin_dir;
    std::string registry_dir;
    Profile profile = DefaultProfile();
    // The device-plugin socket's dial (inside Register).
    absl::Duration dial_timeout = absl::Seconds(10);
    // The registration socket's dial: it must not time out on a loaded
    // machine, whatever the test does to the other.
    absl::Duration registration_dial_timeout = absl::Seconds(10);
    absl::Duration initial_retry_backoff;
  };
  absl::Status Start(const Options& o, manager::ClientHandler* handler) {
    RegistrationServerOptions so;
    so.plugin_dir = o.plugin_dir;
    so.profile = o.profile;
    so.dial_timeout = o.dial_timeout;
    absl::StatusOr<std::unique_ptr<RegistrationServer>> s = RegistrationServer::Create(so, handler);
    if (!s.ok()) return s.status();
    server = std::move(*s);
    pluginmanager::PluginManagerOptions po;
    po.dir = o.registry_dir;
    po.period = absl::Milliseconds(20);
    po.operations.dial_timeout = o.registration_dial_timeout;
    po.operations.initial_retry_backoff = o.initial_retry_backoff;
    po.operations.deregister_failed_registrations = o.profile.watcher_failure_deregisters;
    plugins = std::make_unique<pluginmanager::PluginManager>(po, DialRegistration);
    if (absl::Status st = plugins->AddHandler(pluginmanager::kDevicePluginType, server.get());
        !st.ok()) {
      return st;
    }
    if (absl::Status st = server->Start(); !st.ok()) return st;
    return plugins->Start();
  }
  void Stop() {
    if (server != nullptr) server->Stop();
    if (plugins != nullptr) plugins->Stop();
  }
  ~ProbeNode() { Stop(); }

  std::unique_ptr<RegistrationServer> server;
  std::unique_ptr<pluginmanager::PluginManager> plugins;
};

class PluginWatcherTest : public testing::Test {
 protected:
  void SetUp() override {
    ProbeNode::Options o;
    o.plugin_dir = dp_dir_.path();
    o.registry_dir = reg_dir_.Join("plugins_registry");
    o.dial_timeout = dial_timeout_;
    o.initial_retry_backoff = absl::Seconds(30);  // one attempt per test
    ASSERT_OK(node_.Start(o, &handler_));
    server_ = node_.server.get();
    ASSERT_TRUE(std::filesystem::is_directory(o.registry_dir));
  }
  void TearDown() override { node_.Stop(); }
  std::string RegPath(const std::string& name) { return reg_dir_.Join("plugins_registry/" + name); }
  static FakePluginConfig Probe(const std::string& name, const std::string& endpoint,
                                std::vector<std::string> versions = {"v1beta1"}) {
    FakePluginConfig cfg;
    cfg.serve_registration = true;
    cfg.info.set_type("DevicePlugin");
    cfg.info.set_name(name);
    cfg.info.set_endpoint(endpoint);
    for (const auto& v : versions) cfg.info.add_supported_versions(v);
    cfg.responses = {testutil::Devices(3)};
    return cfg;
  }

  // Each test gets one registration attempt, so a dial that should succeed
  // must not time out on a loaded machine; only the test of a failing dial
  // waits for the timeout (PluginWatcherDialFailureTest).
  absl::Duration dial_timeout_ = absl::Seconds(10);
  testutil::TempDir dp_dir_;
  testutil::TempDir reg_dir_;
  FakeClientHandler handler_;
  ProbeNode node_;
  RegistrationServer* server_ = nullptr;
};

TEST_F(PluginWatcherTest, RegistersASocketServingBothServicesAndDeregistersOnRemoval) {
  // Empty endpoint: the watched socket itself is the DevicePlugin endpoint.
  FakePlugin plugin(RegPath("example.com-gpu.sock"), Probe("example.com/gpu", ""));
  ASSERT_TRUE(plugin.Start());
  ASSERT_TRUE(plugin.WaitNotification());
  const auto n = plugin.Notifications();
  ASSERT_EQ(n.size(), 1u);
  EXPECT_TRUE(n[0].plugin_registered());
  EXPECT_EQ(n[0].error(), "");
  ASSERT_TRUE(handler_.WaitFor("list", 1));
  EXPECT_EQ(handler_.Last("connected").socket, RegPath("example.com-gpu.sock"));
  EXPECT_EQ(handler_.Last("list").devices, 3);
  EXPECT_EQ(server_->RegistrationCount("example.com/gpu"), 0);  // not counted in probe mode
  EXPECT_EQ(plugin.Calls()[0], "GetInfo");

  std::filesystem::remove(RegPath("example.com-gpu.sock"));
  ASSERT_TRUE(handler_.WaitFor("disconnected", 1));
  EXPECT_EQ(handler_.Last("disconnected").resource, "example.com/gpu");
}

TEST_F(PluginWatcherTest, UsesAnAbsoluteEndpointAsIs) {
  FakePlugin device(dp_dir_.Join("dp.sock"), Probe("example.com/gpu", ""));
  ASSERT_TRUE(device.Start());
  FakePlugin reg(RegPath("sub/reg.sock"), Probe("example.com/gpu", dp_dir_.Join("dp.sock")));
  std::filesystem::create_directories(reg_dir_.Join("plugins_registry/sub"));
  ASSERT_TRUE(reg.Start());
  ASSERT_TRUE(reg.WaitNotification());
  EXPECT_TRUE(reg.Notifications()[0].plugin_registered());
  ASSERT_TRUE(handler_.WaitFor("list", 1));
  EXPECT_EQ(handler_.Last("connected").socket, dp_dir_.Join("dp.sock"));
}

TEST_F(PluginWatcherTest, ValidationFailureOfTheVersions) {
  FakePlugin plugin(RegPath("p.sock"), Probe("example.com/gpu", "", {"v1alpha", "v1beta2"}));
  ASSERT_TRUE(plugin.Start());
  ASSERT_TRUE(plugin.WaitNotification());
  const auto n = plugin.Notifications()[0];
  EXPECT_FALSE(n.plugin_registered());
  EXPECT_EQ(n.error(),
            "RegisterPlugin error -- plugin validation failed with err: manager version, v1beta1, "
            "is not among plugin supported versions [v1alpha v1beta2]");
  EXPECT_EQ(handler_.Count("connected"), 0);
}

TEST_F(PluginWatcherTest, ValidationFailureOfTheName) {
  FakePlugin plugin(RegPath("p.sock"), Probe("gpu", ""));
  ASSERT_TRUE(plugin.Start());
  ASSERT_TRUE(plugin.WaitNotification());
  EXPECT_EQ(plugin.Notifications()[0].error(),
            "RegisterPlugin error -- plugin validation failed with err: invalid name of device "
            "plugin socket: the ResourceName \"gpu\" is invalid");
}

// A plugin of a type that has no handler is refused with the kubelet's
// message, sent to it through NotifyRegistrationStatus.
TEST_F(PluginWatcherTest, RefusesATypeWithoutAHandler) {
  FakePluginConfig cfg = Probe("example.com/driver", "");
  cfg.info.set_type("DRAPlugin");
  FakePlugin plugin(RegPath("driver-reg.sock"), cfg);
  ASSERT_TRUE(plugin.Start());
  ASSERT_TRUE(plugin.WaitNotification());
  const auto n = plugin.Notifications()[0];
  EXPECT_FALSE(n.plugin_registered());
  EXPECT_EQ(n.error(),
            "RegisterPlugin error -- no handler registered for plugin type: DRAPlugin at socket " +
                RegPath("driver-reg.sock"));
  EXPECT_EQ(plugin.Calls()[0], "GetInfo");
  EXPECT_EQ(handler_.Count("connected"), 0);
  EXPECT_TRUE(node_.plugins->RegisteredSockets().empty());
}

// The registration socket's dial error, as the kubelet's dial words it (the
// operation logs it after "dial failed at socket <path>, err: ").
TEST(DialRegistrationTest, ADeadSocketFailsWithTheKubeletsText) {
  testutil::TempDir dir;
  const std::string path = dir.Join("nobody.sock");
  auto client = DialRegistration(path, absl::Milliseconds(100), [] { return false; });
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().message(),
            "failed to dial socket " + path + ", err: context deadline exceeded");
}

class PluginWatcherDialFailureTest : public PluginWatcherTest {
 protected:
  PluginWatcherDialFailureTest() { dial_timeout_ = absl::Milliseconds(300); }
};

TEST_F(PluginWatcherDialFailureTest, RegistrationFailureIsNotified) {
  FakePlugin plugin(RegPath("p.sock"), Probe("example.com/gpu", dp_dir_.Join("nobody.sock")));
  ASSERT_TRUE(plugin.Start());
  ASSERT_TRUE(plugin.WaitNotification());
  const auto n = plugin.Notifications()[0];
  EXPECT_FALSE(n.plugin_registered());
  EXPECT_EQ(n.error(),
            "RegisterPlugin error -- plugin registration failed with err: failed to dial device "
            "plugin: context deadline exceeded");
}

TEST_F(PluginWatcherTest, IgnoresDotNamesAndNonSockets) {
  std::ofstream(RegPath("regular.sock")) << "x";
  FakePlugin hidden(RegPath(".hidden.sock"), Probe("example.com/gpu", ""));
  ASSERT_TRUE(hidden.Start());
  // Nothing to await: assert that no GetInfo arrives within several periods.
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(hidden.CallCount("GetInfo"), 0);
}

// A failed handler registration: 1.36+ (kubernetes#133335) takes the plugin
// out of the actual state and retries it with backoff; before, it stays
// registered and is not retried.
TEST(PluginWatcherRetryTest, FailedRegistrationRetriedFrom136) {
  for (const char* v : {"1.35", "1.36"}) {
    SCOPED_TRACE(v);
    testutil::TempDir dp, reg;
    FakeClientHandler handler;
    ProbeNode::Options o;
    o.plugin_dir = dp.path();
    o.registry_dir = reg.Join("plugins_registry");
    o.profile = *ProfileForVersion(v);
    o.dial_timeout = absl::Milliseconds(200);
    o.initial_retry_backoff = absl::Milliseconds(50);
    ProbeNode node;
    ASSERT_OK(node.Start(o, &handler));
    FakePluginConfig cfg;
    cfg.serve_registration = true;
    cfg.info.set_type("DevicePlugin");
    cfg.info.set_name("example.com/gpu");
    cfg.info.set_endpoint(dp.Join("late.sock"));
    cfg.info.add_supported_versions("v1beta1");
    FakePlugin plugin(reg.Join("plugins_registry/p.sock"), cfg);
    ASSERT_TRUE(plugin.Start());
    ASSERT_TRUE(plugin.WaitNotification());
    EXPECT_FALSE(plugin.Notifications()[0].plugin_registered());
    // The device socket appears after the first attempt failed.
    FakePluginConfig dev;
    dev.responses = {testutil::Devices(1)};
    FakePlugin device(dp.Join("late.sock"), dev);
    ASSERT_TRUE(device.Start());
    if (std::string(v) == "1.36") {
      ASSERT_TRUE(handler.WaitFor("list", 1));
      EXPECT_GE(plugin.CallCount("GetInfo"), 2);
    } else {
      // Nothing to await: no second attempt within many backoff periods.
      absl::SleepFor(absl::Milliseconds(400));
      EXPECT_EQ(plugin.CallCount("GetInfo"), 1);
      EXPECT_EQ(handler.Count("connected"), 0);
    }
    node.Stop();
  }
}

}  // namespace
}  // namespace devmgr::transport
