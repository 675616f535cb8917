#include "checkpoint/file_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "fmt/format.h"

namespace devmgr::checkpoint {
namespace {

absl::Status ErrnoStatus(const std::string& what, const std::string& path, int err) {
  const std::string msg = fmt::format("{} {}: {}", what, path, std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
  return absl::InternalError(msg);
}

bool ValidName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

// Closes the fd and removes the temp file unless released.
class TempFile {
 public:
  TempFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  int Close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  void Release() { path_.clear(); }

 private:
  int fd_;
  std::string path_;
};

}  // namespace

FileStore::FileStore(std::string dir, bool fsync) : dir_(std::move(dir)), fsync_(fsync) {}

absl::StatusOr<std::string> FileStore::Read(std::string_view name) const {
  if (!ValidName(name)) return absl::InvalidArgumentError(fmt::format("invalid file name {:?}", std::string(name)));
  const std::string path = fmt::format("{}/{}", dir_, name);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open", path, errno);
  std::string out;
  struct stat st;
  if (::fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      return absl::FailedPreconditionError(fmt::format("read {}: is a directory", path));
    }
    if (S_ISREG(st.st_mode)) out.reserve(static_cast<size_t>(st.st_size));
  }
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return ErrnoStatus("read", path, err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

absl::Status FileStore::Write(std::string_view name, std::string_view bytes) const {
  if (!ValidName(name)) return absl::InvalidArgumentError(fmt::format("invalid file name {:?}", std::string(name)));
  const std::string path = fmt::format("{}/{}", dir_, name);
  std::string tmpl = fmt::format("{}/.{}.XXXXXX", dir_, name);
  const int fd = ::mkstemp(tmpl.data());  // mode 0600
  if (fd < 0) return ErrnoStatus("create temp file in", dir_, errno);
  TempFile tmp(fd, tmpl);
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("write", tmp.path(), errno);
    }
    off += static_cast<size_t>(n);
  }
  if (fsync_ && ::fsync(fd) != 0) return ErrnoStatus("fsync", tmp.path(), errno);
  if (tmp.Close() != 0) return ErrnoStatus("close", tmp.path(), errno);
  if (::rename(tmp.path().c_str(), path.c_str()) != 0) {
    return ErrnoStatus(fmt::format("rename {} to", tmp.path()), path, errno);
  }
  tmp.Release();
  if (fsync_) {
    const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return ErrnoStatus("open", dir_, errno);
    const int rc = ::fsync(dfd);
    const int err = errno;
    ::close(dfd);
    if (rc != 0) return ErrnoStatus("fsync", dir_, err);
  }
  return absl::OkStatus();
}

absl::Status FileStore::Remove(std::string_view name) const {
  if (!ValidName(name)) return absl::InvalidArgumentError(fmt::format("invalid file name {:?}", std::string(name)));
  const std::string path = fmt::format("{}/{}", dir_, name);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("remove", path, errno);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> FileStore::List() const {
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return ErrnoStatus("open", dir_, errno);
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    bool regular = e->d_type == DT_REG;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st;
      const std::string p = fmt::format("{}/{}", dir_, e->d_name);
      regular = ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    }
    if (regular) names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace devmgr::checkpoint
