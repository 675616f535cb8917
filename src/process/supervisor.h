// Supervisor: keeps plugin processes running the way a DaemonSet would,
// restarting a plugin that exits, with a capped exponential back-off.
#ifndef DEVMGR_NODE_SUPERVISOR_H_
#define DEVMGR_NODE_SUPERVISOR_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "process/plugin_process.h"

namespace devmgr::node {

// One supervised process as the `serve --status-file` document shows it.
struct PluginProcessStatus {
  std::string command;
  int pid = -1;
  bool running = false;
  int restarts = 0;
  std::optional<int> last_exit_code;
};

// Thread-safe.
class Supervisor {
 public:
  Supervisor() = default;
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Starts the process and keeps it running until Stop. Fails when the
  // first start fails (a later failed restart is logged and retried).
  absl::Status Add(PluginProcessOptions opts);
  // Stops every process (SIGTERM, then SIGKILL after `grace`) and joins.
  // Idempotent.
  void Stop(absl::Duration grace = absl::Seconds(5));
  std::vector<PluginProcessStatus> Status() const;
  // Called after a plugin exits or restarts (without locks held).
  void SetChangeCallback(std::function<void()> cb);

 private:
  struct Entry {
    std::unique_ptr<PluginProcess> process;
    int restarts = 0;
    std::thread watcher;
  };
  void Watch(Entry* e);

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::unique_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  std::function<void()> on_change_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::node

#endif  // DEVMGR_NODE_SUPERVISOR_H_
