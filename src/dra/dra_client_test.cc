// DraClient against a fake DRA driver over a real unix socket: both service
// versions, the response checks and their texts, the deadline, UTF-8 per
// profile, share_id.
#include "dra/dra_client.h"

#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/status_testutil.h"
#include "common/temp_dir_testutil.h"
#include "dra/fake_driver_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::dra {
namespace {

using testutil::drav1::NodePrepareResourcesRequest;
using testutil::drav1::NodePrepareResourcesResponse;
using testutil::drav1::NodeUnprepareResourcesRequest;
using testutil::drav1::NodeUnprepareResourcesResponse;

const std::vector<Claim> kClaims = {{"ns", "uid-1", "c1"}, {"ns", "uid-2", "c2"}};

class DraClientTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(driver_.Start()); }
  DraClient Client(DraService service = DraService::kV1, DraClientOptions opts = {}) {
    return DraClient("drv.example.com", driver_.path(), service, opts);
  }

  devmgr::testutil::TempDir dir_;
  testutil::FakeDraDriver driver_{dir_.Join("dra.sock")};
};

TEST_F(DraClientTest, TheDefaultCallTimeoutIs45Seconds) {
  EXPECT_EQ(DraClientOptions().call_timeout, absl::Seconds(45));
}

TEST_F(DraClientTest, PreparesAllClaimsInOneV1Call) {
  DraClient client = Client(DraService::kV1);
  absl::StatusOr<PreparedClaims> got = client.NodePrepareResources(kClaims);
  ASSERT_OK(got);
  ASSERT_EQ(got->size(), 2u);
  const ResponseDevice want{{}, "pool", "dev-uid-1", {"vendor.com/dev=uid-1"}, std::nullopt};
  EXPECT_EQ(got->at("uid-1"), std::vector<ResponseDevice>{want});
  const std::vector<testutil::FakeCall> calls = driver_.Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].method, testutil::kV1Prepare);
  EXPECT_EQ(calls[0].claim_uids, std::vector<std::string>({"uid-1", "uid-2"}));
}

TEST_F(DraClientTest, CallsTheV1beta1ServiceWhenChosen) {
  DraClient client = Client(DraService::kV1beta1);
  ASSERT_OK(client.NodePrepareResources(kClaims));
  ASSERT_OK(client.NodeUnprepareResources(kClaims));
  EXPECT_EQ(driver_.Methods(),
            std::vector<std::string>({testutil::kV1beta1Prepare, testutil::kV1beta1Unprepare}));
}

TEST_F(DraClientTest, UnpreparesAllClaimsInOneV1Call) {
  DraClient client = Client(DraService::kV1);
  ASSERT_OK(client.NodeUnprepareResources(kClaims));
  const std::vector<testutil::FakeCall> calls = driver_.Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].method, testutil::kV1Unprepare);
  EXPECT_EQ(calls[0].claim_uids, std::vector<std::string>({"uid-1", "uid-2"}));
}

TEST_F(DraClientTest, ReadsShareIdOnlyWhenTheProfileHasIt) {
  driver_.SetPrepare([](const NodePrepareResourcesRequest& req, NodePrepareResourcesResponse* r) {
    testutil::PrepareAll(req, r);
    for (auto& [uid, entry] : *r->mutable_claims()) entry.mutable_devices(0)->set_share_id("s-1");
    return grpc::Status::OK;
  });
  DraClientOptions v135;
  EXPECT_EQ(Client(DraService::kV1, v135).NodePrepareResources(kClaims)->at("uid-1")[0].share_id,
            "s-1");
  DraClientOptions v134;
  v134.read_share_id = false;
  EXPECT_EQ(Client(DraService::kV1, v134).NodePrepareResources(kClaims)->at("uid-1")[0].share_id,
            std::nullopt);
  // v1beta1 has no such field at all.
  EXPECT_EQ(Client(DraService::kV1beta1).NodePrepareResources(kClaims)->at("uid-1")[0].share_id,
            std::nullopt);
}

TEST_F(DraClientTest, PrepareRefusesAResultForAClaimNotAskedFor) {
  driver_.SetPrepare([](const NodePrepareResourcesRequest& req, NodePrepareResourcesResponse* r) {
    testutil::PrepareAll(req, r);
    (*r->mutable_claims())["uid-9"];
    return grpc::Status::OK;
  });
  EXPECT_EQ(Client().NodePrepareResources(kClaims).status().message(),
            "NodePrepareResources returned result for unknown claim UID uid-9");
}

TEST_F(DraClientTest, PrepareFailsOnAPerClaimError) {
  driver_.SetPrepare([](const NodePrepareResourcesRequest& req, NodePrepareResourcesResponse* r) {
    testutil::PrepareAll(req, r);
    (*r->mutable_claims())["uid-2"].set_error("no such device");
    return grpc::Status::OK;
  });
  // k8s.io/kubernetes v1.34.4-v1.37.2 pkg/kubelet/cm/dra/manager.go,
  // prepareResources: the claim's name, no namespace.
  EXPECT_EQ(Client().NodePrepareResources(kClaims).status().message(),
            "NodePrepareResources failed for ResourceClaim c2: no such device");
}

TEST_F(DraClientTest, PrepareCountsSkippedClaims) {
  driver_.SetPrepare([](const NodePrepareResourcesRequest&, NodePrepareResourcesResponse* r) {
    (*r->mutable_claims())["uid-1"];
    return grpc::Status::OK;
  });
  EXPECT_EQ(Client().NodePrepareResources(kClaims).status().message(),
            "NodePrepareResources skipped 1 ResourceClaims");
  driver_.SetPrepare([](const NodePrepareResourcesRequest&, NodePrepareResourcesResponse*) {
    return grpc::Status::OK;
  });
  EXPECT_EQ(Client().NodePrepareResources(kClaims).status().message(),
            "NodePrepareResources skipped 2 ResourceClaims");
}

TEST_F(DraClientTest, UnprepareChecksTheResponseTheSameWay) {
  driver_.SetUnprepare([](const NodeUnprepareResourcesRequest&, NodeUnprepareResourcesResponse* r) {
    (*r->mutable_claims())["uid-1"];
    return grpc::Status::OK;
  });
  EXPECT_EQ(Client().NodeUnprepareResources(kClaims).message(),
            "NodeUnprepareResources skipped 1 ResourceClaims");
  driver_.SetUnprepare(
      [](const NodeUnprepareResourcesRequest& req, NodeUnprepareResourcesResponse* r) {
        testutil::UnprepareAll(req, r);
        (*r->mutable_claims())["uid-1"].set_error("busy");
        return grpc::Status::OK;
      });
  // v1.34.4-v1.37.2 pkg/kubelet/cm/dra/manager.go, unprepareResources.
  EXPECT_EQ(Client().NodeUnprepareResources(kClaims).message(),
            "NodeUnprepareResources failed for ResourceClaim c1: busy");
  driver_.SetUnprepare(
      [](const NodeUnprepareResourcesRequest& req, NodeUnprepareResourcesResponse* r) {
        testutil::UnprepareAll(req, r);
        (*r->mutable_claims())["other"];
        return grpc::Status::OK;
      });
  EXPECT_EQ(Client().NodeUnprepareResources(kClaims).message(),
            "NodeUnprepareResources returned result for unknown claim UID other");
}

TEST_F(DraClientTest, ACallErrorIsWrappedInGosText) {
  driver_.SetPrepare([](const NodePrepareResourcesRequest&, NodePrepareResourcesResponse*) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "driver busy");
  });
  const absl::Status s = Client().NodePrepareResources(kClaims).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "NodePrepareResources: rpc error: code = Unavailable desc = driver busy");
}

TEST_F(DraClientTest, ACallPastTheTimeoutFailsWithTheDeadline) {
  absl::Notification release;
  driver_.SetUnprepare(
      [&](const NodeUnprepareResourcesRequest& req, NodeUnprepareResourcesResponse* r) {
        release.WaitForNotificationWithTimeout(absl::Seconds(10));
        return testutil::UnprepareAll(req, r);
      });
  DraClientOptions opts;
  opts.call_timeout = absl::Milliseconds(200);
  const absl::Status s = Client(DraService::kV1, opts).NodeUnprepareResources(kClaims);
  release.Notify();
  // The handler may still be inside `release`: wait for it before it goes.
  driver_.Stop();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(s.message(),
            "NodeUnprepareResources: rpc error: code = DeadlineExceeded desc = context deadline "
            "exceeded");
}

TEST_F(DraClientTest, InvalidUtf8FailsOnlyWhereTheProfileChecksIt) {
  driver_.SetPrepare([](const NodePrepareResourcesRequest& req, NodePrepareResourcesResponse* r) {
    testutil::PrepareAll(req, r);
    (*r->mutable_claims())["uid-1"].mutable_devices(0)->set_device_name("gpu-\xff");
    return grpc::Status::OK;
  });
  DraClientOptions v134;
  absl::StatusOr<PreparedClaims> got = Client(DraService::kV1, v134).NodePrepareResources(kClaims);
  ASSERT_OK(got);
  EXPECT_EQ(got->at("uid-1")[0].device_name, "gpu-\xff");
  DraClientOptions v135;
  v135.validate_utf8 = true;
  EXPECT_EQ(Client(DraService::kV1, v135).NodePrepareResources(kClaims).status().message(),
            "NodePrepareResources: rpc error: code = Internal desc = grpc: failed to unmarshal the "
            "received message: string field contains invalid UTF-8");
}

// ReadPrepareResponse reads bytes as the client reads a call's response.
TEST(ReadResponseTest, ReadsWhatTheClientReads) {
  NodePrepareResourcesResponse resp;
  auto* dev = (*resp.mutable_claims())["uid-1"].add_devices();
  dev->set_pool_name("pool");
  dev->set_device_name("gpu-\x01\xff");
  dev->add_cdi_device_ids("example.com/gpu=0");
  dev->set_share_id("s");
  (*resp.mutable_claims())["uid-2"].set_error("no such device");
  DraClientOptions v134;
  v134.read_share_id = false;
  absl::StatusOr<std::map<std::string, PrepareEntry>> got =
      ReadPrepareResponse(DraService::kV1, resp.SerializeAsString(), v134);
  ASSERT_OK(got);
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ(got->at("uid-1").devices,
            (std::vector<ResponseDevice>{{{}, "pool", "gpu-\x01\xff", {"example.com/gpu=0"}, {}}}));
  EXPECT_EQ(got->at("uid-2").error, "no such device");
  DraClientOptions v137;
  v137.validate_utf8 = true;
  EXPECT_EQ(ReadPrepareResponse(DraService::kV1, resp.SerializeAsString(), v137).status().message(),
            "rpc error: code = Internal desc = grpc: failed to unmarshal the received message: "
            "string field contains invalid UTF-8");
}

TEST(ReadResponseTest, BytesThatAreNotTheMessageFailAsGrpcGoSays) {
  for (const DraService service : {DraService::kV1, DraService::kV1beta1}) {
    const absl::Status prepare = ReadPrepareResponse(service, "\x0a\x05\x0a", {}).status();
    EXPECT_EQ(prepare.code(), absl::StatusCode::kInternal);
    EXPECT_EQ(prepare.message(),
              "rpc error: code = Internal desc = grpc: failed to unmarshal the received message: "
              "proto: cannot parse invalid wire-format data");
    EXPECT_EQ(ReadUnprepareResponse(service, "\xff", {}).status().message(), prepare.message());
  }
  NodeUnprepareResourcesResponse resp;
  (*resp.mutable_claims())["uid-1"].set_error("busy");
  (*resp.mutable_claims())["uid-2"];
  absl::StatusOr<std::map<std::string, std::string>> got =
      ReadUnprepareResponse(DraService::kV1, resp.SerializeAsString(), {});
  ASSERT_OK(got);
  EXPECT_EQ(*got, (std::map<std::string, std::string>{{"uid-1", "busy"}, {"uid-2", ""}}));
}

}  // namespace
}  // namespace devmgr::dra
