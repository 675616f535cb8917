#include "checkpoint/file_store.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_testutil.h"
#include "common/fs_testutil.h"
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::checkpoint {
namespace {

class FileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/devmgr-fs-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (DIR* d = ::opendir(dir_.c_str())) {
      while (const dirent* e = ::readdir(d)) {
        const std::string n = e->d_name;
        if (n == "." || n == "..") continue;
        const std::string p = dir_ + "/" + n;
        if (::unlink(p.c_str()) != 0) ::rmdir(p.c_str());
      }
      ::closedir(d);
    }
    ::rmdir(dir_.c_str());
  }
  int CountEntries() {
    int n = 0;
    DIR* d = ::opendir(dir_.c_str());
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") ++n;
    }
    ::closedir(d);
    return n;
  }
  std::string dir_;
};

TEST_F(FileStoreTest, WriteReadRemoveAtomically) {
  for (bool fsync : {true, false}) {
    FileStore store(dir_, fsync);
    ASSERT_OK(store.Write(kCheckpointName, "hello"));
    ASSERT_OK(store.Write(kCheckpointName, "world!"));
    auto got = store.Read(kCheckpointName);
    ASSERT_OK(got);
    EXPECT_EQ(*got, "world!");
    struct stat st;
    ASSERT_EQ(::stat((dir_ + "/" + kCheckpointName).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(CountEntries(), 1);  // no temp file left
    ASSERT_OK(store.Remove(kCheckpointName));
    EXPECT_OK(store.Remove(kCheckpointName));
    EXPECT_TRUE(absl::IsNotFound(store.Read(kCheckpointName).status()));
  }
}

TEST_F(FileStoreTest, ListSkipsDotFilesAndDirectories) {
  FileStore store(dir_, false);
  ASSERT_OK(store.Write("b", "1"));
  ASSERT_OK(store.Write("a", "1"));
  std::ofstream(dir_ + "/.hidden") << "x";
  ASSERT_EQ(::mkdir((dir_ + "/sub").c_str(), 0700), 0);
  auto names = store.List();
  ASSERT_OK(names);
  EXPECT_EQ(*names, (std::vector<std::string>{"a", "b"}));
  auto dir_read = store.Read("sub");
  EXPECT_FALSE(dir_read.ok());
  EXPECT_NE(dir_read.status().message().find("is a directory"), std::string::npos);
}

// The kubelet's FileStore.Write begins with ensureDirectory: a directory it
// cannot stat is made again (os.MkdirAll, 0755).
TEST_F(FileStoreTest, WriteMakesAMissingDirectoryAgain) {
  const std::string dir = dir_ + "/gone/device-plugins";
  FileStore store(dir, false);
  ASSERT_OK(store.Write(kCheckpointName, "x"));
  EXPECT_EQ(*store.Read(kCheckpointName), "x");
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0755u & ~mask);
  ASSERT_EQ(::unlink((dir + "/" + kCheckpointName).c_str()), 0);
  ASSERT_EQ(::rmdir(dir.c_str()), 0);
  ASSERT_EQ(::rmdir((dir_ + "/gone").c_str()), 0);
}

// Something that is not a directory there: the stat succeeds, so nothing is
// made, and creating the temp file fails (os.CreateTemp's error).
TEST_F(FileStoreTest, AFileInPlaceOfTheDirectoryFailsAtTheTempFile) {
  std::ofstream(dir_ + "/file") << "x";
  FileStore store(dir_ + "/file", false);
  const absl::Status s = store.Write(kCheckpointName, "x");
  EXPECT_THAT(std::string(s.message()),
              ::testing::MatchesRegex("open " + dir_ + "/file/\\.[0-9]+: not a directory"));
}

// The temp file is os.CreateTemp(dir, "."): a dot and random digits, then
// renamed over the target.
TEST_F(FileStoreTest, TheTempFileIsNamedAsTheKubeletNamesIt) {
  using Op = fs::FaultInjectingFs::Op;
  fs::FaultInjectingFs faults;
  FileStore store(dir_, false, &faults);
  faults.Fail(Op::kRename, EIO);
  const absl::Status s = store.Write(kCheckpointName, "new");
  EXPECT_THAT(std::string(s.message()),
              ::testing::MatchesRegex("rename " + dir_ + "/\\.[0-9]+ " + dir_ + "/" +
                                      kCheckpointName + ": input/output error"));
  EXPECT_EQ(CountEntries(), 0);
}

TEST_F(FileStoreTest, FailedWriteLeavesNoTempFile) {
  // Rename over a directory fails after the temp file was written.
  ASSERT_EQ(::mkdir((dir_ + "/target").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((dir_ + "/target/x").c_str(), 0700), 0);
  FileStore store2(dir_, false);
  const absl::Status s = store2.Write("target", "data");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(CountEntries(), 1) << s;  // just "target"
  ASSERT_EQ(::rmdir((dir_ + "/target/x").c_str()), 0);
  EXPECT_FALSE(store2.Write("../escape", "x").ok());
}

// Failures injected through the filesystem seam: the old file stays, no
// temp file is left, and the error names the operation, file and errno.
TEST_F(FileStoreTest, InjectedEnospcKeepsTheOldCheckpointWithAClearError) {
  using Op = fs::FaultInjectingFs::Op;
  fs::FaultInjectingFs faults;
  FileStore store(dir_, true, &faults);
  ASSERT_OK(store.Write(kCheckpointName, "old"));
  faults.Fail(Op::kAppend, ENOSPC);
  const absl::Status s = store.Write(kCheckpointName, "new");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(s.message()), ::testing::MatchesRegex("write " + dir_ +
                                                                "/\\.[0-9]+: no "
                                                                "space left on device"));
  EXPECT_EQ(*store.Read(kCheckpointName), "old");
  EXPECT_EQ(CountEntries(), 1);
  EXPECT_EQ(faults.Calls(Op::kRename), 1);  // only the first write renamed
}

TEST_F(FileStoreTest, InjectedEioOnFsyncOrRenameKeepsTheOldFile) {
  using Op = fs::FaultInjectingFs::Op;
  fs::FaultInjectingFs faults;
  FileStore store(dir_, true, &faults);
  ASSERT_OK(store.Write(kCheckpointName, "old"));
  faults.Fail(Op::kSync, EIO);
  absl::Status s = store.Write(kCheckpointName, "new");
  EXPECT_THAT(std::string(s.message()), ::testing::StartsWith("sync " + dir_ + "/."));
  EXPECT_THAT(std::string(s.message()), ::testing::EndsWith(": input/output error"));
  faults.Fail(Op::kRename, EIO);
  s = store.Write(kCheckpointName, "new");
  EXPECT_THAT(std::string(s.message()),
              ::testing::HasSubstr(" " + dir_ + "/" + kCheckpointName + ": input/output error"));
  EXPECT_EQ(*store.Read(kCheckpointName), "old");
  EXPECT_EQ(CountEntries(), 1);
  // Without fsync, an injected fsync failure is never reached.
  FileStore fast(dir_, false, &faults);
  faults.Fail(Op::kSync, EIO);
  EXPECT_OK(fast.Write(kCheckpointName, "newer"));
  EXPECT_EQ(*fast.Read(kCheckpointName), "newer");
}

TEST_F(FileStoreTest, ReadAndVerifyMirrorsKubeletReadCheckpoint) {
  FileStore store(dir_, false);
  auto missing = ReadAndVerify(store, true);
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_EQ(missing.status().message(), "checkpoint is not found");

  const std::string golden = testing::TestDataDir();
  ASSERT_OK(
      store.Write(kCheckpointName, testing::ReadFileOrDie(golden + "/bad-device-edited.json")));
  auto corrupt = ReadAndVerify(store, false);
  EXPECT_TRUE(absl::IsDataLoss(corrupt.status()));
  EXPECT_EQ(corrupt.status().message(), "checkpoint is corrupted");

  ASSERT_OK(store.Write(kCheckpointName, testing::ReadFileOrDie(golden + "/bad-truncated.json")));
  auto truncated = ReadAndVerify(store, true);
  EXPECT_TRUE(absl::IsInvalidArgument(truncated.status()));
  EXPECT_EQ(truncated.status().message(), "unexpected end of JSON input (offset 322)");

  ASSERT_OK(
      store.Write(kCheckpointName, testing::ReadFileOrDie(golden + "/v2-multi-resource.json")));
  auto ok = ReadAndVerify(store, false);
  ASSERT_OK(ok);
  EXPECT_EQ(ok->format, FormatVersion::kV2);
  EXPECT_EQ(ok->data.pod_device_entries->size(), 4u);

  // V1: only with allow_v1, converted to NUMA 0; otherwise the V2 error.
  ASSERT_OK(store.Write(kCheckpointName, testing::ReadFileOrDie(golden + "/v1-single.json")));
  auto v1_refused = ReadAndVerify(store, false);
  EXPECT_TRUE(absl::IsInvalidArgument(v1_refused.status()));
  EXPECT_EQ(std::string(v1_refused.status().message()).substr(0, 97),
            "json: cannot unmarshal array into Go struct field "
            "PodDevicesEntry.Data.PodDeviceEntries.DeviceIDs");
  auto v1 = ReadAndVerify(store, true);
  ASSERT_OK(v1) << v1.status();
  EXPECT_EQ(v1->format, FormatVersion::kV2);
  EXPECT_TRUE(ChecksumMatches(*v1));
  const auto& devs = *v1->data.pod_device_entries->at(0).device_ids;
  ASSERT_EQ(devs.size(), 1u);
  EXPECT_EQ(devs.begin()->first, 0);

  ASSERT_OK(store.Write(kCheckpointName,
                        testing::ReadFileOrDie(golden + "/bad-mistake-v1-typenames.json")));
  auto v1_corrupt = ReadAndVerify(store, true);
  EXPECT_TRUE(absl::IsInvalidArgument(v1_corrupt.status())) << v1_corrupt.status();
}

TEST(ConvertV1ToV2, AllDevicesOnNumaZeroNilListWhenEmpty) {
  Checkpoint v1;
  v1.format = FormatVersion::kV1;
  v1.data_v1.pod_device_entries = std::vector<PodDevicesEntryV1>{};
  v1.data_v1.registered_devices =
      std::map<std::string, DeviceList>{{"r", std::vector<std::string>{"a"}}};
  Checkpoint v2 = ConvertV1ToV2(v1);
  EXPECT_FALSE(v2.data.pod_device_entries.has_value());
  EXPECT_TRUE(ChecksumMatches(v2));
  v1.data_v1.pod_device_entries->push_back(
      {"p", "c", "r", std::vector<std::string>{"a", "b"}, std::string("x")});
  v2 = ConvertV1ToV2(v1);
  ASSERT_EQ(v2.data.pod_device_entries->size(), 1u);
  EXPECT_EQ(v2.data.pod_device_entries->at(0).device_ids->at(0),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(v2.data.pod_device_entries->at(0).alloc_resp, "x");
}

}  // namespace
}  // namespace devmgr::checkpoint
