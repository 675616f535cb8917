// Hostile DRA drivers against the whole node over real unix sockets: a NodePrepareResources
// that hangs past the call timeout, a driver that dies in the middle of a call, an answer for a
// claim that was never asked, and an answer over the 4 MiB a gRPC client receives. Each time:
// the node stays up, the pod stays Pending with the kubelet's FailedPrepareDynamicResources and
// the call's error, dra_manager_state stays a valid checkpoint that holds the pod's claim as the
// kubelet records it before calling the driver (no devices), and once the driver behaves the pod's
// retry prepares the claim and its container gets the driver's CDI IDs.
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "apiserver/resource_type.h"
#include "apiserver/store.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/status_testutil.h"
#include "common/temp_dir_testutil.h"
#include "dra/checkpoint.h"
#include "dra/dra_plugin_handler.h"
#include "dra/fake_driver_testutil.h"
#include "dra/state.h"
#include "dra/timers_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node/node.h"
#include "node/pod_manager.h"
#include "node/pod_sync_loop.h"
#include "pod/manifest_parser.h"

namespace devmgr::node {
namespace {

using dra::testutil::drav1::NodePrepareResourcesRequest;
using dra::testutil::drav1::NodePrepareResourcesResponse;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kDriver[] = "gpu.example.com";
constexpr absl::Duration kWait = absl::Seconds(30);

class HostileDraDriverTest : public testing::Test {
 protected:
  void SetUp() override {
    log::SetConsoleOutput(false);
    Create(apiserver::DeviceClasses(), "",
           {{"metadata", {{"name", "gpu"}}}, {"spec", json::object()}});
    Create(
        apiserver::ResourceClaimTemplates(), "default",
        {{"metadata", {{"name", "gpu"}}},
         {"spec",
          {{"spec",
            {{"devices",
              {{"requests", {{{"name", "r"}, {"exactly", {{"deviceClassName", "gpu"}}}}}}}}}}}}});
    std::filesystem::create_directories(dir_.Join("device-plugins"));
    NodeOptions o;
    o.plugin_dir = dir_.Join("device-plugins");
    o.registry_dir = dir_.Join("plugins_registry");  // DRA drivers register through it
    o.profile = ProfileForMinor(37);
    o.fsync = false;
    o.dra.store = &store_;
    o.dra.node_name = "node-1";
    o.dra.state_dir = dir_.path();
    // Short for a test of a hanging driver (the kubelet's is 45 s), and longer than the 1 s
    // in which a stopping driver's server cancels its calls.
    o.dra.call_timeout = absl::Seconds(3);
    node_ = std::make_unique<Node>(o);
    ASSERT_OK(node_->Start());
    ASSERT_NE(node_->dra_handler(), nullptr);
    // The driver's slice, published after the node's start wiped the node's slices.
    Create(apiserver::ResourceSlices(), "",
           {{"metadata", {{"name", "s"}}},
            {"spec",
             {{"driver", kDriver},
              {"nodeName", "node-1"},
              {"pool", {{"name", "node-1"}, {"generation", 0}, {"resourceSliceCount", 1}}},
              {"devices", {{{"name", "gpu-0"}}}}}}});
    pods_ = std::make_unique<PodManager>(node_.get(), PodManagerOptions{.keep_deleted = false});
    loop_ = std::make_unique<PodSyncLoop>(pods_.get(), PodSyncLoopOptions{.timers = &timers_});
    loop_->Start();
    ASSERT_TRUE(driver_.Start());
    ASSERT_OK(node_->dra_handler()->RegisterPlugin(kDriver, driver_.path(), {"v1.DRAPlugin"}));
    ASSERT_TRUE(node_->dra_handler()->WaitForConnection(kDriver, driver_.path(), true, kWait));
  }
  void TearDown() override {
    loop_->Stop();
    driver_.Stop();
    node_->Stop();
    log::SetConsoleOutput(true);
  }

  void Create(const apiserver::ResourceType& type, const std::string& ns, const json& obj) {
    apiserver::ApiOr<json> made = store_.Create(type, ns, obj);
    ASSERT_TRUE(made.ok()) << made.error->message;
  }

  absl::StatusOr<PodRecord> AddPod() {
    absl::StatusOr<pod::Pod> p = pod::ParsePodManifest(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
        "  containers: [{name: c, resources: {claims: [{name: g}]}}]\n"
        "  resourceClaims: [{name: g, resourceClaimTemplateName: gpu}]\n",
        "p.yaml");
    if (!p.ok()) return p.status();
    uid_ = p->uid;
    return pods_->AddPod(*p);
  }

  // The pod waits for its claims: Pending, its sync failed with the kubelet's event.
  void ExpectPendingWith(const absl::StatusOr<PodRecord>& rec, const std::string& error) {
    ASSERT_OK(rec);
    EXPECT_EQ(rec->phase, pod::Phase::kPending);
    EXPECT_TRUE(rec->sync_failed);
    EXPECT_EQ(rec->reason, "FailedPrepareDynamicResources") << rec->message;
    EXPECT_THAT(rec->message,
                HasSubstr("Failed to prepare dynamic resources: prepare dynamic resources: "));
    EXPECT_THAT(rec->message, HasSubstr(error));
  }

  // dra_manager_state is a checkpoint the kubelet reads, with `claims` entries; with
  // `devices` false, none has a device (a claim recorded before its failed prepare, as the
  // kubelet checkpoints each claim before it calls the drivers).
  void ExpectCheckpointWith(size_t claims, bool devices = true) {
    std::ifstream in(dir_.Join(dra::kCheckpointName), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    const dra::VerifyResult v = dra::Verify(bytes.str(), dra::LayoutForMinor(37));
    ASSERT_TRUE(v.valid) << v.error << v.data_error << "\n" << bytes.str();
    const auto& list = v.data->claim_info_state_list;
    EXPECT_EQ(list ? list->size() : 0u, claims) << bytes.str();
    if (devices || !list) return;
    for (const dra::ClaimInfoState& c : *list) {
      for (const auto& [driver, ds] : *c.driver_state) {
        EXPECT_FALSE(ds.devices.has_value()) << driver << ": " << bytes.str();
      }
    }
  }

  // The driver behaves again: the pod's retry prepares the claim.
  void ExpectTheRetryPrepares() {
    driver_.SetPrepare(dra::testutil::PrepareAll);
    timers_.Advance(absl::Seconds(10));
    std::optional<PodRecord> now = pods_->Find(uid_);
    ASSERT_TRUE(now.has_value());
    EXPECT_EQ(now->phase, pod::Phase::kRunning) << now->reason << ": " << now->message;
    const std::vector<std::string> ids = node_->DraCdiDevices(uid_, "c");
    ASSERT_EQ(ids.size(), 1u);
    EXPECT_THAT(ids[0], HasSubstr("vendor.com/dev="));
    ExpectCheckpointWith(1);
  }

  devmgr::testutil::TempDir dir_;
  FakeClock clock_;
  apiserver::Store store_{clock_};
  dra::ManualTimers timers_;
  dra::testutil::FakeDraDriver driver_{dir_.Join("dra.sock")};
  std::unique_ptr<Node> node_;
  std::unique_ptr<PodManager> pods_;
  std::unique_ptr<PodSyncLoop> loop_;
  std::string uid_;
};

TEST_F(HostileDraDriverTest, APrepareThatHangsPastTheTimeout) {
  // Shared with the handler: the hung call's thread may wake from it only after this test's
  // body has ended (a loaded machine), and must not find it gone (a Notification destroyed
  // under a waiter corrupted its mutex: "Mutex corrupt: waiting writer with no waiters").
  auto release = std::make_shared<absl::Notification>();
  driver_.SetPrepare([release](const NodePrepareResourcesRequest&, NodePrepareResourcesResponse*) {
    release->WaitForNotificationWithTimeout(kWait);
    return grpc::Status::OK;
  });
  ExpectPendingWith(AddPod(),
                    "NodePrepareResources: rpc error: code = DeadlineExceeded desc = "
                    "context deadline exceeded");
  ExpectCheckpointWith(1, /*devices=*/false);
  release->Notify();
  ExpectTheRetryPrepares();
}

TEST_F(HostileDraDriverTest, AnAnswerForAClaimNeverAsked) {
  driver_.SetPrepare([](const NodePrepareResourcesRequest&, NodePrepareResourcesResponse* resp) {
    (*resp->mutable_claims())["never-asked"].add_devices()->set_device_name("gpu-0");
    return grpc::Status::OK;
  });
  ExpectPendingWith(AddPod(),
                    "NodePrepareResources returned result for unknown claim UID "
                    "never-asked");
  ExpectCheckpointWith(1, /*devices=*/false);
  ExpectTheRetryPrepares();
}

TEST_F(HostileDraDriverTest, AnAnswerOverTheReceiveLimit) {
  driver_.SetPrepare([](const NodePrepareResourcesRequest& req, NodePrepareResourcesResponse* r) {
    dra::testutil::PrepareAll(req, r);
    for (auto& [uid, entry] : *r->mutable_claims()) {
      entry.mutable_devices(0)->add_cdi_device_ids(std::string(5 << 20, 'x'));
    }
    return grpc::Status::OK;
  });
  // grpc-go's text, as the kubelet would show it.
  ExpectPendingWith(AddPod(),
                    "NodePrepareResources: rpc error: code = ResourceExhausted desc = grpc: "
                    "received message larger than max (");
  ExpectCheckpointWith(1, /*devices=*/false);
  ExpectTheRetryPrepares();
}

TEST_F(HostileDraDriverTest, ADriverThatDiesInTheMiddleOfACall) {
  // Shared with the handler, which may run after this body has ended (see above).
  auto in_call = std::make_shared<absl::Notification>();
  auto release = std::make_shared<absl::Notification>();
  driver_.SetPrepare(
      [in_call, release](const NodePrepareResourcesRequest&, NodePrepareResourcesResponse*) {
        if (!in_call->HasBeenNotified()) in_call->Notify();
        release->WaitForNotificationWithTimeout(kWait);
        return grpc::Status::OK;
      });
  absl::StatusOr<PodRecord> rec;
  std::thread add([&] { rec = AddPod(); });
  EXPECT_TRUE(in_call->WaitForNotificationWithTimeout(kWait));
  // The driver goes (its server closes every connection; the handler still runs, as in a
  // process being killed whose threads have not been reaped yet).
  std::thread stop([&] { driver_.Stop(); });
  add.join();
  release->Notify();
  stop.join();
  ExpectPendingWith(rec, "NodePrepareResources: rpc error: code = ");
  EXPECT_THAT(rec->message, ::testing::Not(HasSubstr("DeadlineExceeded")));
  ExpectCheckpointWith(1, /*devices=*/false);
  // It comes back on the same socket: the node reconnects, and the retry prepares.
  ASSERT_TRUE(driver_.Start());
  ASSERT_TRUE(node_->dra_handler()->WaitForConnection(kDriver, driver_.path(), true, kWait));
  ExpectTheRetryPrepares();
}

}  // namespace
}  // namespace devmgr::node
