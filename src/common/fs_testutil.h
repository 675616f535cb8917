// FaultInjectingFs: a Filesystem for tests that forwards to another (the
// real one by default) and makes chosen operations fail with an errno, e.g.
// ENOSPC on the next write or EIO on the next fsync, the way the real one
// reports it ("write /d/.f.1234567890: no space left on device").
#ifndef DEVMGR_COMMON_FS_TESTUTIL_H_
#define DEVMGR_COMMON_FS_TESTUTIL_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/fs.h"

namespace devmgr::fs {

class FaultInjectingFs final : public Filesystem {
 public:
  enum class Op { kMkdir, kNewTempFile, kAppend, kSync, kClose, kRename, kSyncDir, kRead };

  explicit FaultInjectingFs(Filesystem* base = Default()) : base_(base) {}

  // The next `times` calls of `op` fail with `err` (and do nothing).
  void Fail(Op op, int err, int times = 1) {
    absl::MutexLock l(&mu_);
    faults_[op] = {err, times};
  }
  // How many calls of `op` were made (failed ones included).
  int Calls(Op op) const {
    absl::MutexLock l(&mu_);
    auto it = calls_.find(op);
    return it == calls_.end() ? 0 : it->second;
  }

  absl::Status Mkdir(const std::string& path, mode_t mode) override {
    if (int err = Take(Op::kMkdir)) return ErrnoStatus("mkdir", path, err);
    return base_->Mkdir(path, mode);
  }
  absl::StatusOr<bool> IsDirectory(const std::string& path) override {
    return base_->IsDirectory(path);
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> NewTempFile(const std::string& dir,
                                                            const std::string& prefix,
                                                            std::string* path) override {
    if (int err = Take(Op::kNewTempFile)) return ErrnoStatus("open", dir + "/" + prefix + "*", err);
    auto f = base_->NewTempFile(dir, prefix, path);
    if (!f.ok()) return f.status();
    return std::unique_ptr<WritableFile>(new File(this, std::move(*f), *path));
  }
  absl::Status Chmod(const std::string& path, mode_t mode) override {
    return base_->Chmod(path, mode);
  }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (int err = Take(Op::kRename)) return ErrnoStatus("rename " + from, to, err);
    return base_->Rename(from, to);
  }
  absl::Status Remove(const std::string& path) override { return base_->Remove(path); }
  absl::Status SyncDir(const std::string& dir) override {
    if (int err = Take(Op::kSyncDir)) return ErrnoStatus("sync", dir, err);
    return base_->SyncDir(dir);
  }
  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    if (int err = Take(Op::kRead)) return ErrnoStatus("read", path, err);
    return base_->ReadFile(path);
  }
  absl::StatusOr<std::vector<DirEntry>> ListDir(const std::string& dir) override {
    return base_->ListDir(dir);
  }

 private:
  class File final : public WritableFile {
   public:
    File(FaultInjectingFs* fs, std::unique_ptr<WritableFile> base, std::string path)
        : fs_(fs), base_(std::move(base)), path_(std::move(path)) {}
    absl::Status Append(std::string_view bytes) override {
      if (int err = fs_->Take(Op::kAppend)) return ErrnoStatus("write", path_, err);
      return base_->Append(bytes);
    }
    absl::Status Sync() override {
      if (int err = fs_->Take(Op::kSync)) return ErrnoStatus("sync", path_, err);
      return base_->Sync();
    }
    absl::Status Close() override {
      if (int err = fs_->Take(Op::kClose)) {
        (void)base_->Close();
        return ErrnoStatus("close", path_, err);
      }
      return base_->Close();
    }

   private:
    FaultInjectingFs* fs_;
    std::unique_ptr<WritableFile> base_;
    std::string path_;
  };

  // The errno to fail this call with, or 0.
  int Take(Op op) {
    absl::MutexLock l(&mu_);
    ++calls_[op];
    auto it = faults_.find(op);
    if (it == faults_.end() || it->second.second <= 0) return 0;
    --it->second.second;
    return it->second.first;
  }

  Filesystem* const base_;
  mutable absl::Mutex mu_;
  std::map<Op, std::pair<int, int>> faults_ ABSL_GUARDED_BY(mu_);  // errno, times
  std::map<Op, int> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::fs

#endif  // DEVMGR_COMMON_FS_TESTUTIL_H_
