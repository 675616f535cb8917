// CheckpointEncoder writes the bytes EncodeFile(NewCheckpoint(...)) writes,
// whatever changed since its previous call, for every state layout, and for
// names that Go's JSON escaping rewrites (quotes, HTML characters, control
// bytes, U+2028, invalid UTF-8).
#include "dra/checkpoint_encoder.h"

#include <string>
#include <vector>

#include "dra/checkpoint.h"
#include "gtest/gtest.h"

namespace devmgr::dra {
namespace {

ClaimInfoState EncoderState(int i, const std::string& name) {
  ClaimInfoState c;
  c.claim_uid = "uid-" + std::to_string(i);
  c.claim_name = name;
  c.namespace_ = "default";
  c.pod_uids = std::set<std::string>{"pod-" + std::to_string(i)};
  Device d;
  d.pool_name = "node-1";
  d.device_name = "gpu-" + std::to_string(i);
  if (i % 2 == 0) d.share_id = "share-" + std::to_string(i);
  d.request_names = std::vector<std::string>{"gpu"};
  d.cdi_device_ids = std::vector<std::string>{"example.com/gpu=" + name};
  DriverState ds;
  ds.devices = std::vector<Device>{d};
  if (i % 3 == 0) ds.skip_node_operations = std::vector<std::string>{"Prepare"};
  c.driver_state = std::map<std::string, DriverState>{{"gpu.example.com", ds}};
  return c;
}

std::vector<const ClaimInfoState*> Pointers(const std::vector<ClaimInfoState>& v) {
  std::vector<const ClaimInfoState*> out;
  for (const ClaimInfoState& c : v) out.push_back(&c);
  return out;
}

std::string Reference(const std::vector<ClaimInfoState>& v, StateLayout layout) {
  return EncodeFile(NewCheckpoint(v, layout));
}

class CheckpointEncoderTest : public testing::TestWithParam<StateLayout> {};

TEST_P(CheckpointEncoderTest, SameBytesAsTheWholeEncodingAcrossChanges) {
  const StateLayout layout = GetParam();
  CheckpointEncoder enc(layout);
  std::vector<ClaimInfoState> claims;
  EXPECT_EQ(std::string(enc.Encode({})), Reference(claims, layout));  // an empty cache: []

  const std::vector<std::string> names = {
      "plain",           "quote\"back\\slash", "<html>&amp;", "ctl\x01\x1f\n\t",
      "sep\xe2\x80\xa8", "bad\xff\xfeutf8",    "\xe2\x82",    "caf\xc3\xa9"};
  for (size_t i = 0; i < names.size(); ++i)
    claims.push_back(EncoderState(static_cast<int>(i), names[i]));
  EXPECT_EQ(std::string(enc.Encode(Pointers(claims))), Reference(claims, layout));
  // Again, all from the kept pieces.
  EXPECT_EQ(std::string(enc.Encode(Pointers(claims))), Reference(claims, layout));

  // One claim changes (another pod, a prepared device's CDI ID), one goes,
  // one comes, and the order changes.
  claims[1].pod_uids->insert("pod-x");
  (*claims[2].driver_state)["gpu.example.com"].devices->at(0).cdi_device_ids->push_back("x");
  claims.erase(claims.begin() + 3);
  claims.push_back(EncoderState(42, "new"));
  std::swap(claims[0], claims[4]);
  EXPECT_EQ(std::string(enc.Encode(Pointers(claims))), Reference(claims, layout));

  // A claim whose state is nil-versus-empty different only.
  claims[0].pod_uids = std::nullopt;
  claims[1].driver_state = std::map<std::string, DriverState>{};
  EXPECT_EQ(std::string(enc.Encode(Pointers(claims))), Reference(claims, layout));

  claims.clear();
  EXPECT_EQ(std::string(enc.Encode({})), Reference(claims, layout));
}

TEST_P(CheckpointEncoderTest, TwoStatesUnderOneUidAreBothWritten) {
  const StateLayout layout = GetParam();
  CheckpointEncoder enc(layout);
  std::vector<ClaimInfoState> claims = {EncoderState(1, "a"), EncoderState(1, "b"),
                                        EncoderState(1, "a")};
  EXPECT_EQ(std::string(enc.Encode(Pointers(claims))), Reference(claims, layout));
  claims.pop_back();
  EXPECT_EQ(std::string(enc.Encode(Pointers(claims))), Reference(claims, layout));
}

TEST(CheckpointEncoderChecksum, IsGosCrc32Ieee) {
  // Go: crc32.ChecksumIEEE([]byte("123456789")) == 0xcbf43926.
  EXPECT_EQ(Crc32Ieee("123456789"), 0xcbf43926u);
  EXPECT_EQ(Crc32Ieee(""), 0u);
}

INSTANTIATE_TEST_SUITE_P(Layouts, CheckpointEncoderTest,
                         testing::Values(StateLayout::k134, StateLayout::k135, StateLayout::k137));

}  // namespace
}  // namespace devmgr::dra
