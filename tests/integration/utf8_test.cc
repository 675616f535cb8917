// Invalid UTF-8 in a device ID, end to end over real unix sockets: kubelet
// 1.30-1.33 (gogo-protobuf) accept it; 1.34+ (protoc-gen-go) fail to
// unmarshal the ListAndWatch response, so the stream ends and the
// resource's devices turn unhealthy (the endpoint is stopped, its grace
// period running).
#include <algorithm>

#include "common/logging.h"
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/test_env.h"
#include "transport/transport_testutil.h"

namespace devmgr::testutil {
namespace {

using ::testing::ElementsAre;

constexpr char kResource[] = "example.com/utf8";
constexpr char kBadId[] = "\xff\xfe";

class InvalidUtf8Test : public ::testing::Test {
 protected:
  void Start(const std::string& version, std::vector<v1beta1::ListAndWatchResponse> lists) {
    node_ = MakeNode(dir_.path(), &clock_, version, &changes_);
    ASSERT_OK(node_->Start());
    transport::testutil::FakePluginConfig cfg;
    cfg.responses = std::move(lists);
    plugin_ = std::make_unique<transport::testutil::FakePlugin>(dir_.path() + "/p.sock", cfg);
    ASSERT_TRUE(plugin_->Start());
    const grpc::Status st = transport::testutil::CallRegister(dir_.path() + "/kubelet.sock",
                                                              "v1beta1", "p.sock", kResource);
    ASSERT_OK(st) << st.error_message();
  }
  void TearDown() override {
    if (plugin_ != nullptr) plugin_->Stop();
    if (node_ != nullptr) node_->Stop();
  }
  static v1beta1::ListAndWatchResponse List(const std::vector<std::string>& ids) {
    v1beta1::ListAndWatchResponse r;
    for (const std::string& id : ids) {
      auto* d = r.add_devices();
      d->set_id(id);
      d->set_health("Healthy");
    }
    return r;
  }
  static bool StreamEndLogged() {
    const std::string want =
        "\"ListAndWatch ended unexpectedly for device plugin\" err=\"rpc error: code = Internal "
        "desc = grpc: failed to unmarshal the received message: string field contains invalid "
        "UTF-8\" resource=\"example.com/utf8\"";
    const auto lines = log::RecentLines(50);
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(want) != std::string::npos; });
  }

  TempDir dir_;
  FakeClock clock_;
  ChangeSignal changes_;
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<transport::testutil::FakePlugin> plugin_;
};

TEST_F(InvalidUtf8Test, Profile132AcceptsAndListsTheDevice) {
  Start("1.32", {List({"gpu-0", kBadId})});
  ASSERT_TRUE(changes_.WaitFor([&] { return Find(*node_, kResource).healthy.size() == 2; }));
  const auto s = Find(*node_, kResource);
  EXPECT_THAT(s.healthy, ElementsAre("gpu-0", kBadId));
  EXPECT_EQ(s.allocatable, 2);
  EXPECT_FALSE(s.stopped);
  EXPECT_FALSE(StreamEndLogged());
}

TEST_F(InvalidUtf8Test, Profile134EndsTheStreamAndMarksTheDevicesUnhealthy) {
  Start("1.34+", {List({"gpu-0"}), List({"gpu-0", kBadId})});
  ASSERT_TRUE(changes_.WaitFor([&] {
    const auto s = Find(*node_, kResource);
    return s.stopped && s.unhealthy.size() == 1;
  }));
  const auto s = Find(*node_, kResource);
  EXPECT_THAT(s.unhealthy, ElementsAre("gpu-0"));  // the invalid list never arrived
  EXPECT_TRUE(s.healthy.empty());
  EXPECT_EQ(s.capacity, 1);  // kept during the grace period
  EXPECT_EQ(s.allocatable, 0);
  EXPECT_TRUE(plugin_->WaitStreamCancelled());
  EXPECT_TRUE(StreamEndLogged());
}

}  // namespace
}  // namespace devmgr::testutil
