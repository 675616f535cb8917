#include "pluginmanager/reconciler.h"

#include <map>
#include <string>

namespace devmgr::pluginmanager {

void Reconciler::Reconcile() {
  executor_->ReapDoneOperations();
  const std::map<std::string, SocketIdentity> desired = dsw_->GetPluginsToRegister();
  for (const PluginInfo& p : asw_->GetRegisteredPlugins()) {
    auto d = desired.find(p.socket_path);
    if (d == desired.end() || !(d->second == p.id)) executor_->UnregisterPlugin(p);
  }
  executor_->ForgetBackoffs(desired);
  for (const auto& [path, id] : desired) {
    if (!asw_->Contains(path)) executor_->RegisterPlugin(path, id);
  }
}

}  // namespace devmgr::pluginmanager
