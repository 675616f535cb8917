#include "common/fs.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/fs_testutil.h"
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::fs {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Op = FaultInjectingFs::Op;

class FsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/devmgr-fs-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string Slurp(const std::string& path) const {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string dir_;
};

TEST_F(FsTest, MkdirAllMakesEveryMissingLevelAndAcceptsAnExistingDirectory) {
  const std::string deep = dir_ + "/a/b/c";
  ASSERT_OK(MkdirAll(*Default(), deep, 0750));
  EXPECT_TRUE(std::filesystem::is_directory(deep));
  struct stat st;
  ASSERT_EQ(::stat((dir_ + "/a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777 & ~0750, 0u);
  EXPECT_OK(MkdirAll(*Default(), deep, 0750));
  EXPECT_OK(MkdirAll(*Default(), deep + "/", 0750));
}

TEST_F(FsTest, MkdirAllOverAFileIsNotADirectory) {
  ASSERT_OK(WriteFileAtomically(*Default(), dir_ + "/f", "x"));
  const absl::Status s = MkdirAll(*Default(), dir_ + "/f", 0750);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "mkdir " + dir_ + "/f: not a directory");
  EXPECT_FALSE(MkdirAll(*Default(), dir_ + "/f/g", 0750).ok());
}

TEST_F(FsTest, MkdirAllReportsAnInjectedError) {
  FaultInjectingFs faults;
  faults.Fail(Op::kMkdir, EACCES);
  const absl::Status s = MkdirAll(faults, dir_ + "/x/y", 0750);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "mkdir " + dir_ + "/x: permission denied");
  EXPECT_THAT(Names(), IsEmpty());
}

TEST_F(FsTest, AtomicWriteReplacesTheFileWithTheGivenMode) {
  const std::string path = dir_ + "/status.json";
  ASSERT_OK(WriteFileAtomically(*Default(), path, "one"));
  AtomicWriteOptions o;
  o.fsync = false;
  o.mode = 0644;
  ASSERT_OK(WriteFileAtomically(*Default(), path, "two", o));
  EXPECT_EQ(Slurp(path), "two");
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_THAT(Names(), ElementsAre("status.json"));
}

TEST_F(FsTest, AtomicWriteSyncsFileAndDirectoryOnlyWhenAsked) {
  FaultInjectingFs faults;
  ASSERT_OK(WriteFileAtomically(faults, dir_ + "/f", "x"));
  EXPECT_EQ(faults.Calls(Op::kSync), 1);
  EXPECT_EQ(faults.Calls(Op::kSyncDir), 1);
  AtomicWriteOptions o;
  o.fsync = false;
  ASSERT_OK(WriteFileAtomically(faults, dir_ + "/f", "y", o));
  EXPECT_EQ(faults.Calls(Op::kSync), 1);
  EXPECT_EQ(faults.Calls(Op::kSyncDir), 1);
}

TEST_F(FsTest, EveryInjectedWriteFailureKeepsTheOldContentAndNoTempFile) {
  const std::string path = dir_ + "/f";
  ASSERT_OK(WriteFileAtomically(*Default(), path, "old"));
  for (Op op : {Op::kNewTempFile, Op::kAppend, Op::kSync, Op::kClose, Op::kRename}) {
    FaultInjectingFs faults;
    faults.Fail(op, op == Op::kAppend ? ENOSPC : EIO);
    const absl::Status s = WriteFileAtomically(faults, path, "new");
    EXPECT_FALSE(s.ok()) << static_cast<int>(op);
    EXPECT_EQ(Slurp(path), "old") << s;
    EXPECT_THAT(Names(), ElementsAre("f")) << s;
  }
}

TEST_F(FsTest, OutputFileIsAtomicWorldReadableAndLeavesNoTempFile) {
  const std::string path = dir_ + "/report.xml";
  ASSERT_OK(WriteOutputFile(path, "<a/>"));
  ASSERT_OK(WriteOutputFile(path, "<b/>"));
  EXPECT_EQ(Slurp(path), "<b/>");
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_THAT(Names(), ElementsAre("report.xml"));
}

TEST_F(FsTest, OutputFileWritesADeviceInPlace) {
  // /dev/null (or /dev/stdout) is written, never replaced by a regular file.
  ASSERT_OK(WriteOutputFile("/dev/null", "discarded"));
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(FsTest, OutputFileErrorNamesTheTarget) {
  const std::string path = dir_ + "/missing/report.json";
  absl::Status s = WriteOutputFile(path, "{}");
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::StartsWith("write " + path + ": "));
}

TEST_F(FsTest, ReadFileNamesTheFile) {
  absl::StatusOr<std::string> r = Default()->ReadFile(dir_ + "/missing");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "open " + dir_ + "/missing: no such file or directory");
  r = Default()->ReadFile(dir_);
  EXPECT_EQ(r.status().message(), "read " + dir_ + ": is a directory");
  FaultInjectingFs faults;
  faults.Fail(Op::kRead, EIO);
  EXPECT_EQ(faults.ReadFile(dir_ + "/x").status().message(),
            "read " + dir_ + "/x: input/output error");
}

}  // namespace
}  // namespace devmgr::fs
