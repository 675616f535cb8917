#include "doctor/checkpoint_doctor.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/time/time.h"
#include "checkpoint/checkpoint_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::doctor {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class CheckpointDoctorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/devmgr-doctor-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    file_ = dir_ + "/kubelet_internal_checkpoint";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Write(const std::string& bytes) {
    std::ofstream out(file_, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  static std::string Golden(const std::string& name) {
    return checkpoint::testing::ReadFileOrDie(checkpoint::testing::TestDataDir() + "/" + name);
  }

  std::string dir_;
  std::string file_;
};

TEST_F(CheckpointDoctorTest, ValidFileIsOkWithCounts) {
  Write(Golden("v2-multi-resource.json"));
  const Verdict v = Examine(file_);
  EXPECT_EQ(v.state, State::kOk) << v.summary;
  EXPECT_EQ(v.format, "v2");
  EXPECT_THAT(v.summary, StartsWith("OK v2 checksum "));
  EXPECT_GT(v.entries, 0);
  EXPECT_GT(v.pods, 0);
}

TEST_F(CheckpointDoctorTest, MissingFileIsAbsentNotAnError) {
  const Verdict v = Examine(file_);
  EXPECT_EQ(v.state, State::kAbsent);
  EXPECT_FALSE(std::filesystem::exists(file_)) << "the doctor must never create the file";
}

TEST_F(CheckpointDoctorTest, ChecksumMismatchIsCorrupt) {
  Write(Golden("bad-checksum-plus-one.json"));
  const Verdict v = Examine(file_);
  EXPECT_EQ(v.state, State::kCorrupt);
  EXPECT_THAT(v.summary, HasSubstr("checksum mismatch: stored"));
}

TEST_F(CheckpointDoctorTest, TruncatedFileIsCorrupt) {
  const std::string good = Golden("v2-multi-resource.json");
  Write(good.substr(0, good.size() / 2));
  const Verdict v = Examine(file_);
  EXPECT_EQ(v.state, State::kCorrupt);
  EXPECT_THAT(v.summary, HasSubstr("parse error"));
}

TEST_F(CheckpointDoctorTest, DirectoryIsUnreadable) {
  std::filesystem::create_directory(file_);
  EXPECT_EQ(Examine(file_).state, State::kUnreadable);
}

TEST_F(CheckpointDoctorTest, NeverModifiesTheFile) {
  const std::string bad = Golden("bad-checksum-plus-one.json");
  Write(bad);
  struct stat before;
  ASSERT_EQ(stat(file_.c_str(), &before), 0);
  CheckpointDoctor d(file_);
  for (int i = 0; i < 3; ++i) d.RunOnce(absl::FromUnixSeconds(100 + i));
  EXPECT_EQ(checkpoint::testing::ReadFileOrDie(file_), bad);
  struct stat after;
  ASSERT_EQ(stat(file_.c_str(), &after), 0);
  EXPECT_EQ(before.st_mtim.tv_sec, after.st_mtim.tv_sec);
  EXPECT_EQ(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
}

TEST_F(CheckpointDoctorTest, ReadinessFollowsTheLastVerdict) {
  CheckpointDoctor d(file_);
  std::string why;
  EXPECT_FALSE(d.Ready(&why));
  EXPECT_EQ(why, "not verified yet");

  d.RunOnce(absl::FromUnixSeconds(1));  // absent
  EXPECT_TRUE(d.Ready(&why)) << why;

  Write(Golden("bad-checksum-plus-one.json"));
  d.RunOnce(absl::FromUnixSeconds(2));
  EXPECT_FALSE(d.Ready(&why));
  EXPECT_THAT(why, HasSubstr("CORRUPT"));

  Write(Golden("v2-multi-resource.json"));
  d.RunOnce(absl::FromUnixSeconds(3));
  EXPECT_TRUE(d.Ready(&why)) << why;
}

TEST_F(CheckpointDoctorTest, MetricsCarryStateCountsAndTime) {
  CheckpointDoctor d(file_);
  Write(Golden("bad-checksum-plus-one.json"));
  d.RunOnce(absl::FromUnixSeconds(1700000000));
  d.RunOnce(absl::FromUnixSeconds(1700000060));
  const std::string m = d.RenderMetrics();
  const std::string p = "path=\"" + file_ + "\"";
  EXPECT_THAT(m, HasSubstr("# TYPE devmgr_checkpoint_state gauge\n"));
  EXPECT_THAT(m, HasSubstr("devmgr_checkpoint_state{" + p + ",state=\"corrupt\"} 1\n"));
  EXPECT_THAT(m, HasSubstr("devmgr_checkpoint_state{" + p + ",state=\"ok\"} 0\n"));
  EXPECT_THAT(m,
              HasSubstr("devmgr_checkpoint_verifications_total{" + p + ",result=\"corrupt\"} 2\n"));
  EXPECT_THAT(m, HasSubstr("devmgr_checkpoint_verifications_total{" + p + ",result=\"ok\"} 0\n"));
  EXPECT_THAT(m, HasSubstr("devmgr_checkpoint_last_verification_timestamp_seconds{" + p +
                           "} 1700000060\n"));
}

}  // namespace
}  // namespace devmgr::doctor
