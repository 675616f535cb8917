#include "checkpoint/inspect.h"

#include <string>

#include "checkpoint/checkpoint_testutil.h"
#include "common/status_testutil.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::checkpoint {
namespace {

using ::testing::ElementsAre;

Checkpoint Golden(const std::string& name) {
  VerifyResult r = Verify(testing::ReadFileOrDie(testing::TestDataDir() + "/" + name));
  EXPECT_TRUE(r.parsed) << name << ": " << r.error;
  return r.checkpoint;
}

PodDevicesEntry Entry(std::string pod, std::string c, std::string res,
                      std::map<int64_t, DeviceList> devs) {
  return PodDevicesEntry{std::move(pod), std::move(c), std::move(res), std::move(devs),
                         std::string()};
}

TEST(DecodeAllocResp, AllFieldsSorted) {
  v1beta1::ContainerAllocateResponse r;
  (*r.mutable_envs())["B"] = "2";
  (*r.mutable_envs())["A"] = "1";
  auto* m = r.add_mounts();
  m->set_container_path("/c");
  m->set_host_path("/h");
  m->set_read_only(true);
  auto* d = r.add_devices();
  d->set_container_path("/dev/x");
  d->set_host_path("/dev/y");
  d->set_permissions("rw");
  (*r.mutable_annotations())["k"] = "v";
  r.add_cdi_devices()->set_name("vendor.com/gpu=0");
  const AllocRespView v = DecodeAllocResp(r.SerializeAsString());
  ASSERT_TRUE(v.ok);
  EXPECT_EQ(v.envs, (std::vector<std::pair<std::string, std::string>>{{"A", "1"}, {"B", "2"}}));
  ASSERT_EQ(v.mounts.size(), 1u);
  EXPECT_TRUE(v.mounts[0].read_only);
  EXPECT_EQ(v.devices[0].permissions, "rw");
  EXPECT_EQ(v.annotations[0].second, "v");
  EXPECT_THAT(v.cdi_devices, ElementsAre("vendor.com/gpu=0"));
  EXPECT_FALSE(DecodeAllocResp(std::string("\xFF\xFF\xFF", 3)).ok);
  EXPECT_TRUE(DecodeAllocResp("").ok);
}

TEST(Warnings, DoubleAllocationAcrossPodsAndUnregistered) {
  CheckpointData d;
  d.pod_device_entries = std::vector<PodDevicesEntry>{
      Entry("p1", "a", "r", {{0, std::vector<std::string>{"d1"}}}),
      Entry("p1", "b", "r", {{0, std::vector<std::string>{"d1"}}}),  // same pod: fine
      Entry("p2", "c", "r", {{1, std::vector<std::string>{"d1", "d9"}}}),
  };
  d.registered_devices = std::map<std::string, DeviceList>{{"r", std::vector<std::string>{"d1"}}};
  EXPECT_THAT(
      Warnings(d),
      ElementsAre(
          "double allocation: device r/d1 is held by pod p1 container a and pod p2 container c",
          "device r/d9 allocated to pod p2 container c is not in RegisteredDevices"));
  EXPECT_TRUE(Warnings(Golden("v2-multi-resource.json").data).empty());
}

TEST(DropPods, RemovesEntriesAndNilsEmptyList) {
  Checkpoint cp = Golden("v2-multi-resource.json");
  const std::string first = cp.data.pod_device_entries->at(0).pod_uid;
  const size_t before = cp.data.pod_device_entries->size();
  const std::vector<size_t> n = DropPods(&cp, {first, "nope"});
  ASSERT_EQ(n.size(), 2u);
  EXPECT_GE(n[0], 1u);
  EXPECT_EQ(n[1], 0u);
  EXPECT_EQ(cp.data.pod_device_entries->size(), before - n[0]);
  EXPECT_FALSE(ChecksumMatches(cp));
  Rechecksum(&cp);
  EXPECT_TRUE(ChecksumMatches(cp));

  Checkpoint single = Golden("v2-single-gpu-numa0.json");
  DropPods(&single, {single.data.pod_device_entries->at(0).pod_uid});
  EXPECT_FALSE(single.data.pod_device_entries.has_value());

  Checkpoint v1 = Golden("v1-multi.json");
  EXPECT_EQ(DropPods(&v1, {v1.data_v1.pod_device_entries->at(0).pod_uid})[0], 1u);
}

TEST(ConvertV2ToV1, ConcatenatesNumaListsAndVerifiesAsV1) {
  Checkpoint v2 = Golden("v2-numa-sort-numeric.json");
  Checkpoint v1 = ConvertV2ToV1(v2);
  EXPECT_EQ(v1.format, FormatVersion::kV1);
  EXPECT_TRUE(ChecksumMatches(v1));
  auto back = DecodeV1(Encode(v1));
  ASSERT_OK(back);
  EXPECT_TRUE(ChecksumMatches(*back));
  size_t total = 0;
  for (const auto& [node, ids] : *v2.data.pod_device_entries->at(0).device_ids)
    total += ids ? ids->size() : 0;
  EXPECT_EQ(v1.data_v1.pod_device_entries->at(0).device_ids->size(), total);
}

TEST(Diff, ReportsSemanticChanges) {
  const Checkpoint a = Golden("v2-single-gpu-numa0.json");
  EXPECT_TRUE(Diff(a, a).empty());
  EXPECT_THAT(
      Diff(a, Golden("bad-numa-moved.json")),
      ElementsAre(
          "~ entry pod=9a15d2b5-c152-46b9-96e0-d57032629e1f container=app resource=nvidia.com/gpu: "
          "device GPU-77a702db-e37f-3a74-d46d-c5713f66058c moved NUMA 0 -> 1"));
  const auto edited = Diff(a, Golden("bad-device-edited.json"));
  ASSERT_EQ(edited.size(), 2u);
  EXPECT_THAT(edited[0], ::testing::HasSubstr("removed (NUMA 0)"));
  EXPECT_THAT(edited[1], ::testing::HasSubstr("added (NUMA 0)"));
  EXPECT_THAT(Diff(Golden("v2-multi-resource.json"), Golden("v2-multi-resource-reordered.json")),
              ElementsAre("~ entries reordered (the checksum covers the order)"));
  const auto from_empty = Diff(Golden("v2-registered-only.json"), a);
  ASSERT_FALSE(from_empty.empty());
  EXPECT_THAT(from_empty[0], ::testing::HasSubstr("~ PodDeviceEntries: null -> []"));
  EXPECT_THAT(from_empty[1], ::testing::StartsWith("+ entry pod=9a15d2b5"));
  EXPECT_THAT(Diff(Golden("v1-single.json"), ConvertV1ToV2(Golden("v1-single.json"))),
              ElementsAre("~ format: v1 -> v2"));
}

TEST(Printable, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(Printable("GPU-0"), "GPU-0");
  EXPECT_EQ(Printable("中"), "中");
  EXPECT_EQ(Printable(""), "\"\"");
  EXPECT_EQ(Printable("a b"), "\"a b\"");
  EXPECT_EQ(Printable("x\n"), "\"x\\n\"");
}

}  // namespace
}  // namespace devmgr::checkpoint
