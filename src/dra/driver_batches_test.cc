// Batching per driver: one NodePrepareResources / NodeUnprepareResources call
// per driver with its claims in the pod's order, over fake drivers.
#include "dra/driver_batches.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status_testutil.h"
#include "common/temp_dir_testutil.h"
#include "dra/fake_driver_testutil.h"
#include "gtest/gtest.h"

namespace devmgr::dra {
namespace {

const Claim kC1{"ns", "uid-1", "c1"};
const Claim kC2{"ns", "uid-2", "c2"};
const Claim kC3{"ns", "uid-3", "c3"};
// c1, c2 served by A; c3 by A and B (the table of docs/profiles.md, "DRA").
const std::vector<ClaimDrivers> kPod = {{kC1, {"a"}}, {kC2, {"a"}}, {kC3, {"a", "b"}}};

TEST(BatchPerDriverTest, OneBatchPerDriverWithClaimsInOrder) {
  EXPECT_EQ(BatchPerDriver(kPod), (std::vector<DriverBatch>{{"a", {kC1, kC2, kC3}}, {"b", {kC3}}}));
  EXPECT_EQ(BatchPerDriver({{kC3, {"b", "a"}}, {kC1, {"a"}}}),
            (std::vector<DriverBatch>{{"b", {kC3}}, {"a", {kC3, kC1}}}));
  EXPECT_TRUE(BatchPerDriver({}).empty());
}

class DriverBatchesTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(a_.Start());
    ASSERT_TRUE(b_.Start());
    clients_["a"] =
        std::make_shared<DraClient>("a", a_.path(), DraService::kV1, DraClientOptions{});
    clients_["b"] =
        std::make_shared<DraClient>("b", b_.path(), DraService::kV1beta1, DraClientOptions{});
  }
  ClientLookup Lookup() {
    return [this](const std::string& driver) -> absl::StatusOr<std::shared_ptr<DraClient>> {
      auto it = clients_.find(driver);
      if (it == clients_.end())
        return absl::NotFoundError("DRA driver " + driver + " is not registered");
      return it->second;
    };
  }

  devmgr::testutil::TempDir dir_;
  testutil::FakeDraDriver a_{dir_.Join("a.sock")};
  testutil::FakeDraDriver b_{dir_.Join("b.sock")};
  std::map<std::string, std::shared_ptr<DraClient>> clients_;
};

TEST_F(DriverBatchesTest, PreparesWithOneCallPerDriver) {
  absl::StatusOr<PreparedPerDriver> got = PrepareResources(Lookup(), kPod);
  ASSERT_OK(got);
  EXPECT_EQ(got->at("a").size(), 3u);
  EXPECT_EQ(got->at("b").size(), 1u);
  EXPECT_EQ(got->at("b").at("uid-3")[0].device_name, "dev-uid-3");
  ASSERT_EQ(a_.Calls().size(), 1u);
  EXPECT_EQ(a_.Calls()[0].claim_uids, std::vector<std::string>({"uid-1", "uid-2", "uid-3"}));
  ASSERT_EQ(b_.Calls().size(), 1u);
  EXPECT_EQ(b_.Calls()[0].method, testutil::kV1beta1Prepare);
  EXPECT_EQ(b_.Calls()[0].claim_uids, std::vector<std::string>({"uid-3"}));
}

TEST_F(DriverBatchesTest, UnpreparesWithOneCallPerDriver) {
  ASSERT_OK(UnprepareResources(Lookup(), kPod));
  ASSERT_EQ(a_.Calls().size(), 1u);
  EXPECT_EQ(a_.Calls()[0].method, testutil::kV1Unprepare);
  EXPECT_EQ(a_.Calls()[0].claim_uids, std::vector<std::string>({"uid-1", "uid-2", "uid-3"}));
  ASSERT_EQ(b_.Calls().size(), 1u);
  EXPECT_EQ(b_.Calls()[0].claim_uids, std::vector<std::string>({"uid-3"}));
}

TEST_F(DriverBatchesTest, AnUnregisteredDriverFailsBeforeAnyCall) {
  std::vector<ClaimDrivers> pod = kPod;
  pod.push_back({{"ns", "uid-4", "c4"}, {"gone"}});
  EXPECT_EQ(PrepareResources(Lookup(), pod).status().message(),
            "DRA driver gone is not registered");
  EXPECT_EQ(UnprepareResources(Lookup(), pod).message(), "DRA driver gone is not registered");
  EXPECT_TRUE(a_.Calls().empty());
  EXPECT_TRUE(b_.Calls().empty());
}

TEST_F(DriverBatchesTest, ADriversFailureIsReturnedAsIs) {
  b_.SetPrepare([](const testutil::drav1::NodePrepareResourcesRequest& req,
                   testutil::drav1::NodePrepareResourcesResponse* r) {
    (*r->mutable_claims())[req.claims(0).uid()].set_error("out of memory");
    return grpc::Status::OK;
  });
  EXPECT_EQ(PrepareResources(Lookup(), kPod).status().message(),
            "NodePrepareResources failed for ResourceClaim c3: out of memory");
  EXPECT_EQ(a_.Calls().size(), 1u);
}

}  // namespace
}  // namespace devmgr::dra
