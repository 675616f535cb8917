#include "pluginmanager/cache.h"

#include <utility>

namespace devmgr::pluginmanager {

void DesiredStateOfWorld::AddOrUpdatePlugin(const std::string& socket_path, SocketIdentity id) {
  absl::MutexLock lock(&mu_);
  plugins_[socket_path] = id;
}

void DesiredStateOfWorld::RemovePlugin(const std::string& socket_path) {
  absl::MutexLock lock(&mu_);
  plugins_.erase(socket_path);
}

std::map<std::string, SocketIdentity> DesiredStateOfWorld::GetPluginsToRegister() const {
  absl::MutexLock lock(&mu_);
  return plugins_;
}

bool DesiredStateOfWorld::PluginExists(const std::string& socket_path, SocketIdentity id) const {
  absl::MutexLock lock(&mu_);
  auto it = plugins_.find(socket_path);
  return it != plugins_.end() && it->second == id;
}

void ActualStateOfWorld::AddPlugin(PluginInfo info) {
  absl::MutexLock lock(&mu_);
  std::string path = info.socket_path;
  plugins_[std::move(path)] = std::move(info);
}

void ActualStateOfWorld::RemovePlugin(const std::string& socket_path) {
  absl::MutexLock lock(&mu_);
  plugins_.erase(socket_path);
}

std::vector<PluginInfo> ActualStateOfWorld::GetRegisteredPlugins() const {
  absl::MutexLock lock(&mu_);
  std::vector<PluginInfo> out;
  out.reserve(plugins_.size());
  for (const auto& [path, info] : plugins_) out.push_back(info);
  return out;
}

bool ActualStateOfWorld::Contains(const std::string& socket_path) const {
  absl::MutexLock lock(&mu_);
  return plugins_.count(socket_path) > 0;
}

}  // namespace devmgr::pluginmanager
