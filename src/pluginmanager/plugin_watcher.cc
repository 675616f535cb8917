#include "pluginmanager/plugin_watcher.h"

#include <dirent.h>
#include <sys/stat.h>

#include <map>
#include <utility>
#include <vector>

#include "common/fs.h"
#include "common/logging.h"
#include "fmt/format.h"

namespace devmgr::pluginmanager {
namespace {

void Walk(const std::string& dir, std::map<std::string, SocketIdentity>* out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  for (const std::string& name : names) {
    // Every name starting with '.' is ignored (and so "." and "..").
    if (name.empty() || name[0] == '.') continue;
    const std::string path = dir + "/" + name;
    struct stat lst {};
    if (::lstat(path.c_str(), &lst) != 0) continue;
    if (S_ISDIR(lst.st_mode)) {
      Walk(path, out);
      continue;
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    const int64_t mtime_ns =
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    (*out)[path] = SocketIdentity{st.st_ino, mtime_ns};
  }
}

}  // namespace

PluginWatcher::PluginWatcher(std::string dir, DesiredStateOfWorld* dsw)
    : dir_(std::move(dir)), dsw_(dsw) {}

absl::Status PluginWatcher::Start() {
  if (absl::Status s = fs::MkdirAll(*fs::Default(), dir_, 0755); !s.ok()) {
    return absl::InternalError(
        fmt::format("error (re-)creating root {}: {}", dir_, std::string(s.message())));
  }
  DM_INFO("Plugin Watcher Start", {"path", dir_});
  Rescan();
  return absl::OkStatus();
}

void PluginWatcher::Rescan() {
  std::map<std::string, SocketIdentity> found;
  Walk(dir_, &found);
  for (const auto& [path, id] : dsw_->GetPluginsToRegister()) {
    if (found.count(path) == 0) dsw_->RemovePlugin(path);
  }
  for (const auto& [path, id] : found) dsw_->AddOrUpdatePlugin(path, id);
}

}  // namespace devmgr::pluginmanager
