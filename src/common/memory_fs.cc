#include "common/memory_fs.h"

#include <algorithm>
#include <cerrno>
#include <string_view>
#include <utility>

#include "fmt/format.h"

namespace devmgr::fs {
namespace {

// `path` read lexically from "/": empty and "." components dropped, ".." drops the one before.
std::string Normalize(const std::string& path) {
  std::vector<std::string_view> parts;
  const std::string_view all(path);
  for (size_t start = 0, end = 0; start <= all.size(); start = end + 1) {
    end = std::min(all.find('/', start), all.size());
    const std::string_view part = all.substr(start, end - start);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  if (parts.empty()) return "/";
  std::string out;
  for (std::string_view part : parts) {
    out += '/';
    out += part;
  }
  return out;
}

// The prefix every path under the normalised directory `dir` starts with.
std::string ChildPrefix(const std::string& dir) { return dir == "/" ? dir : dir + "/"; }

}  // namespace

class MemoryFilesystem::File final : public WritableFile {
 public:
  File(MemoryFilesystem* fs, std::shared_ptr<Inode> inode, std::string path)
      : fs_(fs), inode_(std::move(inode)), path_(std::move(path)) {}

  absl::Status Append(std::string_view bytes) override {
    absl::MutexLock l(&fs_->mu_);
    if (closed_) return ErrnoStatus("write", path_, EBADF);
    inode_->bytes.append(bytes);
    return absl::OkStatus();
  }
  absl::Status Sync() override {
    absl::MutexLock l(&fs_->mu_);
    if (closed_) return ErrnoStatus("sync", path_, EBADF);
    return absl::OkStatus();
  }
  absl::Status Close() override {
    absl::MutexLock l(&fs_->mu_);
    closed_ = true;
    return absl::OkStatus();
  }

 private:
  MemoryFilesystem* const fs_;
  const std::shared_ptr<Inode> inode_;
  const std::string path_;
  bool closed_ = false;
};

MemoryFilesystem::MemoryFilesystem() {
  absl::MutexLock l(&mu_);
  tree_["/"] = std::make_shared<Inode>(Inode{true, 0755, {}});
}

int MemoryFilesystem::ParentErrno(const std::string& path) const {
  // Every proper ancestor, from the root down, as path resolution walks them.
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    auto it = tree_.find(path.substr(0, pos));
    if (it == tree_.end()) return ENOENT;
    if (!it->second->is_dir) return ENOTDIR;
  }
  return 0;
}

MemoryFilesystem::Inode* MemoryFilesystem::Find(const std::string& path, int* err) const {
  if (auto it = tree_.find(path); it != tree_.end()) return it->second.get();
  *err = ParentErrno(path);
  if (*err == 0) *err = ENOENT;
  return nullptr;
}

bool MemoryFilesystem::HasChildren(const std::string& dir) const {
  const std::string prefix = ChildPrefix(dir);
  for (auto it = tree_.lower_bound(prefix); it != tree_.end() && it->first.starts_with(prefix);
       ++it) {
    if (it->first != dir) return true;
  }
  return false;
}

absl::Status MemoryFilesystem::Mkdir(const std::string& path, mode_t mode) {
  const std::string p = Normalize(path);
  absl::MutexLock l(&mu_);
  if (tree_.count(p) > 0) return ErrnoStatus("mkdir", path, EEXIST);
  if (int err = ParentErrno(p)) return ErrnoStatus("mkdir", path, err);
  tree_[p] = std::make_shared<Inode>(Inode{true, mode, {}});
  return absl::OkStatus();
}

absl::StatusOr<bool> MemoryFilesystem::IsDirectory(const std::string& path) {
  const std::string p = Normalize(path);
  absl::MutexLock l(&mu_);
  int err = 0;
  const Inode* node = Find(p, &err);
  if (node == nullptr) return ErrnoStatus("stat", path, err);
  return node->is_dir;
}

absl::StatusOr<std::unique_ptr<WritableFile>> MemoryFilesystem::NewTempFile(
    const std::string& dir, const std::string& prefix, std::string* path) {
  absl::MutexLock l(&mu_);
  for (;;) {
    std::string name = fmt::format("{}/{}{}", dir, prefix, next_temp_++);
    const std::string p = Normalize(name);
    if (tree_.count(p) > 0) continue;  // as os.CreateTemp: another name
    if (int err = ParentErrno(p)) return ErrnoStatus("open", name, err);
    auto inode = std::make_shared<Inode>(Inode{false, 0600, {}});
    tree_[p] = inode;
    *path = name;
    return std::unique_ptr<WritableFile>(new File(this, std::move(inode), std::move(name)));
  }
}

absl::Status MemoryFilesystem::Chmod(const std::string& path, mode_t mode) {
  const std::string p = Normalize(path);
  absl::MutexLock l(&mu_);
  int err = 0;
  Inode* node = Find(p, &err);
  if (node == nullptr) return ErrnoStatus("chmod", path, err);
  node->mode = mode;
  return absl::OkStatus();
}

int MemoryFilesystem::RenameErrno(const std::string& from, const std::string& to) const {
  int err = 0;
  const Inode* src = Find(from, &err);
  if (src == nullptr) return err;
  if (from == "/" || to == "/") return EBUSY;
  if (int e = ParentErrno(to)) return e;
  if (src->is_dir && to.starts_with(ChildPrefix(from))) return EINVAL;
  auto it = tree_.find(to);
  if (it == tree_.end() || from == to) return 0;
  if (src->is_dir && !it->second->is_dir) return ENOTDIR;
  if (!src->is_dir && it->second->is_dir) return EISDIR;
  if (it->second->is_dir && HasChildren(to)) return ENOTEMPTY;
  return 0;
}

absl::Status MemoryFilesystem::Rename(const std::string& from, const std::string& to) {
  const std::string f = Normalize(from);
  const std::string t = Normalize(to);
  absl::MutexLock l(&mu_);
  if (int err = RenameErrno(f, t)) return ErrnoStatus(fmt::format("rename {}", from), to, err);
  if (f == t) return absl::OkStatus();
  std::shared_ptr<Inode> node = tree_[f];
  if (node->is_dir) {  // its contents move with it
    const std::string prefix = ChildPrefix(f);
    std::vector<std::string> under;
    for (auto it = tree_.lower_bound(prefix); it != tree_.end() && it->first.starts_with(prefix);
         ++it) {
      under.push_back(it->first);
    }
    for (const std::string& old : under) {
      auto moved = tree_.extract(old);
      moved.key() = t + old.substr(f.size());
      tree_.insert(std::move(moved));
    }
  }
  tree_.erase(f);
  tree_[t] = std::move(node);  // replaces the target in the same step
  return absl::OkStatus();
}

absl::Status MemoryFilesystem::Remove(const std::string& path) {
  const std::string p = Normalize(path);
  absl::MutexLock l(&mu_);
  auto it = tree_.find(p);
  if (it == tree_.end()) {
    const int err = ParentErrno(p);
    return err == ENOTDIR ? ErrnoStatus("remove", path, err) : absl::OkStatus();
  }
  if (it->second->is_dir) return ErrnoStatus("remove", path, EISDIR);
  tree_.erase(it);  // an open WritableFile keeps the inode, as an unlinked file
  return absl::OkStatus();
}

absl::Status MemoryFilesystem::SyncDir(const std::string& dir) {
  const std::string p = Normalize(dir);
  absl::MutexLock l(&mu_);
  int err = 0;
  const Inode* node = Find(p, &err);
  if (node == nullptr) return ErrnoStatus("open", dir, err);
  if (!node->is_dir) return ErrnoStatus("open", dir, ENOTDIR);
  return absl::OkStatus();
}

absl::StatusOr<std::string> MemoryFilesystem::ReadFile(const std::string& path) {
  const std::string p = Normalize(path);
  absl::MutexLock l(&mu_);
  int err = 0;
  const Inode* node = Find(p, &err);
  if (node == nullptr) return ErrnoStatus("open", path, err);
  if (node->is_dir)
    return absl::FailedPreconditionError(fmt::format("read {}: is a directory", path));
  return node->bytes;
}

absl::StatusOr<std::vector<DirEntry>> MemoryFilesystem::ListDir(const std::string& dir) {
  const std::string p = Normalize(dir);
  absl::MutexLock l(&mu_);
  int err = 0;
  const Inode* node = Find(p, &err);
  if (node == nullptr) return ErrnoStatus("open", dir, err);
  if (!node->is_dir) return ErrnoStatus("open", dir, ENOTDIR);
  std::vector<DirEntry> out;
  const std::string prefix = ChildPrefix(p);
  for (auto it = tree_.lower_bound(prefix); it != tree_.end() && it->first.starts_with(prefix);
       ++it) {
    const std::string name = it->first.substr(prefix.size());
    if (name.empty() || name.find('/') != std::string::npos) continue;  // itself, or deeper
    out.push_back(DirEntry{name, it->second->is_dir, !it->second->is_dir});
  }
  return out;
}

absl::StatusOr<mode_t> MemoryFilesystem::Mode(const std::string& path) {
  const std::string p = Normalize(path);
  absl::MutexLock l(&mu_);
  int err = 0;
  const Inode* node = Find(p, &err);
  if (node == nullptr) return ErrnoStatus("stat", path, err);
  return node->mode;
}

}  // namespace devmgr::fs
