#include "transport/grpc_plugin_client.h"

#include "gtest/gtest.h"
#include "transport/transport_testutil.h"

namespace devmgr::transport {
namespace {

using testutil::FakeClientHandler;
using testutil::FakePlugin;
using testutil::FakePluginConfig;

class GrpcPluginClientTest : public testing::Test {
 protected:
  std::shared_ptr<GrpcPluginClient> NewClient(const std::string& socket,
                                              absl::Duration dial_timeout = absl::Seconds(5)) {
    return std::make_shared<GrpcPluginClient>("example.com/gpu", socket,
                                              ClientOptions{dial_timeout, kDefaultMaxRecvMsgSize});
  }
  testutil::TempDir dir_;
  FakeClientHandler handler_;
};

TEST_F(GrpcPluginClientTest, DialTimesOutLikeGo) {
  auto client = NewClient(dir_.Join("none.sock"), absl::Milliseconds(200));
  const absl::Status s = client->Dial();
  EXPECT_EQ(s.message(), "failed to dial device plugin: context deadline exceeded");
  EXPECT_EQ(client->Connect(&handler_).message(),
            "failed to dial device plugin: context deadline exceeded");
  EXPECT_EQ(handler_.Count("connected"), 0);
}

TEST_F(GrpcPluginClientTest, ErrorsUseGoTexts) {
  FakePluginConfig cfg;
  cfg.options_status = grpc::Status(grpc::StatusCode::INTERNAL, "boom");
  FakePlugin plugin(dir_.Join("p.sock"), cfg);
  ASSERT_TRUE(plugin.Start());
  auto client = NewClient(plugin.socket_path());
  ASSERT_TRUE(client->Dial().ok());
  auto opts = client->GetDevicePluginOptions();
  EXPECT_EQ(opts.status().message(), "rpc error: code = Internal desc = boom");
  EXPECT_EQ(client->Connect(&handler_).message(),
            "failed to get device plugin options: rpc error: code = Internal desc = boom");

  auto alloc = client->Allocate(v1beta1::AllocateRequest());
  ASSERT_TRUE(alloc.ok());
  EXPECT_EQ(alloc->container_responses(0).envs().at("A"), "1");

  // PreStartContainer has a deadline; the fake hangs.
  auto pre = client->PreStartContainer(v1beta1::PreStartContainerRequest(),
                                       absl::Milliseconds(100));
  EXPECT_EQ(pre.status().message(),
            "rpc error: code = DeadlineExceeded desc = context deadline exceeded");

  client->Close();
  client->Close();  // idempotent
  EXPECT_EQ(client->Allocate(v1beta1::AllocateRequest()).status().message(),
            "rpc error: code = Canceled desc = grpc: the client connection is closing");
}

TEST_F(GrpcPluginClientTest, RunDeliversEveryResponseThenReturnsAtStreamEnd) {
  FakePluginConfig cfg;
  cfg.responses = {testutil::Devices(2), testutil::Devices(3)};
  cfg.hold_stream = false;
  FakePlugin plugin(dir_.Join("p.sock"), cfg);
  ASSERT_TRUE(plugin.Start());
  auto client = NewClient(plugin.socket_path());
  ASSERT_TRUE(client->Connect(&handler_).ok());
  client->Run(&handler_);
  const auto events = handler_.Events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].devices, 2);
  EXPECT_EQ(events[2].devices, 3);
  EXPECT_EQ(plugin.CallCount("ListAndWatch"), 1);
}

TEST_F(GrpcPluginClientTest, CloseCancelsTheStream) {
  FakePluginConfig cfg;
  cfg.responses = {testutil::Devices(1)};
  FakePlugin plugin(dir_.Join("p.sock"), cfg);
  ASSERT_TRUE(plugin.Start());
  auto client = NewClient(plugin.socket_path());
  ASSERT_TRUE(client->Dial().ok());
  std::thread run([&] { client->Run(&handler_); });
  ASSERT_TRUE(handler_.WaitFor("list", 1));
  client->Close();
  run.join();
  EXPECT_TRUE(plugin.WaitStreamCancelled());
}

}  // namespace
}  // namespace devmgr::transport
