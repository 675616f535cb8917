#include "common/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>

#include "fmt/format.h"

namespace devmgr::fs {
std::string GoErrnoText(int err) {
  // Go's syscall error strings are the C library's with the first letter
  // lowered, unless the first word is an acronym ("ENOSPC" -> "no space left
  // on device", as in "write /d/f: no space left on device").
  std::string text = std::strerror(err);
  if (text.size() > 1 && std::isupper(static_cast<unsigned char>(text[0])) &&
      !std::isupper(static_cast<unsigned char>(text[1]))) {
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  }
  return text;
}

absl::Status ErrnoStatus(std::string_view op, const std::string& path, int err) {
  const std::string msg = fmt::format("{} {}: {}", op, path, GoErrnoText(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(msg);
    case EEXIST:
      return absl::AlreadyExistsError(msg);
    default:
      return absl::InternalError(msg);
  }
}

namespace {

absl::Status Errno(std::string_view op, const std::string& path, int err) {
  return ErrnoStatus(op, path, err);
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixWritableFile() override { (void)Close(); }

  absl::Status Append(std::string_view bytes) override {
    size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n = ::write(fd_, bytes.data() + off, bytes.size() - off);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Errno("write", path_, errno);
      }
      off += static_cast<size_t>(n);
    }
    return absl::OkStatus();
  }
  absl::Status Sync() override {
    if (::fsync(fd_) != 0) return Errno("sync", path_, errno);
    return absl::OkStatus();
  }
  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return Errno("close", path_, errno);
    return absl::OkStatus();
  }

 private:
  int fd_;
  std::string path_;
};

class PosixFilesystem final : public Filesystem {
 public:
  absl::Status Mkdir(const std::string& path, mode_t mode) override {
    if (::mkdir(path.c_str(), mode) != 0) return Errno("mkdir", path, errno);
    return absl::OkStatus();
  }
  absl::StatusOr<bool> IsDirectory(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return Errno("stat", path, errno);
    return S_ISDIR(st.st_mode);
  }
  absl::StatusOr<std::unique_ptr<WritableFile>> NewTempFile(const std::string& dir,
                                                            const std::string& prefix,
                                                            std::string* path) override {
    // As Go's os.CreateTemp: a random decimal suffix, O_EXCL, mode 0600,
    // another name on a collision.
    thread_local std::mt19937 rng{std::random_device{}()};
    for (int attempt = 0;; ++attempt) {
      std::string name = fmt::format("{}/{}{}", dir, prefix, static_cast<uint32_t>(rng()));
      const int fd = ::open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd >= 0) {
        *path = name;
        return std::make_unique<PosixWritableFile>(fd, std::move(name));
      }
      if (errno != EEXIST || attempt == 10000) return Errno("open", name, errno);
    }
  }
  absl::Status Chmod(const std::string& path, mode_t mode) override {
    if (::chmod(path.c_str(), mode) != 0) return Errno("chmod", path, errno);
    return absl::OkStatus();
  }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return Errno(fmt::format("rename {}", from), to, errno);
    }
    return absl::OkStatus();
  }
  absl::Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Errno("remove", path, errno);
    return absl::OkStatus();
  }
  absl::Status SyncDir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Errno("open", dir, errno);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return Errno("sync", dir, err);
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Errno("open", path, errno);
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
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        ::close(fd);
        return Errno("read", path, err);
      }
      if (n == 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
  }
  absl::StatusOr<std::vector<DirEntry>> ListDir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return Errno("open", dir, errno);
    std::vector<DirEntry> out;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      DirEntry de;
      de.name = name;
      de.is_dir = e->d_type == DT_DIR;
      de.is_regular = e->d_type == DT_REG;
      if (e->d_type == DT_UNKNOWN) {
        struct stat st;
        const std::string p = dir + "/" + name;
        if (::stat(p.c_str(), &st) == 0) {
          de.is_dir = S_ISDIR(st.st_mode);
          de.is_regular = S_ISREG(st.st_mode);
        }
      }
      out.push_back(std::move(de));
    }
    ::closedir(d);
    return out;
  }
};

}  // namespace

Filesystem* Default() {
  static PosixFilesystem* const fs = new PosixFilesystem();
  return fs;
}

absl::Status MkdirAll(Filesystem& fs, const std::string& path, mode_t mode) {
  // Fast path: already there.
  if (absl::StatusOr<bool> dir = fs.IsDirectory(path); dir.ok()) {
    if (*dir) return absl::OkStatus();
    return absl::FailedPreconditionError(fmt::format("mkdir {}: not a directory", path));
  }
  // The parent first (trailing slashes skipped).
  size_t end = path.size();
  while (end > 1 && path[end - 1] == '/') --end;
  const size_t slash = path.rfind('/', end - 1);
  if (slash != std::string::npos && slash > 0) {
    if (absl::Status s = MkdirAll(fs, path.substr(0, slash), mode); !s.ok()) return s;
  }
  absl::Status s = fs.Mkdir(path.substr(0, end), mode);
  if (s.ok() || !absl::IsAlreadyExists(s)) return s;
  // Lost a race with another creator: fine if it is a directory.
  absl::StatusOr<bool> dir = fs.IsDirectory(path);
  if (dir.ok() && *dir) return absl::OkStatus();
  return s;
}

absl::Status WriteFileAtomically(Filesystem& fs, const std::string& path, std::string_view bytes,
                                 const AtomicWriteOptions& opts) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmp;
  const std::string prefix = opts.temp_prefix.empty() ? "." + base + "." : opts.temp_prefix;
  absl::StatusOr<std::unique_ptr<WritableFile>> f = fs.NewTempFile(dir, prefix, &tmp);
  if (!f.ok()) return f.status();
  absl::Status s = (*f)->Append(bytes);
  if (s.ok() && opts.fsync) s = (*f)->Sync();
  if (s.ok()) s = (*f)->Close();
  if (s.ok() && opts.mode != 0600) s = fs.Chmod(tmp, opts.mode);
  if (s.ok()) s = fs.Rename(tmp, path);
  if (!s.ok()) {
    f->reset();  // closes
    (void)fs.Remove(tmp);
    return s;
  }
  if (opts.fsync && opts.sync_dir) return fs.SyncDir(dir);
  return absl::OkStatus();
}

absl::Status WriteOutputFile(const std::string& path, std::string_view bytes) {
  absl::Status s;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      s = ErrnoStatus("open", path, errno);
    } else {
      PosixWritableFile f(fd, path);  // the same write loop as every other file
      s = f.Append(bytes);
      s.Update(f.Close());
    }
  } else {
    AtomicWriteOptions opts;
    opts.fsync = false;
    opts.mode = 0644;
    s = WriteFileAtomically(*Default(), path, bytes, opts);
  }
  if (s.ok()) return s;
  return absl::Status(s.code(), fmt::format("write {}: {}", path, std::string(s.message())));
}

}  // namespace devmgr::fs
