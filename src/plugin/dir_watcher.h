// DirWatcher: inotify on a few directories, as real device plugins use
// fsnotify to notice a kubelet restart (kubelet.sock re-created) or the
// deletion of their own socket. Also the wake-up point of the plugin's event
// loop.
#ifndef DEVMGR_PLUGIN_DIR_WATCHER_H_
#define DEVMGR_PLUGIN_DIR_WATCHER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace devmgr::plugin {

// Wait() and Watch() are confined to one thread; Wake() is thread-safe.
class DirWatcher {
 public:
  struct Event {
    std::string dir;
    // The entry's name; "" when the directory itself (re)appeared.
    std::string name;
    bool created = false;  // created or moved in (or the dir reappeared)
    bool deleted = false;  // deleted or moved out
    // The kernel's event queue overflowed: events were lost (dir and name
    // are empty); whoever cares must look at the directories again.
    bool overflow = false;
  };

  DirWatcher() = default;
  ~DirWatcher();
  DirWatcher(const DirWatcher&) = delete;
  DirWatcher& operator=(const DirWatcher&) = delete;

  // What a watch reports. Every watch notices entries created, moved in,
  // deleted or moved out, and the directory itself going away.
  enum class Content {
    kEntries,  // only that: the kubelet's checkpoint writes (create, write,
               // close, rename) wake the watcher twice, not four times
    kWrites,   // also writes to files in it (a control file appended to)
  };

  absl::Status Init();
  // Watches `dir`. A missing directory is retried on every Wait(). Watching
  // a directory again adds to what it reports.
  void Watch(const std::string& dir, Content content = Content::kEntries);
  // Waits up to `timeout` for events or a Wake(). *woken is set when Wake()
  // was called since the last Wait().
  std::vector<Event> Wait(absl::Duration timeout, bool* woken);
  void Wake();

 private:
  struct Dir {
    std::string path;
    uint32_t mask = 0;
    int wd = -1;
    bool ever_watched = false;
  };
  void AddMissingWatches(std::vector<Event>* events);
  // Appends the events of `n` bytes read from the inotify descriptor.
  void Decode(const char* buf, size_t n, std::vector<Event>* events);

  int inotify_fd_ = -1;
  int wake_fd_ = -1;
  std::vector<Dir> dirs_;
};

}  // namespace devmgr::plugin

#endif  // DEVMGR_PLUGIN_DIR_WATCHER_H_
