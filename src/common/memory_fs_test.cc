// MemoryFilesystem against what fs::Default() and its callers (MkdirAll,
// WriteFileAtomically, checkpoint::FileStore) rely on: the POSIX semantics and
// error texts of each call, and a replace by rename that readers see whole.
#include "common/memory_fs.h"

#include <algorithm>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::fs {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::StartsWith;

class MemoryFsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK(MkdirAll(fs_, "/d", 0755)); }

  // "name" or "name/" (a directory), sorted.
  std::vector<std::string> Names(const std::string& dir) {
    absl::StatusOr<std::vector<DirEntry>> entries = fs_.ListDir(dir);
    EXPECT_OK(entries);
    std::vector<std::string> out;
    if (!entries.ok()) return out;
    for (const DirEntry& e : *entries) {
      EXPECT_NE(e.is_dir, e.is_regular) << e.name;
      out.push_back(e.is_dir ? e.name + "/" : e.name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string Read(const std::string& path) {
    absl::StatusOr<std::string> got = fs_.ReadFile(path);
    EXPECT_OK(got);
    return got.ok() ? *got : "<" + got.status().ToString() + ">";
  }
  // Writes as checkpoint::FileStore does: temp "." + digits, mode 0600, no directory fsync.
  absl::Status Store(const std::string& path, const std::string& bytes) {
    AtomicWriteOptions opts;
    opts.sync_dir = false;
    opts.temp_prefix = ".";
    return WriteFileAtomically(fs_, path, bytes, opts);
  }

  MemoryFilesystem fs_;
};

TEST_F(MemoryFsTest, AtomicWriteReplacesTheFileAndLeavesNoTempFile) {
  ASSERT_OK(Store("/d/state", "first"));
  ASSERT_OK(Store("/d/state", "second, longer"));
  EXPECT_EQ(Read("/d/state"), "second, longer");
  EXPECT_THAT(Names("/d"), ElementsAre("state"));
  EXPECT_EQ(*fs_.Mode("/d/state"), 0600u);

  AtomicWriteOptions out;
  out.mode = 0644;
  ASSERT_OK(WriteFileAtomically(fs_, "/d/report", "r", out));
  EXPECT_EQ(*fs_.Mode("/d/report"), 0644u);
  EXPECT_THAT(Names("/d"), ElementsAre("report", "state"));
}

TEST_F(MemoryFsTest, TheTargetKeepsItsOldBytesUntilTheRename) {
  ASSERT_OK(Store("/d/state", "old"));
  std::string tmp;
  absl::StatusOr<std::unique_ptr<WritableFile>> f = fs_.NewTempFile("/d", ".", &tmp);
  ASSERT_OK(f);
  EXPECT_THAT(tmp, StartsWith("/d/."));
  EXPECT_EQ(Read(tmp), "");  // created at once, as O_CREAT does
  ASSERT_OK((*f)->Append("ne"));
  ASSERT_OK((*f)->Append("w"));
  ASSERT_OK((*f)->Sync());
  ASSERT_OK((*f)->Close());
  EXPECT_EQ(Read("/d/state"), "old");
  ASSERT_OK(fs_.Rename(tmp, "/d/state"));
  EXPECT_EQ(Read("/d/state"), "new");
  EXPECT_EQ(fs_.ReadFile(tmp).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Names("/d"), ElementsAre("state"));
}

TEST_F(MemoryFsTest, AFailedRenameLeavesTheTargetAndRemovesTheTempFile) {
  ASSERT_OK(fs_.Mkdir("/d/state", 0755));  // a directory where the file should go
  absl::Status s = Store("/d/state", "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(s.message()), StartsWith("rename /d/."));
  EXPECT_THAT(std::string(s.message()), ::testing::EndsWith(" /d/state: is a directory"));
  EXPECT_THAT(Names("/d"), ElementsAre("state/"));
}

TEST_F(MemoryFsTest, AnOpenFileFollowsItsRenameAndOutlivesItsRemoval) {
  std::string tmp;
  auto f = fs_.NewTempFile("/d", "t.", &tmp);
  ASSERT_OK(f);
  ASSERT_OK((*f)->Append("a"));
  ASSERT_OK(fs_.Rename(tmp, "/d/x"));
  ASSERT_OK((*f)->Append("b"));
  EXPECT_EQ(Read("/d/x"), "ab");
  ASSERT_OK(fs_.Remove("/d/x"));
  EXPECT_OK((*f)->Append("c"));  // an unlinked inode
  EXPECT_THAT(Names("/d"), IsEmpty());
  ASSERT_OK((*f)->Close());
  EXPECT_OK((*f)->Close());  // idempotent
  EXPECT_EQ((*f)->Append("d").ToString(), "INTERNAL: write " + tmp + ": bad file descriptor");
  EXPECT_EQ((*f)->Sync().code(), absl::StatusCode::kInternal);
}

TEST_F(MemoryFsTest, TempNamesAreNewEveryTimeAndSkipTakenOnes) {
  std::string a, b;
  ASSERT_OK(fs_.NewTempFile("/d", ".", &a));
  ASSERT_OK(fs_.NewTempFile("/d", ".", &b));
  EXPECT_NE(a, b);
  // The next name is taken (the counter is documented to count up): it is skipped.
  const std::string next = "/d/." + std::to_string(std::stoull(b.substr(4)) + 1);
  ASSERT_OK(fs_.Mkdir(next, 0700));
  std::string c;
  ASSERT_OK(fs_.NewTempFile("/d", ".", &c));
  EXPECT_NE(c, next);
  EXPECT_EQ(Names("/d").size(), 4u);
  EXPECT_EQ(fs_.NewTempFile("/nope", ".", &c).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(MemoryFsTest, ErrorsAreThePosixOnes) {
  ASSERT_OK(Store("/d/f", "x"));
  EXPECT_EQ(fs_.ReadFile("/d/missing").status().ToString(),
            "NOT_FOUND: open /d/missing: no such file or directory");
  EXPECT_EQ(fs_.ReadFile("/d").status().ToString(), "FAILED_PRECONDITION: read /d: is a directory");
  EXPECT_EQ(fs_.ReadFile("/d/f/x").status().ToString(), "INTERNAL: open /d/f/x: not a directory");
  EXPECT_EQ(fs_.Mkdir("/d", 0755).ToString(), "ALREADY_EXISTS: mkdir /d: file exists");
  EXPECT_EQ(fs_.Mkdir("/e/f", 0755).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(fs_.Mkdir("/d/f/g", 0755).ToString(), "INTERNAL: mkdir /d/f/g: not a directory");
  EXPECT_EQ(fs_.IsDirectory("/e").status().ToString(),
            "NOT_FOUND: stat /e: no such file or directory");
  EXPECT_FALSE(*fs_.IsDirectory("/d/f"));
  EXPECT_TRUE(*fs_.IsDirectory("/d"));
  EXPECT_EQ(fs_.Chmod("/e", 0700).code(), absl::StatusCode::kNotFound);
  EXPECT_OK(fs_.SyncDir("/d"));
  EXPECT_EQ(fs_.SyncDir("/d/f").ToString(), "INTERNAL: open /d/f: not a directory");
  EXPECT_EQ(fs_.SyncDir("/e").code(), absl::StatusCode::kNotFound);
  // MkdirAll over a file, as with the real filesystem.
  EXPECT_EQ(MkdirAll(fs_, "/d/f", 0755).ToString(),
            "FAILED_PRECONDITION: mkdir /d/f: not a directory");
}

TEST_F(MemoryFsTest, RenameRefusesWhatRenameTwoRefuses) {
  ASSERT_OK(Store("/d/f", "x"));
  ASSERT_OK(MkdirAll(fs_, "/d/full/sub", 0755));
  ASSERT_OK(fs_.Mkdir("/d/empty", 0755));
  auto code_of = [&](const std::string& from, const std::string& to) {
    absl::Status s = fs_.Rename(from, to);
    return s.ok() ? std::string("ok")
                  : std::string(s.message()).substr(s.message().rfind(": ") + 2);
  };
  EXPECT_EQ(code_of("/d/missing", "/d/g"), "no such file or directory");
  EXPECT_EQ(code_of("/d/f", "/e/g"), "no such file or directory");
  EXPECT_EQ(code_of("/d/f", "/d/empty"), "is a directory");
  EXPECT_EQ(code_of("/d/empty", "/d/f"), "not a directory");
  EXPECT_EQ(code_of("/d/empty", "/d/full"), "directory not empty");
  EXPECT_EQ(code_of("/d/full", "/d/full/sub/in"), "invalid argument");
  EXPECT_EQ(code_of("/d/f", "/d/f"), "ok");
  EXPECT_EQ(Read("/d/f"), "x");
  EXPECT_EQ(fs_.Rename("/d/f", "/d/empty").ToString(),
            "INTERNAL: rename /d/f /d/empty: is a directory");
  // Nothing moved.
  EXPECT_THAT(Names("/d"), ElementsAre("empty/", "f", "full/"));
}

TEST_F(MemoryFsTest, RenameMovesADirectoryWithItsContentsAndReplacesAnEmptyOne) {
  ASSERT_OK(MkdirAll(fs_, "/d/a/b", 0755));
  ASSERT_OK(Store("/d/a/b/f", "deep"));
  ASSERT_OK(Store("/d/a-sibling", "s"));  // sorts between /d/a and /d/a/: must not move
  ASSERT_OK(fs_.Mkdir("/d/z", 0700));
  ASSERT_OK(fs_.Rename("/d/a", "/d/z"));
  EXPECT_EQ(Read("/d/z/b/f"), "deep");
  EXPECT_EQ(*fs_.Mode("/d/z"), 0755u);  // the moved directory, not the replaced one
  EXPECT_THAT(Names("/d"), ElementsAre("a-sibling", "z/"));
  EXPECT_THAT(Names("/d/z/b"), ElementsAre("f"));
  EXPECT_EQ(fs_.IsDirectory("/d/a/b").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(MemoryFsTest, RemoveUnlinksFilesOnly) {
  ASSERT_OK(Store("/d/f", "x"));
  ASSERT_OK(fs_.Remove("/d/f"));
  EXPECT_THAT(Names("/d"), IsEmpty());
  EXPECT_OK(fs_.Remove("/d/f"));  // already gone
  EXPECT_OK(fs_.Remove("/e/f"));  // no parent either
  EXPECT_EQ(fs_.Remove("/d").ToString(), "INTERNAL: remove /d: is a directory");
  ASSERT_OK(Store("/d/f", "x"));
  EXPECT_EQ(fs_.Remove("/d/f/g").ToString(), "INTERNAL: remove /d/f/g: not a directory");
}

TEST_F(MemoryFsTest, ListDirNamesTheDirectChildrenOnly) {
  ASSERT_OK(MkdirAll(fs_, "/d/sub/deeper", 0755));
  ASSERT_OK(Store("/d/sub/f", "x"));
  ASSERT_OK(Store("/d/g", "y"));
  ASSERT_OK(Store("/d-other", "z"));
  EXPECT_THAT(Names("/d"), ElementsAre("g", "sub/"));
  EXPECT_THAT(Names("/d/sub"), ElementsAre("deeper/", "f"));
  EXPECT_THAT(Names("/d/sub/deeper"), IsEmpty());
  EXPECT_THAT(Names("/"), ElementsAre("d-other", "d/"));
  EXPECT_EQ(fs_.ListDir("/d/g").status().ToString(), "INTERNAL: open /d/g: not a directory");
  EXPECT_EQ(fs_.ListDir("/e").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(MemoryFsTest, PathsAreReadLexicallyAndErrorsNameThemAsGiven) {
  ASSERT_OK(Store("/d//./f", "x"));
  EXPECT_EQ(Read("/d/f"), "x");
  EXPECT_EQ(Read("d/f"), "x");  // from "/"
  EXPECT_EQ(Read("/d/sub/../f"), "x");
  EXPECT_EQ(Read("/../d/f"), "x");
  EXPECT_THAT(Names("/d/"), ElementsAre("f"));
  EXPECT_EQ(fs_.ReadFile("d//missing").status().ToString(),
            "NOT_FOUND: open d//missing: no such file or directory");
}

// Readers racing a writer that replaces the file again and again see one whole version each
// time: never a mix, never a missing file.
TEST_F(MemoryFsTest, ConcurrentReadersSeeWholeVersions) {
  const std::string a(4096, 'a'), b(8192, 'b');
  ASSERT_OK(Store("/d/state", a));
  std::thread writer([&] {
    for (int i = 0; i < 300; ++i) ASSERT_OK(Store("/d/state", i % 2 == 0 ? b : a));
  });
  int seen_a = 0, seen_b = 0;
  for (int i = 0; i < 600; ++i) {
    absl::StatusOr<std::string> got = fs_.ReadFile("/d/state");
    ASSERT_OK(got);
    ASSERT_TRUE(*got == a || *got == b) << got->size();
    ++(*got == a ? seen_a : seen_b);
  }
  writer.join();
  EXPECT_EQ(seen_a + seen_b, 600);
  EXPECT_THAT(Names("/d"), ElementsAre("state"));
}

}  // namespace
}  // namespace devmgr::fs
