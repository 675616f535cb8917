// PluginWatcher: the kubelet's pluginwatcher. Keeps the desired state of the
// world equal to the sockets under the plugins_registry directory:
// sub-directories are walked, names starting with '.' and files that are not
// sockets are ignored. The kubelet learns of changes through fsnotify; here
// the plugin manager's loop calls Rescan once per period, which shows the
// same sockets to the reconciler (which also runs once per period).
#ifndef DEVMGR_PLUGINMANAGER_PLUGIN_WATCHER_H_
#define DEVMGR_PLUGINMANAGER_PLUGIN_WATCHER_H_

#include <string>

#include "absl/status/status.h"
#include "pluginmanager/cache.h"

namespace devmgr::pluginmanager {

// Rescan is called from one thread at a time.
class PluginWatcher {
 public:
  // `dsw` must outlive the watcher.
  PluginWatcher(std::string dir, DesiredStateOfWorld* dsw);

  // Creates the directory (0755) when missing: "error (re-)creating root
  // <dir>: <err>" on failure. Then one Rescan.
  absl::Status Start();
  // Adds (or updates) every socket found and removes the sockets gone.
  void Rescan();

 private:
  const std::string dir_;
  DesiredStateOfWorld* const dsw_;
};

}  // namespace devmgr::pluginmanager

#endif  // DEVMGR_PLUGINMANAGER_PLUGIN_WATCHER_H_
