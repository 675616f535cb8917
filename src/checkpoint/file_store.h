// Atomic storage of checkpoint files in one directory, as the kubelet's
// checkpointmanager filestore (pkg/kubelet/util/store) does: the directory
// made again if it is gone, then a temp file named "." + random digits in
// it (mode 0600), write, fsync, close, rename over the target (the
// directory itself is not fsynced); the temp file is removed on any
// failure, and the old file is kept. All I/O goes through the filesystem
// seam (common/fs.h).
#ifndef DEVMGR_CHECKPOINT_FILE_STORE_H_
#define DEVMGR_CHECKPOINT_FILE_STORE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/fs.h"

namespace devmgr::checkpoint {

// Thread-compatible.
class FileStore {
 public:
  // Write makes `dir` (0755, parents too) when it cannot stat it. With
  // fsync false, the fsync is skipped (fast CI runs; no durability across
  // power loss). `fs` (not owned; nullptr: fs::Default()) must outlive the
  // store.
  explicit FileStore(std::string dir, bool fsync = true, fs::Filesystem* fs = nullptr);

  // The kubelet's ensureDirectory (at NewFileStore and before every
  // Write): when `dir` cannot be stat'ed, it is made (0755, parents too).
  absl::Status EnsureDirectory() const;
  // Returns NotFound when the file does not exist, the bytes otherwise.
  absl::StatusOr<std::string> Read(std::string_view name) const;
  absl::Status Write(std::string_view name, std::string_view bytes) const;
  // OK when the file is gone afterwards (also when it did not exist).
  absl::Status Remove(std::string_view name) const;
  // Names of the regular files not starting with '.', sorted.
  absl::StatusOr<std::vector<std::string>> List() const;

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  bool fsync_;
  fs::Filesystem* fs_;
};

}  // namespace devmgr::checkpoint

#endif  // DEVMGR_CHECKPOINT_FILE_STORE_H_
