// The 60 golden checkpoint files of tests/testdata/checkpoint:
// verdict, format, stored and computed checksum, spew text, and exact
// re-encoding of the files json.Marshal wrote.
#include <string>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_testutil.h"
#include "common/status_testutil.h"
#include "gtest/gtest.h"

namespace devmgr::checkpoint {
namespace {

using testing::ManifestRow;
using testing::ReadFileOrDie;
using testing::ReadManifest;
using testing::TestDataDir;

class GoldenTest : public ::testing::TestWithParam<ManifestRow> {};

TEST_P(GoldenTest, VerdictChecksumAndSpew) {
  const ManifestRow& row = GetParam();
  const std::string bytes = ReadFileOrDie(TestDataDir() + "/" + row.file);
  ASSERT_FALSE(bytes.empty()) << row.file;
  const VerifyResult r = Verify(bytes);
  EXPECT_EQ(r.valid, row.verdict == "OK") << row.file << ": " << row.description;
  if (row.stored == "-") {
    EXPECT_FALSE(r.parsed);
    EXPECT_FALSE(r.error.empty());
    return;
  }
  ASSERT_TRUE(r.parsed) << r.error;
  if (row.file == "v1-null-entries.json") {
    // A V1 file without entries is also a valid V2 file with the same text;
    // detection reports V2 (as the oracle does), and V1 verifies too.
    EXPECT_EQ(r.format, FormatVersion::kV2);
    auto v1 = DecodeV1(bytes);
    ASSERT_OK(v1);
    EXPECT_TRUE(ChecksumMatches(*v1));
    EXPECT_EQ(SpewV1(v1->data_v1), ReadFileOrDie(TestDataDir() + "/" + row.spew));
  } else {
    EXPECT_EQ(r.format == FormatVersion::kV1 ? "v1" : "v2", row.format);
  }
  EXPECT_EQ(std::to_string(r.stored), row.stored);
  EXPECT_EQ(std::to_string(r.computed), row.correct);
  const std::string spew =
      r.format == FormatVersion::kV1 ? SpewV1(r.checkpoint.data_v1) : SpewV2(r.checkpoint.data);
  EXPECT_EQ(spew, ReadFileOrDie(TestDataDir() + "/" + row.spew));
}

TEST_P(GoldenTest, MarshalledFilesReEncodeByteForByte) {
  const ManifestRow& row = GetParam();
  // The reader-quirk files were written by hand, not by json.Marshal.
  if (row.file.rfind("v2-reader-", 0) == 0 || row.stored == "-" ||
      row.file == "bad-checksum-missing.json") {
    GTEST_SKIP() << "not json.Marshal output";
  }
  const std::string bytes = ReadFileOrDie(TestDataDir() + "/" + row.file);
  const VerifyResult r = Verify(bytes);
  ASSERT_TRUE(r.parsed) << r.error;
  EXPECT_EQ(Encode(r.checkpoint), bytes);
}

std::string RowName(const ::testing::TestParamInfo<ManifestRow>& info) {
  std::string name = info.param.file.substr(0, info.param.file.size() - 5);
  for (char& c : name) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Manifest, GoldenTest, ::testing::ValuesIn(ReadManifest()), RowName);

TEST(GoldenManifest, HasSixtyRows) {
  const auto rows = ReadManifest();
  EXPECT_EQ(rows.size(), 60u);
  int ok = 0;
  for (const auto& r : rows) ok += r.verdict == "OK";
  EXPECT_EQ(ok, 47);
}

struct RealFile {
  const char* name;
  bool valid;
  FormatVersion format;
};

TEST(RealFiles, VerdictsMatchTheKubelet) {
  const RealFile files[] = {
      {"real/multus-cni-2018.v1.json", true, FormatVersion::kV1},
      {"real/cpu-pooler-fixture-2019.v1.json", false, FormatVersion::kV1},
      {"real/cpu-pooler-fixture-2021.v2.json", false, FormatVersion::kV2},
  };
  for (const RealFile& f : files) {
    const VerifyResult r = Verify(ReadFileOrDie(TestDataDir() + "/" + f.name));
    ASSERT_TRUE(r.parsed) << f.name << ": " << r.error;
    EXPECT_EQ(r.valid, f.valid) << f.name;
    EXPECT_EQ(r.format, f.format) << f.name;
  }
  const VerifyResult multus =
      Verify(ReadFileOrDie(TestDataDir() + "/real/multus-cni-2018.v1.json"));
  EXPECT_EQ(multus.computed, 229855270u);
  const VerifyResult pooler =
      Verify(ReadFileOrDie(TestDataDir() + "/real/cpu-pooler-fixture-2021.v2.json"));
  EXPECT_EQ(pooler.stored, 403603645u);
  EXPECT_EQ(pooler.computed, 3162097514u);
}

}  // namespace
}  // namespace devmgr::checkpoint
