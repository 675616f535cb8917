// PluginHandler: what one plugin type hands the plugin manager, as the
// kubelet's pluginmanager cache.PluginHandler. A plugin's GetInfo reply names
// its type; the plugin manager looks the handler up by that type (one handler
// per type, added with PluginManager::AddHandler) and calls it to validate,
// register and, when the plugin's socket goes away, deregister the plugin.
#ifndef DEVMGR_PLUGINMANAGER_PLUGIN_HANDLER_H_
#define DEVMGR_PLUGINMANAGER_PLUGIN_HANDLER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace devmgr::pluginmanager {

// pluginregistration v1's type constants (PluginInfo.type).
inline constexpr char kCSIPluginType[] = "CSIPlugin";
inline constexpr char kDevicePluginType[] = "DevicePlugin";
inline constexpr char kDRAPluginType[] = "DRAPlugin";

// Called from the plugin manager's threads; implementations are thread-safe.
class PluginHandler {
 public:
  virtual ~PluginHandler() = default;
  // A failure is sent to the plugin as "RegisterPlugin error -- plugin
  // validation failed with err: <message>" and the registration is retried
  // with backoff.
  virtual absl::Status ValidatePlugin(const std::string& name, const std::string& endpoint,
                                      const std::vector<std::string>& versions) = 0;
  // `endpoint` is the plugin's, or the registration socket's path when the
  // plugin left it empty. A failure is sent to the plugin as "RegisterPlugin
  // error -- plugin registration failed with err: <message>".
  virtual absl::Status RegisterPlugin(const std::string& name, const std::string& endpoint,
                                      const std::vector<std::string>& versions) = 0;
  // The plugin's registration socket was removed or re-created. `endpoint` is
  // what RegisterPlugin was given.
  virtual void DeRegisterPlugin(const std::string& name, const std::string& endpoint) = 0;
};

// Plugin type -> its handler.
using HandlerMap = std::map<std::string, PluginHandler*>;

}  // namespace devmgr::pluginmanager

#endif  // DEVMGR_PLUGINMANAGER_PLUGIN_HANDLER_H_
