// Known-good checksums of the current and the V1 format
// (docs/checkpoint_format.md) built from typed data, plus rendering details.
#include "checkpoint/checksum.h"

#include <string>

#include "checkpoint/checkpoint.h"
#include "common/status_testutil.h"
#include "gtest/gtest.h"

namespace devmgr::checkpoint {
namespace {

constexpr char kHead[] =
    "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)";

CheckpointData Data(std::optional<std::vector<PodDevicesEntry>> entries, RegisteredDevices reg) {
  CheckpointData d;
  d.pod_device_entries = std::move(entries);
  d.registered_devices = std::move(reg);
  return d;
}

std::string Bytes(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s.push_back(static_cast<char>(b));
  return s;
}

std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

TEST(Fnv1a32, KnownVectors) {
  EXPECT_EQ(Fnv1a32(""), 2166136261u);
  EXPECT_EQ(Fnv1a32("a"), 0xe40c292cu);
  EXPECT_EQ(Fnv1a32("foobar"), 0xbf9cf968u);
}

TEST(ReferenceRows, EmptyVariants) {
  EXPECT_EQ(SpewV2(Data(std::nullopt, std::map<std::string, DeviceList>{})),
            std::string(kHead) + "<nil> RegisteredDevices:(map[string][]string)map[]}");
  EXPECT_EQ(ComputeChecksum(Data(std::nullopt, std::map<std::string, DeviceList>{})), 3467439661u);
  EXPECT_EQ(
      ComputeChecksum(Data(std::vector<PodDevicesEntry>{}, std::map<std::string, DeviceList>{})),
      2932075448u);
  EXPECT_EQ(ComputeChecksum(Data(std::nullopt, std::nullopt)), 1944006890u);
  EXPECT_EQ(ComputeChecksum(Data(std::nullopt,
                                 std::map<std::string, DeviceList>{
                                     {"domain1.com/resource1", std::vector<std::string>{}}})),
            2587687803u);
  EXPECT_EQ(
      ComputeChecksum(Data(std::nullopt, std::map<std::string, DeviceList>{{"r", std::nullopt}})),
      1484972700u);
}

TEST(ReferenceRows, EntryWithNils) {
  PodDevicesEntry e{"p", "c", "a.b/c", std::nullopt, std::nullopt};
  const CheckpointData d =
      Data(std::vector<PodDevicesEntry>{e}, std::map<std::string, DeviceList>{});
  EXPECT_EQ(SpewV2(d), std::string(kHead) +
                           "[{PodUID:(string)p ContainerName:(string)c ResourceName:(string)a.b/c "
                           "DeviceIDs:(checkpoint.DevicesPerNUMA)<nil> AllocResp:([]uint8)<nil>}] "
                           "RegisteredDevices:(map[string][]string)map[]}");
  EXPECT_EQ(ComputeChecksum(d), 3253697370u);
}

TEST(ReferenceRows, NumericNumaOrderAndUnquotedStrings) {
  PodDevicesEntry e{"p", "c", "a.b/c",
                    std::map<int64_t, DeviceList>{{10, std::vector<std::string>{"x y"}},
                                                  {2, std::vector<std::string>{"z"}},
                                                  {-1, std::vector<std::string>{"w"}}},
                    std::string()};
  const CheckpointData d =
      Data(std::vector<PodDevicesEntry>{e},
           std::map<std::string, DeviceList>{{"b", std::vector<std::string>{"1"}},
                                             {"a", std::vector<std::string>{"2", "1"}}});
  const std::string spew = SpewV2(d);
  EXPECT_NE(
      spew.find(
          "DeviceIDs:(checkpoint.DevicesPerNUMA)map[-1:[w] 2:[z] 10:[x y]] "
          "AllocResp:([]uint8)[]}] RegisteredDevices:(map[string][]string)map[a:[2 1] b:[1]]}"),
      std::string::npos)
      << spew;
  EXPECT_EQ(ComputeChecksum(d), 1932578016u);
}

TEST(ReferenceRows, TwoEntries) {
  PodDevicesEntry a{"pod1", "con1", "domain1.com/resource1",
                    std::map<int64_t, DeviceList>{{-1, std::vector<std::string>{"dev3"}},
                                                  {0, std::vector<std::string>{"dev1", "dev2"}}},
                    Bytes({10, 12, 10, 4, 107, 101, 121, 49, 18, 4, 118, 97, 108, 49})};
  PodDevicesEntry b{"pod1", "con1", "domain2.com/resource2",
                    std::map<int64_t, DeviceList>{{1, std::vector<std::string>{"dev4"}}},
                    std::string()};
  const CheckpointData d =
      Data(std::vector<PodDevicesEntry>{a, b},
           std::map<std::string, DeviceList>{
               {"domain1.com/resource1", std::vector<std::string>{"dev1", "dev2", "dev3"}},
               {"domain2.com/resource2", std::vector<std::string>{"dev4"}}});
  EXPECT_EQ(SpewV2(d),
            "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[{PodUID:("
            "string)pod1 "
            "ContainerName:(string)con1 ResourceName:(string)domain1.com/resource1 "
            "DeviceIDs:(checkpoint.DevicesPerNUMA)map[-1:[dev3] 0:[dev1 dev2]] "
            "AllocResp:([]uint8)[10 12 10 4 "
            "107 101 121 49 18 4 118 97 108 49]} {PodUID:(string)pod1 ContainerName:(string)con1 "
            "ResourceName:(string)domain2.com/resource2 "
            "DeviceIDs:(checkpoint.DevicesPerNUMA)map[1:[dev4]] "
            "AllocResp:([]uint8)[]}] "
            "RegisteredDevices:(map[string][]string)map[domain1.com/resource1:[dev1 "
            "dev2 dev3] domain2.com/resource2:[dev4]]}");
  EXPECT_EQ(ComputeChecksum(d), 2659151258u);
}

TEST(ReferenceRows, GpuWithExampleAllocResp) {
  PodDevicesEntry e{
      "7f1e5e9c-0000-4000-8000-000000000001", "cuda", "nvidia.com/gpu",
      std::map<int64_t, DeviceList>{{0, std::vector<std::string>{"GPU-0"}},
                                    {1, std::vector<std::string>{"GPU-1"}}},
      FromHex("0a0e0a0756495349424c451203302c31120a0a022f6312022f6818011a140a062f6465762f78"
              "12062f6465762f781a02727722060a01611201622a120a1076656e646f722e636f6d2f677075"
              "3d30")};
  const CheckpointData d =
      Data(std::vector<PodDevicesEntry>{e},
           std::map<std::string, DeviceList>{
               {"nvidia.com/gpu", std::vector<std::string>{"GPU-0", "GPU-1", "GPU-2"}}});
  EXPECT_EQ(ComputeChecksum(d), 359068105u);
}

TEST(ReferenceRows, V1Golden) {
  const std::string file =
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"pod1","ContainerName":"con1","ResourceName":"domain1.com/resource1","DeviceIDs":["dev1","dev2"],"AllocResp":""}],"RegisteredDevices":{"domain1.com/resource1":["dev1","dev2"]}},"Checksum":2622669051})";
  auto cp = DecodeV1(file);
  ASSERT_OK(cp);
  EXPECT_EQ(ComputeChecksumV1(cp->data_v1), 2622669051u);
  EXPECT_TRUE(ChecksumMatches(*cp));
  EXPECT_NE(SpewV1(cp->data_v1).find("DeviceIDs:([]string)[dev1 dev2]"), std::string::npos);
  EXPECT_EQ(Encode(*cp), file);
  EXPECT_FALSE(DecodeV2(file).ok());
}

TEST(SpewV1, RenamesTypeNameInsideUserStrings) {
  CheckpointDataV1 d;
  d.pod_device_entries =
      std::vector<PodDevicesEntryV1>{{"xPodDevicesEntryV1PodDevicesEntryV1y", "checkpointDataV1",
                                      "r", std::nullopt, std::nullopt}};
  const std::string s = SpewV1(d);
  EXPECT_NE(s.find("PodUID:(string)xPodDevicesEntryPodDevicesEntryy "), std::string::npos) << s;
  // Only the first checkpointDataV1 (the type name) is renamed.
  EXPECT_NE(s.find("ContainerName:(string)checkpointDataV1 "), std::string::npos) << s;
  EXPECT_EQ(ComputeChecksumV1(d), Fnv1a32(s));
}

TEST(SpewV2, BytesAreDecimalAndStringsRaw) {
  PodDevicesEntry e{"a b", "\n", "<nil>", std::map<int64_t, DeviceList>{{INT64_MIN, std::nullopt}},
                    Bytes({0, 9, 10, 99, 100, 255})};
  const std::string s = SpewV2(Data(std::vector<PodDevicesEntry>{e}, std::nullopt));
  EXPECT_NE(s.find("{PodUID:(string)a b ContainerName:(string)\n ResourceName:(string)<nil> "
                   "DeviceIDs:(checkpoint.DevicesPerNUMA)map[-9223372036854775808:<nil>] "
                   "AllocResp:([]uint8)[0 9 10 99 100 255]}"),
            std::string::npos)
      << s;
  EXPECT_EQ(ComputeChecksum(Data(std::vector<PodDevicesEntry>{e}, std::nullopt)), Fnv1a32(s));
}

}  // namespace
}  // namespace devmgr::checkpoint
