// DraPluginHandler over real unix sockets (fake DRA drivers in a per-test
// temp dir): validation and refusals, the service per profile, rolling
// update to the newest connected instance, deregistration, and the 30 s
// ResourceSlice wipe on manual timers.
#include "dra/dra_plugin_handler.h"

#include <memory>
#include <string>
#include <vector>

#include "common/status_testutil.h"
#include "common/temp_dir_testutil.h"
#include "dra/fake_driver_testutil.h"
#include "dra/timers_testutil.h"
#include "gtest/gtest.h"
#include "pluginmanager/plugin_handler.h"

namespace devmgr::dra {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace dra_plugin_handler_test {

constexpr char kDriver[] = "drv.example.com";
const std::vector<std::string> kBoth = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};
const std::vector<Claim> kClaims = {{"ns", "uid-1", "c1"}};
constexpr absl::Duration kWait = absl::Seconds(20);

class DraPluginHandlerTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(a_.Start());
    ASSERT_TRUE(b_.Start());
    handler_ = NewHandler(kNewestMinor);
  }
  std::unique_ptr<DraPluginHandler> NewHandler(int minor, std::vector<BindPath> binds = {}) {
    DraPluginHandlerOptions o;
    o.endpoint_binds = std::move(binds);
    o.profile = ProfileForMinor(minor);
    o.timers = &timers_;
    o.on_wipe = [this](const std::string& driver) {
      absl::MutexLock l(&mu_);
      wiped_.push_back(driver);
    };
    o.client.initial_reconnect_backoff = absl::Milliseconds(50);
    o.client.max_reconnect_backoff = absl::Milliseconds(200);
    o.connection_recheck = absl::Milliseconds(50);
    absl::StatusOr<std::unique_ptr<DraPluginHandler>> h = DraPluginHandler::Create(std::move(o));
    EXPECT_OK(h);
    return h.ok() ? *std::move(h) : nullptr;
  }
  std::vector<std::string> Wiped() {
    absl::MutexLock l(&mu_);
    return wiped_;
  }
  std::string ClientEndpoint(const std::string& driver) {
    absl::StatusOr<std::shared_ptr<DraClient>> c = handler_->GetClient(driver);
    return c.ok() ? (*c)->endpoint() : std::string(c.status().message());
  }
  bool WaitConnected(const testutil::FakeDraDriver& d, bool connected) {
    return handler_->WaitForConnection(kDriver, d.path(), connected, kWait);
  }

  devmgr::testutil::TempDir dir_;
  testutil::FakeDraDriver a_{dir_.Join("a.sock")};
  testutil::FakeDraDriver b_{dir_.Join("b.sock")};
  ManualTimers timers_;
  absl::Mutex mu_;
  std::vector<std::string> wiped_ ABSL_GUARDED_BY(mu_);
  // Last: stopped before the timers and drivers go.
  std::unique_ptr<DraPluginHandler> handler_;
};

TEST_F(DraPluginHandlerTest, IsThePluginManagersHandler) {
  pluginmanager::HandlerMap handlers{{pluginmanager::kDRAPluginType, handler_.get()}};
  EXPECT_EQ(handlers.at("DRAPlugin"), handler_.get());
}

TEST_F(DraPluginHandlerTest, RefusesProfilesBefore134) {
  DraPluginHandlerOptions o;
  o.profile = ProfileForMinor(33);
  o.timers = &timers_;
  EXPECT_EQ(DraPluginHandler::Create(std::move(o)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(DraPluginHandlerTest, ValidationRefusesUnsupportedServices) {
  EXPECT_OK(handler_->ValidatePlugin(kDriver, a_.path(), kBoth));
  EXPECT_EQ(handler_->ValidatePlugin(kDriver, a_.path(), {}).message(),
            "invalid supported gRPC versions of DRA driver plugin drv.example.com at endpoint " +
                a_.path() + ": empty list of supported gRPC services (aka supported versions)");
  EXPECT_EQ(handler_->ValidatePlugin(kDriver, a_.path(), {"v1alpha4.DRAPlugin"}).code(),
            absl::StatusCode::kInvalidArgument);
}

// k8s.io/kubernetes v1.34.4-v1.37.2,
// pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go: ValidatePlugin checks only
// the services, add stores the instance under "", GetPlugin refuses the
// empty name ("DRA driver name is empty") and wipeResourceSlices puts no
// driver into its field selector for "" (every slice of the node: Node's
// on_wipe does so for "").
TEST_F(DraPluginHandlerTest, AnEmptyDriverNameIsRegisteredButNeverCalled) {
  EXPECT_OK(handler_->ValidatePlugin("", a_.path(), kBoth));
  ASSERT_OK(handler_->RegisterPlugin("", a_.path(), kBoth));
  EXPECT_EQ(handler_->Drivers(), std::vector<std::string>{""});
  EXPECT_EQ(handler_->Endpoints(""), std::vector<std::string>{a_.path()});
  const absl::Status s = handler_->GetClient("").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "DRA driver name is empty");
  ASSERT_TRUE(handler_->WaitForConnection("", a_.path(), true, kWait));
  handler_->DeRegisterPlugin("", a_.path());
  EXPECT_TRUE(handler_->Drivers().empty());
  timers_.Advance(absl::Seconds(30));
  EXPECT_EQ(Wiped(), std::vector<std::string>{""});
}

TEST_F(DraPluginHandlerTest, RefusesTheSameEndpointTwice) {
  ASSERT_OK(handler_->RegisterPlugin(kDriver, a_.path(), kBoth));
  const absl::Status s = handler_->RegisterPlugin(kDriver, a_.path(), kBoth);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(s.message(),
            "endpoint " + a_.path() + " already registered for DRA driver plugin drv.example.com");
  EXPECT_EQ(handler_->Endpoints(kDriver), std::vector<std::string>{a_.path()});
  EXPECT_EQ(handler_->Drivers(), std::vector<std::string>{kDriver});
}

TEST_F(DraPluginHandlerTest, EveryProfileCallsTheFirstServiceOfThePluginsList) {
  for (int minor = 34; minor <= 37; ++minor) {
    SCOPED_TRACE(minor);
    handler_ = NewHandler(minor);
    ASSERT_OK(
        handler_->RegisterPlugin("beta-first", a_.path(), {"v1beta1.DRAPlugin", "v1.DRAPlugin"}));
    ASSERT_OK(
        handler_->RegisterPlugin("v1-second", b_.path(), {"v1alpha4.DRAPlugin", "v1.DRAPlugin"}));
    // Calls fail fast while a connection is down: wait for both.
    ASSERT_TRUE(handler_->WaitForConnection("beta-first", a_.path(), true, kWait));
    ASSERT_TRUE(handler_->WaitForConnection("v1-second", b_.path(), true, kWait));
    ASSERT_OK((*handler_->GetClient("beta-first"))->NodePrepareResources(kClaims));
    ASSERT_OK((*handler_->GetClient("v1-second"))->NodePrepareResources(kClaims));
  }
  EXPECT_EQ(a_.Methods(), std::vector<std::string>(4, testutil::kV1beta1Prepare));
  EXPECT_EQ(b_.Methods(), std::vector<std::string>(4, testutil::kV1Prepare));
}

// A driver under serve --private-mount registers the endpoint it sees,
// /var/lib/kubelet/plugins/...: the node dials it in the directory bound
// there, and keeps the registered path as the instance's identity.
TEST_F(DraPluginHandlerTest, AnEndpointInsideTheDriversBindsIsDialledAtItsHostPath) {
  handler_ = NewHandler(kNewestMinor, {{dir_.path(), "/var/lib/kubelet/plugins"}});
  const std::string registered = "/var/lib/kubelet/plugins/a.sock";
  ASSERT_OK(handler_->RegisterPlugin(kDriver, registered, kBoth));
  ASSERT_TRUE(handler_->WaitForConnection(kDriver, registered, true, kWait));
  EXPECT_EQ(ClientEndpoint(kDriver), a_.path());
  ASSERT_OK((*handler_->GetClient(kDriver))->NodePrepareResources(kClaims));
  EXPECT_EQ(a_.Calls().size(), 1u);
  EXPECT_EQ(handler_->Endpoints(kDriver), std::vector<std::string>{registered});
  // An endpoint outside the binds is dialled as given.
  ASSERT_OK(handler_->RegisterPlugin("other.example.com", b_.path(), kBoth));
  EXPECT_EQ(ClientEndpoint("other.example.com"), b_.path());
}

TEST_F(DraPluginHandlerTest, CallsGoToTheNewestConnectedInstance) {
  ASSERT_OK(handler_->RegisterPlugin(kDriver, a_.path(), kBoth));
  ASSERT_OK(handler_->RegisterPlugin(kDriver, b_.path(), kBoth));
  ASSERT_TRUE(WaitConnected(a_, true));
  ASSERT_TRUE(WaitConnected(b_, true));
  EXPECT_EQ(ClientEndpoint(kDriver), b_.path());
  ASSERT_OK((*handler_->GetClient(kDriver))->NodePrepareResources(kClaims));
  EXPECT_EQ(b_.Calls().size(), 1u);

  // The new instance goes away: calls go back to the old one.
  b_.Stop();
  ASSERT_TRUE(WaitConnected(b_, false));
  EXPECT_EQ(ClientEndpoint(kDriver), a_.path());
  ASSERT_OK((*handler_->GetClient(kDriver))->NodePrepareResources(kClaims));
  EXPECT_EQ(a_.Calls().size(), 1u);

  // It comes back: the newest again.
  ASSERT_TRUE(b_.Start());
  ASSERT_TRUE(WaitConnected(b_, true));
  EXPECT_EQ(ClientEndpoint(kDriver), b_.path());
  // One instance of two dropping wipes nothing.
  EXPECT_EQ(timers_.Pending(), 0u);
}

TEST_F(DraPluginHandlerTest, WithNoneConnectedCallsGoToTheNewest) {
  ASSERT_OK(handler_->RegisterPlugin(kDriver, dir_.Join("old.sock"), kBoth));
  ASSERT_OK(handler_->RegisterPlugin(kDriver, dir_.Join("new.sock"), kBoth));
  EXPECT_EQ(ClientEndpoint(kDriver), dir_.Join("new.sock"));
  // A newer instance that never connects does not take the calls from a
  // connected one.
  ASSERT_OK(handler_->RegisterPlugin(kDriver, a_.path(), kBoth));
  ASSERT_OK(handler_->RegisterPlugin(kDriver, dir_.Join("newest.sock"), kBoth));
  ASSERT_TRUE(WaitConnected(a_, true));
  EXPECT_EQ(ClientEndpoint(kDriver), a_.path());
}

TEST_F(DraPluginHandlerTest, DeregistrationRemovesTheInstance) {
  ASSERT_OK(handler_->RegisterPlugin(kDriver, a_.path(), kBoth));
  ASSERT_OK(handler_->RegisterPlugin(kDriver, b_.path(), kBoth));
  handler_->DeRegisterPlugin(kDriver, b_.path());
  EXPECT_EQ(handler_->Endpoints(kDriver), std::vector<std::string>{a_.path()});
  EXPECT_EQ(ClientEndpoint(kDriver), a_.path());
  handler_->DeRegisterPlugin(kDriver, a_.path());
  handler_->DeRegisterPlugin(kDriver, a_.path());  // unknown now: ignored
  EXPECT_EQ(handler_->GetClient(kDriver).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ClientEndpoint(kDriver), "DRA driver drv.example.com is not registered");
  // The endpoint may be registered again.
  EXPECT_OK(handler_->RegisterPlugin(kDriver, a_.path(), kBoth));
}

TEST_F(DraPluginHandlerTest, ADroppedConnectionWipesTheSlicesAfter30Seconds) {
  ASSERT_OK(handler_->RegisterPlugin(kDriver, a_.path(), kBoth));
  ASSERT_TRUE(WaitConnected(a_, true));
  a_.Stop();
  ASSERT_TRUE(WaitConnected(a_, false));
  timers_.Advance(absl::Seconds(29));
  EXPECT_TRUE(Wiped().empty());
  timers_.Advance(absl::Seconds(1));
  EXPECT_EQ(Wiped(), std::vector<std::string>{kDriver});
  // Once: the driver stays registered, but nothing else is pending.
  EXPECT_EQ(timers_.Pending(), 0u);
}

TEST_F(DraPluginHandlerTest, AConnectionBackWithin30SecondsWipesNothing) {
  ASSERT_OK(handler_->RegisterPlugin(kDriver, a_.path(), kBoth));
  ASSERT_TRUE(WaitConnected(a_, true));
  a_.Stop();
  ASSERT_TRUE(WaitConnected(a_, false));
  timers_.Advance(absl::Seconds(20));
  ASSERT_TRUE(a_.Start());
  ASSERT_TRUE(WaitConnected(a_, true));
  timers_.Advance(absl::Minutes(5));
  EXPECT_TRUE(Wiped().empty());
}

// The kubelet's add queues the wipe when no instance of the driver is
// connected (v1.34.4-v1.37.2, dra_plugin_manager.go, add and sync): a driver
// that registers an endpoint nobody serves loses its slices 30 s later, and
// a connection within the 30 s cancels it.
TEST_F(DraPluginHandlerTest, ARegistrationThatNeverConnectsWipesAfter30Seconds) {
  const std::string nobody = dir_.Join("nobody.sock");
  ASSERT_OK(handler_->RegisterPlugin(kDriver, nobody, kBoth));
  EXPECT_EQ(timers_.Pending(), 1u);
  timers_.Advance(absl::Seconds(29));
  EXPECT_TRUE(Wiped().empty());
  timers_.Advance(absl::Seconds(1));
  EXPECT_EQ(Wiped(), std::vector<std::string>{kDriver});
  EXPECT_EQ(handler_->Endpoints(kDriver), std::vector<std::string>{nobody});
}

TEST_F(DraPluginHandlerTest, AConnectionCancelsTheWipeQueuedAtRegistration) {
  ASSERT_OK(handler_->RegisterPlugin(kDriver, a_.path(), kBoth));
  ASSERT_TRUE(WaitConnected(a_, true));
  EXPECT_EQ(timers_.Pending(), 0u);
  timers_.Advance(absl::Minutes(5));
  EXPECT_TRUE(Wiped().empty());
}

TEST_F(DraPluginHandlerTest, TheLastDeregistrationWipesAfter30Seconds) {
  ASSERT_OK(handler_->RegisterPlugin(kDriver, a_.path(), kBoth));
  ASSERT_OK(handler_->RegisterPlugin(kDriver, b_.path(), kBoth));
  ASSERT_TRUE(WaitConnected(a_, true));
  ASSERT_TRUE(WaitConnected(b_, true));
  handler_->DeRegisterPlugin(kDriver, a_.path());
  EXPECT_EQ(timers_.Pending(), 0u);  // b is still connected
  handler_->DeRegisterPlugin(kDriver, b_.path());
  timers_.Advance(absl::Seconds(29));
  EXPECT_TRUE(Wiped().empty());
  timers_.Advance(absl::Seconds(1));
  EXPECT_EQ(Wiped(), std::vector<std::string>{kDriver});
}

TEST_F(DraPluginHandlerTest, StopCancelsPendingWipes) {
  ASSERT_OK(handler_->RegisterPlugin(kDriver, a_.path(), kBoth));
  handler_->DeRegisterPlugin(kDriver, a_.path());
  EXPECT_EQ(timers_.Pending(), 1u);
  handler_->Stop();
  handler_->Stop();
  EXPECT_EQ(timers_.Pending(), 0u);
  timers_.Advance(absl::Minutes(1));
  EXPECT_TRUE(Wiped().empty());
}

}  // namespace dra_plugin_handler_test
}  // namespace devmgr::dra
