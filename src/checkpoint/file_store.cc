#include "checkpoint/file_store.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "fmt/format.h"

namespace devmgr::checkpoint {
namespace {

bool ValidName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

absl::Status InvalidName(std::string_view name) {
  return absl::InvalidArgumentError(fmt::format("invalid file name {:?}", std::string(name)));
}

}  // namespace

FileStore::FileStore(std::string dir, bool fsync, fs::Filesystem* fs)
    : dir_(std::move(dir)), fsync_(fsync), fs_(fs != nullptr ? fs : fs::Default()) {}

absl::StatusOr<std::string> FileStore::Read(std::string_view name) const {
  if (!ValidName(name)) return InvalidName(name);
  return fs_->ReadFile(fmt::format("{}/{}", dir_, name));
}

absl::Status FileStore::EnsureDirectory() const {
  // Anything that can be stat'ed counts (a file there fails the write later).
  if (fs_->IsDirectory(dir_).ok()) return absl::OkStatus();
  return fs::MkdirAll(*fs_, dir_, 0755);
}

absl::Status FileStore::Write(std::string_view name, std::string_view bytes) const {
  if (!ValidName(name)) return InvalidName(name);
  if (absl::Status s = EnsureDirectory(); !s.ok()) return s;
  fs::AtomicWriteOptions opts;
  opts.fsync = fsync_;
  opts.sync_dir = false;  // the kubelet syncs the file only
  opts.mode = 0600;
  opts.temp_prefix = ".";  // os.CreateTemp(dir, "."): ".2841365932"
  return fs::WriteFileAtomically(*fs_, fmt::format("{}/{}", dir_, name), bytes, opts);
}

absl::Status FileStore::Remove(std::string_view name) const {
  if (!ValidName(name)) return InvalidName(name);
  return fs_->Remove(fmt::format("{}/{}", dir_, name));
}

absl::StatusOr<std::vector<std::string>> FileStore::List() const {
  absl::StatusOr<std::vector<fs::DirEntry>> entries = fs_->ListDir(dir_);
  if (!entries.ok()) return entries.status();
  std::vector<std::string> names;
  for (const fs::DirEntry& e : *entries) {
    if (e.name[0] != '.' && e.is_regular) names.push_back(e.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace devmgr::checkpoint
