#include "pluginmanager/plugin_manager.h"

#include <utility>

#include "fmt/format.h"

namespace devmgr::pluginmanager {

PluginManager::PluginManager(PluginManagerOptions opts, RegistrationDialer dialer)
    : opts_(std::move(opts)),
      watcher_(opts_.dir, &dsw_),
      executor_(opts_.operations, std::move(dialer), &handlers_, &asw_),
      reconciler_(&dsw_, &asw_, &executor_) {}

PluginManager::~PluginManager() { Stop(); }

absl::Status PluginManager::AddHandler(const std::string& type, PluginHandler* handler) {
  absl::MutexLock lock(&mu_);
  if (started_ || stopping_) {
    return absl::FailedPreconditionError(
        fmt::format("plugin handler for type {} added after the plugin manager started", type));
  }
  if (!handlers_.emplace(type, handler).second) {
    return absl::AlreadyExistsError(fmt::format("plugin type {} already has a handler", type));
  }
  return absl::OkStatus();
}

absl::Status PluginManager::Start() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (started_ || stopping_) {
      return absl::FailedPreconditionError("plugin manager already started");
    }
    started_ = true;
  }
  if (absl::Status s = watcher_.Start(); !s.ok()) return s;
  loop_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void PluginManager::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (loop_.joinable()) loop_.join();
  executor_.Stop();
}

std::vector<std::string> PluginManager::RegisteredSockets() const {
  std::vector<std::string> out;
  for (const PluginInfo& p : asw_.GetRegisteredPlugins()) out.push_back(p.socket_path);
  return out;
}

void PluginManager::Loop() {
  while (true) {
    watcher_.Rescan();
    reconciler_.Reconcile();
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), opts_.period)) return;
  }
}

}  // namespace devmgr::pluginmanager
