// The plugin manager's two caches, as the kubelet's pluginmanager/cache:
// the desired state of the world (the registration sockets the watcher sees)
// and the actual state of the world (the plugins registered with a handler).
// The reconciler compares the two.
#ifndef DEVMGR_PLUGINMANAGER_CACHE_H_
#define DEVMGR_PLUGINMANAGER_CACHE_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "pluginmanager/plugin_handler.h"

namespace devmgr::pluginmanager {

// Which socket file a path holds. The kubelet marks each create event of a
// socket (a timestamp, a UID in later releases); here the socket's inode and
// mtime play that part, so that a socket removed and created again between two
// scans is a new socket.
struct SocketIdentity {
  ino_t ino = 0;
  int64_t mtime_ns = 0;
  bool operator==(const SocketIdentity& o) const { return ino == o.ino && mtime_ns == o.mtime_ns; }
};

// Socket path -> identity. Thread-safe.
class DesiredStateOfWorld {
 public:
  void AddOrUpdatePlugin(const std::string& socket_path, SocketIdentity id);
  void RemovePlugin(const std::string& socket_path);
  std::map<std::string, SocketIdentity> GetPluginsToRegister() const;
  // True when `socket_path` is desired with identity `id`.
  bool PluginExists(const std::string& socket_path, SocketIdentity id) const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, SocketIdentity> plugins_ ABSL_GUARDED_BY(mu_);
};

// A plugin in the actual state of the world.
struct PluginInfo {
  std::string socket_path;
  SocketIdentity id;
  PluginHandler* handler = nullptr;
  std::string name;
  std::string endpoint;
};

// Socket path -> registered plugin. Thread-safe.
class ActualStateOfWorld {
 public:
  void AddPlugin(PluginInfo info);
  void RemovePlugin(const std::string& socket_path);
  std::vector<PluginInfo> GetRegisteredPlugins() const;
  bool Contains(const std::string& socket_path) const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, PluginInfo> plugins_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::pluginmanager

#endif  // DEVMGR_PLUGINMANAGER_CACHE_H_
