// HandlerDriverCalls over real unix sockets: calls go to the handler's
// instance of the driver, responses come back unchecked (per-claim errors,
// unknown UIDs) for the manager to check, a failed call keeps grpc-go's text
// without the RPC name, and an unregistered driver is refused.
#include "dra/handler_driver_calls.h"

#include <memory>
#include <string>
#include <vector>

#include "common/status_testutil.h"
#include "common/temp_dir_testutil.h"
#include "dra/fake_driver_testutil.h"
#include "dra/timers_testutil.h"
#include "gtest/gtest.h"

namespace devmgr::dra {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace handler_driver_calls_test {

constexpr char kDriver[] = "drv.example.com";
const std::vector<std::string> kBoth = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};
const std::vector<ClaimRef> kClaims = {{"uid-1", "c1", "ns"}, {"uid-2", "c2", "ns"}};

class HandlerDriverCallsTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(driver_.Start());
    DraPluginHandlerOptions o;
    o.profile = ProfileForMinor(kNewestMinor);
    o.timers = &timers_;
    o.connection_recheck = absl::Milliseconds(50);
    absl::StatusOr<std::unique_ptr<DraPluginHandler>> h = DraPluginHandler::Create(std::move(o));
    ASSERT_OK(h);
    handler_ = *std::move(h);
    calls_ = std::make_unique<HandlerDriverCalls>(handler_.get());
  }

  devmgr::testutil::TempDir dir_;
  testutil::FakeDraDriver driver_{dir_.Join("drv.sock")};
  ManualTimers timers_;
  std::unique_ptr<DraPluginHandler> handler_;
  std::unique_ptr<HandlerDriverCalls> calls_;
};

TEST_F(HandlerDriverCallsTest, UnregisteredDriverIsRefused) {
  EXPECT_FALSE(calls_->IsRegistered(kDriver));
  absl::StatusOr<std::map<std::string, PrepareResult>> r = calls_->Prepare(kDriver, kClaims);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), "DRA driver drv.example.com is not registered");
  EXPECT_EQ(calls_->Unprepare(kDriver, kClaims).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(HandlerDriverCallsTest, PrepareAndUnprepareReachTheDriver) {
  ASSERT_OK(handler_->RegisterPlugin(kDriver, driver_.path(), kBoth));
  EXPECT_TRUE(calls_->IsRegistered(kDriver));
  absl::StatusOr<std::map<std::string, PrepareResult>> r = calls_->Prepare(kDriver, kClaims);
  ASSERT_OK(r);
  ASSERT_EQ(r->size(), 2u);
  const PrepareResult& first = r->at("uid-1");
  EXPECT_EQ(first.error, "");
  ASSERT_EQ(first.devices.size(), 1u);
  EXPECT_EQ(first.devices[0].pool, "pool");
  EXPECT_EQ(first.devices[0].device, "dev-uid-1");
  EXPECT_EQ(first.devices[0].cdi_device_ids, std::vector<std::string>{"vendor.com/dev=uid-1"});
  absl::StatusOr<std::map<std::string, std::string>> u = calls_->Unprepare(kDriver, kClaims);
  ASSERT_OK(u);
  EXPECT_EQ(*u, (std::map<std::string, std::string>{{"uid-1", ""}, {"uid-2", ""}}));
  std::vector<std::string> methods = driver_.Methods();
  EXPECT_EQ(methods, (std::vector<std::string>{testutil::kV1Prepare, testutil::kV1Unprepare}));
}

TEST_F(HandlerDriverCallsTest, ResponsesComeBackUnchecked) {
  ASSERT_OK(handler_->RegisterPlugin(kDriver, driver_.path(), kBoth));
  driver_.SetPrepare([](const auto&, testutil::drav1::NodePrepareResourcesResponse* resp) {
    (*resp->mutable_claims())["uid-1"].set_error("no such device");
    (*resp->mutable_claims())["uid-9"];
    return grpc::Status::OK;
  });
  absl::StatusOr<std::map<std::string, PrepareResult>> r = calls_->Prepare(kDriver, kClaims);
  ASSERT_OK(r);
  EXPECT_EQ(r->size(), 2u);
  EXPECT_EQ(r->at("uid-1").error, "no such device");
  EXPECT_TRUE(r->contains("uid-9"));
}

TEST_F(HandlerDriverCallsTest, AFailedCallKeepsTheRpcErrorWithoutTheRpcName) {
  ASSERT_OK(handler_->RegisterPlugin(kDriver, driver_.path(), kBoth));
  driver_.SetUnprepare([](const auto&, auto*) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "driver busy");
  });
  absl::StatusOr<std::map<std::string, std::string>> u = calls_->Unprepare(kDriver, kClaims);
  EXPECT_EQ(u.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(u.status().message(), "rpc error: code = Unavailable desc = driver busy");
}

}  // namespace handler_driver_calls_test
}  // namespace devmgr::dra
