#include "transport/plugin_dir_cleanup.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "common/logging.h"
#include "fmt/format.h"
#include "transport/go_path.h"

namespace devmgr::transport {
namespace {

// Go's syscall.Errno texts are strerror's, lower-cased at the start.
std::string GoErrno(int err) {
  std::string s = std::strerror(err);
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = static_cast<char>(s[0] - 'A' + 'a');
  return s;
}

}  // namespace

absl::Status CleanupPluginDirectory(const std::string& dir, const std::string& checkpoint_path,
                                    bool sockets_only) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return absl::InternalError(fmt::format("open {}: {}", dir, GoErrno(errno)));
  }
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    names.push_back(name);
  }
  ::closedir(d);

  std::vector<std::string> errs;
  for (const std::string& name : names) {
    const std::string path = GoPathJoin({dir, name});
    if (path == GoPathClean(checkpoint_path)) continue;
    struct stat st {};
    // 1.30-1.32 look at the entry itself; the socket-only variant follows
    // symlinks (a symlink to a socket is then removed, the link only).
    const int rc = sockets_only ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st);
    if (rc != 0) {
      DM_ERROR(fmt::format("{} {}: {}", sockets_only ? "stat" : "lstat", path, GoErrno(errno)),
               "Failed to stat file", {"path", path});
      continue;
    }
    if (S_ISDIR(st.st_mode)) continue;
    if (sockets_only && !S_ISSOCK(st.st_mode)) continue;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      const std::string err = fmt::format("unlinkat {}: {}", path, GoErrno(errno));
      DM_ERROR(err, "Failed to remove file", {"path", path});
      errs.push_back(err);
    }
  }
  if (errs.empty()) return absl::OkStatus();
  if (errs.size() == 1) return absl::InternalError(errs[0]);
  std::string joined = "[";
  for (size_t i = 0; i < errs.size(); ++i) {
    if (i > 0) joined += ", ";
    joined += errs[i];
  }
  joined += "]";
  return absl::InternalError(joined);
}

}  // namespace devmgr::transport
