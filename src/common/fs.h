// The filesystem seam: the few file operations devmgr's state lives on (make
// directories, write a file atomically with an fsync policy, read), behind
// one small interface in the spirit of leveldb's Env and ninja's
// DiskInterface. Production code uses fs::Default() (POSIX); tests wrap it
// (FaultInjectingFs in common/fs_testutil.h) to make chosen operations fail
// with ENOSPC, EIO, ...
//
// MkdirAll and WriteFileAtomically are written once, over the primitives,
// so an injected failure exercises their real error paths (temp file
// removed, target untouched).
#ifndef DEVMGR_COMMON_FS_H_
#define DEVMGR_COMMON_FS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace devmgr::fs {

// An open file being written.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual absl::Status Append(std::string_view bytes) = 0;
  virtual absl::Status Sync() = 0;
  // Idempotent; the destructor closes too (ignoring errors).
  virtual absl::Status Close() = 0;
};

struct DirEntry {
  std::string name;
  bool is_dir = false;
  bool is_regular = false;
};

// Thread-safe. Errors are "<op> <path>: <strerror>" (e.g. "write
// /d/.f.1234567890: no space left on device", Go's wording), with NotFound for ENOENT,
// PermissionDenied for EACCES/EPERM, AlreadyExists for EEXIST and Internal
// otherwise.
class Filesystem {
 public:
  virtual ~Filesystem() = default;

  // mkdir(2) of one directory.
  virtual absl::Status Mkdir(const std::string& path, mode_t mode) = 0;
  // NotFound when nothing is there.
  virtual absl::StatusOr<bool> IsDirectory(const std::string& path) = 0;
  // A new file "<dir>/<prefix><random digits>" (as os.CreateTemp, mode 0600); its path is
  // stored in *path.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewTempFile(const std::string& dir,
                                                                    const std::string& prefix,
                                                                    std::string* path) = 0;
  virtual absl::Status Chmod(const std::string& path, mode_t mode) = 0;
  virtual absl::Status Rename(const std::string& from, const std::string& to) = 0;
  // OK when the file is gone afterwards (also when it did not exist).
  virtual absl::Status Remove(const std::string& path) = 0;
  // fsync of a directory (after a rename in it).
  virtual absl::Status SyncDir(const std::string& dir) = 0;
  // FailedPrecondition "read PATH: is a directory" for a directory.
  virtual absl::StatusOr<std::string> ReadFile(const std::string& path) = 0;
  // The entries except "." and "..", in no particular order.
  virtual absl::StatusOr<std::vector<DirEntry>> ListDir(const std::string& dir) = 0;
};

// "<op> <path>: <strerror(err)>" with the status code of `err` (see
// Filesystem), for implementations and fakes.
absl::Status ErrnoStatus(std::string_view op, const std::string& path, int err);

// strerror(err) as Go's syscall.Errno prints it ("no space left on device").
std::string GoErrnoText(int err);

// The real (POSIX) filesystem; never null, never destroyed.
Filesystem* Default();

// os.MkdirAll: `path` and its missing parents, each made with `mode`; OK
// when `path` is already a directory; FailedPrecondition "mkdir PATH: not a
// directory" when it is something else.
absl::Status MkdirAll(Filesystem& fs, const std::string& path, mode_t mode);

struct AtomicWriteOptions {
  // fsync the temp file before the rename (false: faster, for CI; no
  // durability across power loss).
  bool fsync = true;
  // With fsync: also fsync the directory after the rename.
  bool sync_dir = true;
  // The file's mode (the temp file is created 0600).
  mode_t mode = 0600;
  // The temp file's name before its random digits; empty: "." + the
  // target's base name + ".".
  std::string temp_prefix;
};

// Writes `bytes` to `path` so that readers see the old or the new content,
// never a mix: a "."-prefixed temp file in the same directory, write,
// fsync, close, rename over `path`, fsync the directory (as `opts` says).
// On any failure the temp file is removed and `path` is left as it was.
absl::Status WriteFileAtomically(Filesystem& fs, const std::string& path, std::string_view bytes,
                                 const AtomicWriteOptions& opts = {});

// A file devmgr writes for people and tools (the status file, metrics files,
// JUnit/JSON reports, a scenario's planted files): atomically as above with
// mode 0644 and no fsync, through fs::Default(). An existing `path` that is
// not a regular file (/dev/stdout, a FIFO) is written in place instead.
// Errors name the target: "write PATH: <the failing step>".
absl::Status WriteOutputFile(const std::string& path, std::string_view bytes);

}  // namespace devmgr::fs

#endif  // DEVMGR_COMMON_FS_H_
