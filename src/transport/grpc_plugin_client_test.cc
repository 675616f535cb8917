#include "transport/grpc_plugin_client.h"

#include "common/logging.h"
#include "common/status_testutil.h"
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
                                              absl::Duration dial_timeout = absl::Seconds(5),
                                              bool validate_utf8 = false) {
    return std::make_shared<GrpcPluginClient>(
        "example.com/gpu", socket,
        ClientOptions{dial_timeout, kDefaultMaxRecvMsgSize, validate_utf8});
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
  ASSERT_OK(client->Dial());
  auto opts = client->GetDevicePluginOptions();
  EXPECT_EQ(opts.status().message(), "rpc error: code = Internal desc = boom");
  EXPECT_EQ(client->Connect(&handler_).message(),
            "failed to get device plugin options: rpc error: code = Internal desc = boom");

  auto alloc = client->Allocate(v1beta1::AllocateRequest());
  ASSERT_OK(alloc);
  EXPECT_EQ(alloc->container_responses(0).envs().at("A"), "1");

  // PreStartContainer has a deadline; the fake hangs.
  auto pre =
      client->PreStartContainer(v1beta1::PreStartContainerRequest(), absl::Milliseconds(100));
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
  ASSERT_OK(client->Connect(&handler_));
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
  ASSERT_OK(client->Dial());
  std::thread run([&] { client->Run(&handler_); });
  ASSERT_TRUE(handler_.WaitFor("list", 1));
  client->Close();
  run.join();
  EXPECT_TRUE(plugin.WaitStreamCancelled());
}

// A list whose second device ID is not valid UTF-8.
v1beta1::ListAndWatchResponse BadIdList() {
  v1beta1::ListAndWatchResponse r = testutil::Devices(1);
  auto* d = r.add_devices();
  d->set_id("\xff\xfe");
  d->set_health("Healthy");
  return r;
}

TEST_F(GrpcPluginClientTest, WithoutUtf8CheckAnInvalidIdIsDelivered) {
  FakePluginConfig cfg;
  cfg.responses = {BadIdList()};
  cfg.hold_stream = false;
  FakePlugin plugin(dir_.Join("p.sock"), cfg);
  ASSERT_TRUE(plugin.Start());
  auto client = NewClient(plugin.socket_path());
  ASSERT_OK(client->Connect(&handler_));
  client->Run(&handler_);
  EXPECT_EQ(handler_.Count("list"), 1);
  EXPECT_EQ(handler_.Last("list").devices, 2);
}

TEST_F(GrpcPluginClientTest, WithUtf8CheckAnInvalidIdEndsTheStreamLikeGo) {
  FakePluginConfig cfg;
  cfg.responses = {testutil::Devices(1), BadIdList(), testutil::Devices(3)};
  FakePlugin plugin(dir_.Join("p.sock"), cfg);  // holds the stream open
  ASSERT_TRUE(plugin.Start());
  auto client = NewClient(plugin.socket_path(), absl::Seconds(5), /*validate_utf8=*/true);
  ASSERT_OK(client->Connect(&handler_));
  client->Run(&handler_);                // returns: the client cancels the stream
  EXPECT_EQ(handler_.Count("list"), 1);  // the valid first list only
  EXPECT_TRUE(plugin.WaitStreamCancelled());
  bool logged = false;
  for (const std::string& line : log::RecentLines(10)) {
    logged |= line.find(
                  "\"ListAndWatch ended unexpectedly for device plugin\" "
                  "err=\"rpc error: code = Internal desc = grpc: failed to unmarshal the "
                  "received message: string field contains invalid UTF-8\" "
                  "resource=\"example.com/gpu\"") != std::string::npos;
  }
  EXPECT_TRUE(logged);
}

TEST_F(GrpcPluginClientTest, WithUtf8CheckUnaryResponsesFailLikeGo) {
  FakePluginConfig cfg;
  cfg.preferred_response.add_container_responses()->add_deviceids("\xff\xfe");
  FakePlugin plugin(dir_.Join("p.sock"), cfg);
  ASSERT_TRUE(plugin.Start());
  constexpr char kGoError[] =
      "rpc error: code = Internal desc = grpc: failed to unmarshal the received message: string "
      "field contains invalid UTF-8";

  auto checked = NewClient(plugin.socket_path(), absl::Seconds(5), /*validate_utf8=*/true);
  ASSERT_OK(checked->Dial());
  auto pref = checked->GetPreferredAllocation(v1beta1::PreferredAllocationRequest());
  EXPECT_EQ(pref.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(pref.status().message(), kGoError);
  EXPECT_OK(checked->Allocate(v1beta1::AllocateRequest()));  // valid envs
  EXPECT_OK(checked->GetDevicePluginOptions());

  auto unchecked = NewClient(plugin.socket_path());
  ASSERT_OK(unchecked->Dial());
  auto pref_ok = unchecked->GetPreferredAllocation(v1beta1::PreferredAllocationRequest());
  ASSERT_OK(pref_ok);
  EXPECT_EQ(pref_ok->container_responses(0).deviceids(0), "\xff\xfe");
}

// Paths and map values are `bytes` in devmgr's proto, so only the profile
// decides: 1.30-1.33 (gogo) accept invalid UTF-8 there, 1.34+ answers the
// Internal error. Map keys must stay `string`: C++ protobuf refuses those
// itself, and C++ gRPC then reports a unary call without a message (a
// known deviation in every profile).
TEST_F(GrpcPluginClientTest, InvalidUtf8InPathsAndMapKeys) {
  FakePluginConfig cfg;
  v1beta1::AllocateResponse bad;
  v1beta1::ContainerAllocateResponse* c = bad.add_container_responses();
  c->add_mounts()->set_container_path("\xff\xfe");
  (*c->mutable_envs())["K"] = "\xff";
  c->add_cdi_devices()->set_name("\xfe");
  cfg.allocate_response = bad;
  FakePlugin plugin(dir_.Join("p.sock"), cfg);
  ASSERT_TRUE(plugin.Start());
  auto unchecked = NewClient(plugin.socket_path(), absl::Seconds(5), /*validate_utf8=*/false);
  ASSERT_OK(unchecked->Dial());
  auto ok = unchecked->Allocate(v1beta1::AllocateRequest());
  ASSERT_OK(ok);
  EXPECT_EQ(ok->container_responses(0).mounts(0).container_path(), "\xff\xfe");
  EXPECT_EQ(ok->container_responses(0).envs().at("K"), "\xff");
  auto checked = NewClient(plugin.socket_path(), absl::Seconds(5), /*validate_utf8=*/true);
  ASSERT_OK(checked->Dial());
  EXPECT_EQ(checked->Allocate(v1beta1::AllocateRequest()).status().message(),
            "rpc error: code = Internal desc = grpc: failed to unmarshal the received message: "
            "string field contains invalid UTF-8");

  FakePluginConfig key_cfg;
  v1beta1::AllocateResponse bad_key;
  (*bad_key.add_container_responses()->mutable_envs())["\xff"] = "v";
  key_cfg.allocate_response = bad_key;
  FakePlugin key_plugin(dir_.Join("k.sock"), key_cfg);
  ASSERT_TRUE(key_plugin.Start());
  auto client = NewClient(key_plugin.socket_path(), absl::Seconds(5), false);
  ASSERT_OK(client->Dial());
  EXPECT_EQ(client->Allocate(v1beta1::AllocateRequest()).status().message(),
            "rpc error: code = Unimplemented desc = No message returned for unary request");
}

}  // namespace
}  // namespace devmgr::transport
