// MemoryFilesystem: an fs::Filesystem kept in memory (leveldb's NewMemEnv,
// ninja's VirtualFileSystem), for code that must run fast and leave nothing
// on disk: the dra_replies fuzz target checkpoints the DRA manager on every
// step through it (docs/reliability.md, "Fuzzing"); tests use it where the
// real disk adds nothing.
//
// It follows the POSIX calls of fs::Default() (common/fs.h), errors and
// status codes included ("open /d/f: no such file or directory" NotFound):
//  - one tree of directories and regular files under "/"; a path is read
//    lexically ("a//b/./c" is "/a/b/c", a relative path is taken from "/",
//    ".." drops the previous component) and errors name it as given;
//  - Mkdir makes one directory (ENOENT without the parent, EEXIST when taken);
//  - NewTempFile creates the file at once (empty, 0600) under "<dir>/<prefix>
//    <digits>", the digits from a counter (so a run is reproducible), never
//    an existing name;
//  - a WritableFile writes to its file's content wherever the file is renamed
//    to, and to nothing visible once it is removed (an unlinked inode); after
//    Close, Append and Sync fail with EBADF;
//  - Rename is atomic: a reader sees the old target or the new one, never
//    both or neither; it replaces a file or an empty directory (EISDIR for a
//    file over a directory, ENOTDIR for a directory over a file, ENOTEMPTY,
//    EINVAL for a directory into itself) and moves a directory's contents;
//  - Remove unlinks a file (EISDIR for a directory, OK when nothing is there);
//  - Sync and SyncDir do nothing (there is nothing to make durable).
// Modes are kept (Chmod) and not enforced: every caller is the owner.
#ifndef DEVMGR_COMMON_MEMORY_FS_H_
#define DEVMGR_COMMON_MEMORY_FS_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/fs.h"

namespace devmgr::fs {

// Thread-safe. Starts with the directory "/" only.
class MemoryFilesystem final : public Filesystem {
 public:
  MemoryFilesystem();
  MemoryFilesystem(const MemoryFilesystem&) = delete;
  MemoryFilesystem& operator=(const MemoryFilesystem&) = delete;

  absl::Status Mkdir(const std::string& path, mode_t mode) override;
  absl::StatusOr<bool> IsDirectory(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewTempFile(const std::string& dir,
                                                            const std::string& prefix,
                                                            std::string* path) override;
  absl::Status Chmod(const std::string& path, mode_t mode) override;
  absl::Status Rename(const std::string& from, const std::string& to) override;
  absl::Status Remove(const std::string& path) override;
  absl::Status SyncDir(const std::string& dir) override;
  absl::StatusOr<std::string> ReadFile(const std::string& path) override;
  absl::StatusOr<std::vector<DirEntry>> ListDir(const std::string& dir) override;

  // The mode of what is at `path` (NotFound as ReadFile).
  absl::StatusOr<mode_t> Mode(const std::string& path);

 private:
  // A file's content and mode, or a directory's mode; shared with the open
  // WritableFiles of the file (fields guarded by mu_).
  struct Inode {
    bool is_dir = false;
    mode_t mode = 0;
    std::string bytes;
  };
  class File;
  using Tree = std::map<std::string, std::shared_ptr<Inode>>;

  // 0 when the parent of the normalised `path` is a directory, else ENOENT or ENOTDIR.
  int ParentErrno(const std::string& path) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The inode at the normalised `path`, or nullptr with *err set (ENOENT, ENOTDIR).
  Inode* Find(const std::string& path, int* err) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HasChildren(const std::string& dir) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The errno of rename(2) from `from` to `to` (normalised), 0 when it may go ahead.
  int RenameErrno(const std::string& from, const std::string& to) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  // Normalised absolute path -> inode; "/" is always there.
  Tree tree_ ABSL_GUARDED_BY(mu_);
  uint64_t next_temp_ ABSL_GUARDED_BY(mu_) = 1000000000;
};

}  // namespace devmgr::fs

#endif  // DEVMGR_COMMON_MEMORY_FS_H_
