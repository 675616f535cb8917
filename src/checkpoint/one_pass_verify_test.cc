// OnePassVerifyV2 / VerifyOnly against the general decoder: on every file
// the two give the same verdict, format and checksums, and the one-pass
// reader takes the files written in json.Marshal's layout (so that the
// comparison exercises it) and leaves every other file to the decoder.
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_testutil.h"
#include "checkpoint/checksum.h"
#include "common/status_testutil.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace devmgr::checkpoint {
namespace {

// VerifyOnly gives Verify's fields, and when the one-pass reader accepts
// the bytes its checksums are the decoder's.
void ExpectSameAsVerify(const std::string& bytes, const std::string& what) {
  SCOPED_TRACE(what);
  const VerifyResult full = Verify(bytes);
  const VerifyResult only = VerifyOnly(bytes);
  EXPECT_EQ(only.parsed, full.parsed);
  EXPECT_EQ(only.valid, full.valid);
  EXPECT_EQ(only.format, full.format);
  EXPECT_EQ(only.stored, full.stored);
  EXPECT_EQ(only.computed, full.computed);
  EXPECT_EQ(only.error, full.error);
  uint64_t stored = 0, computed = 0;
  if (OnePassVerifyV2(bytes, &stored, &computed)) {
    auto v2 = DecodeV2(bytes);
    ASSERT_OK(v2) << ": the one pass accepted what the decoder rejects";
    EXPECT_EQ(stored, v2->checksum);
    EXPECT_EQ(computed, ComputeChecksum(v2->data));
  }
}

bool OnePass(const std::string& bytes) {
  uint64_t stored = 0, computed = 0;
  return OnePassVerifyV2(bytes, &stored, &computed) && stored == computed;
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  }
  return out;
}

TEST(OnePassVerify, TestdataAndGoldenFilesAgreeWithTheDecoder) {
  // The golden corpus and, in real/, files real kubelets and projects wrote.
  std::vector<std::string> files = FilesIn(testing::TestDataDir());
  ASSERT_FALSE(files.empty());
  const std::vector<std::string> real = FilesIn(testing::TestDataDir() + "/real");
  ASSERT_FALSE(real.empty());
  files.insert(files.end(), real.begin(), real.end());
  int one_pass = 0;
  for (const std::string& f : files) {
    const std::string bytes = testing::ReadFileOrDie(f);
    ExpectSameAsVerify(bytes, f);
    one_pass += OnePass(bytes);
  }
  // The kubelet-written good files are in json.Marshal's layout.
  EXPECT_GT(one_pass, 0);
}

CheckpointData Sample() {
  CheckpointData d;
  d.pod_device_entries.emplace();
  for (int i = 0; i < 3; ++i) {
    PodDevicesEntry e;
    e.pod_uid = fmt::format("uid-{}", i);
    e.container_name = "app";
    e.resource_name = "vendor.com/gpu";
    e.device_ids = std::map<int64_t, DeviceList>{{-1, std::vector<std::string>{"d0"}},
                                                 {0, std::vector<std::string>{"d1", "d2"}},
                                                 {1, std::vector<std::string>{}},
                                                 {7, std::nullopt}};
    e.alloc_resp = std::string("\x0a\x02\x08\x01\xff\x00\x7f", 7 - (i % 3));
    d.pod_device_entries->push_back(e);
  }
  d.registered_devices = std::map<std::string, DeviceList>{
      {"a.com/x", std::vector<std::string>{"d0", "d1"}}, {"b.com/y", std::nullopt}};
  return d;
}

TEST(OnePassVerify, TakesJsonMarshalLayoutWithEveryNilAndEmptyForm) {
  std::vector<CheckpointData> cases;
  cases.push_back(Sample());
  CheckpointData d = Sample();
  d.pod_device_entries = std::nullopt;
  d.registered_devices = std::nullopt;
  cases.push_back(d);
  d = Sample();
  d.pod_device_entries->clear();
  d.registered_devices->clear();
  cases.push_back(d);
  d = Sample();
  (*d.pod_device_entries)[0].alloc_resp = std::nullopt;
  (*d.pod_device_entries)[1].alloc_resp = std::string();
  (*d.pod_device_entries)[1].device_ids = std::nullopt;
  (*d.pod_device_entries)[2].device_ids.emplace();
  cases.push_back(d);
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string bytes = Encode(MakeV2(cases[i]));
    EXPECT_TRUE(OnePass(bytes)) << "case " << i << ": " << bytes;
    ExpectSameAsVerify(bytes, fmt::format("case {}", i));
    // With a BootID and a trailing newline, still in the layout.
    Checkpoint cp = MakeV2(cases[i]);
    cp.boot_id = "3c2b-boot";
    const std::string with_boot = Encode(cp) + "\n";
    EXPECT_TRUE(OnePass(with_boot)) << with_boot;
    ExpectSameAsVerify(with_boot, fmt::format("case {} with BootID", i));
  }
}

TEST(OnePassVerify, LeavesOtherLayoutsToTheDecoder) {
  CheckpointData d = Sample();
  // NUMA keys whose text order is not their numeric order ("10" < "2").
  (*d.pod_device_entries)[0].device_ids = std::map<int64_t, DeviceList>{
      {2, std::vector<std::string>{"a"}}, {10, std::vector<std::string>{"b"}}};
  // A string json.Marshal escapes, and one with non-ASCII bytes.
  (*d.pod_device_entries)[1].container_name = "a<b>\"c\\";
  (*d.pod_device_entries)[2].pod_uid = "\xc3\xa9t\xc3\xa9";
  const std::string bytes = Encode(MakeV2(d));
  EXPECT_FALSE(OnePass(bytes));
  ExpectSameAsVerify(bytes, "escapes, non-ASCII, NUMA 10 before 2");
  const std::string good = Encode(MakeV2(Sample()));
  for (const std::string& other : {" " + good, "{\"Data\": " + good.substr(8), good + "x"}) {
    EXPECT_FALSE(OnePass(other));
    ExpectSameAsVerify(other, other.substr(0, 40));
  }
  // Keys in another case or order are decoded by Go's rules.
  std::string lower = good;
  lower.replace(lower.find("\"PodUID\""), 8, "\"poduid\"");
  EXPECT_FALSE(OnePass(lower));
  ExpectSameAsVerify(lower, "lower-case key");
}

TEST(OnePassVerify, MismatchesAndV1FilesGetTheDecodersVerdict) {
  Checkpoint cp = MakeV2(Sample());
  cp.checksum += 1;
  const std::string bad = Encode(cp);
  const VerifyResult r = VerifyOnly(bad);
  EXPECT_TRUE(r.parsed);
  EXPECT_FALSE(r.valid);
  ExpectSameAsVerify(bad, "checksum + 1");
  Checkpoint v1;
  v1.format = FormatVersion::kV1;
  v1.data_v1.pod_device_entries.emplace();
  v1.data_v1.pod_device_entries->push_back(
      {"uid", "app", "vendor.com/gpu", std::vector<std::string>{"d0"}, std::string("\x01", 1)});
  v1.data_v1.registered_devices.emplace();
  v1.checksum = ComputeChecksumV1(v1.data_v1);
  const std::string v1_bytes = Encode(v1);
  const VerifyResult rv1 = VerifyOnly(v1_bytes);
  EXPECT_TRUE(rv1.valid);
  EXPECT_EQ(rv1.format, FormatVersion::kV1);
  ExpectSameAsVerify(v1_bytes, "v1");
}

TEST(OnePassVerify, RandomByteEditsAgreeWithTheDecoder) {
  const std::string good = Encode(MakeV2(Sample()));
  std::mt19937 rng(15);
  const std::string alphabet = "{}[]\",:0123456789-nul AZaz=+/\\";
  for (int i = 0; i < 3000; ++i) {
    std::string b = good;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits && !b.empty(); ++k) {
      const size_t at = rng() % b.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          b[at] = c;
          break;
        case 1:
          b.erase(at, 1);
          break;
        default:
          b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), c);
      }
    }
    ExpectSameAsVerify(b, fmt::format("edit {}: {}", i, b));
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace devmgr::checkpoint
