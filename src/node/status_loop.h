// StatusLoop: serve's node-status loop. The kubelet runs its node-status
// setter every nodeStatusUpdateFrequency (GetCapacity, which also expires
// resources whose endpoint's grace period is over); devmgr does the same
// and, with a status file, rewrites it after every pass and whenever
// something changed (MarkDirty).
#ifndef DEVMGR_NODE_STATUS_LOOP_H_
#define DEVMGR_NODE_STATUS_LOOP_H_

#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "node/node.h"
#include "node/pod_manager.h"
#include "process/supervisor.h"

namespace devmgr::node {

struct StatusLoopOptions {
  // Between two node-status passes.
  absl::Duration period = absl::Seconds(10);
  // Rewritten after every pass; empty: none.
  std::string status_file;
  // More top-level sections of the status file (an object whose keys are
  // added), e.g. serve's embedded API endpoint; unset: none.
  std::function<nlohmann::json()> extra_sections;
};

// Thread-safe. `node`, `sup` and `pods` must outlive the loop.
class StatusLoop {
 public:
  StatusLoop(Node* node, Supervisor* sup, PodManager* pods, StatusLoopOptions opts)
      : node_(node), sup_(sup), pods_(pods), opts_(std::move(opts)) {}
  ~StatusLoop() { Stop(); }
  StatusLoop(const StatusLoop&) = delete;
  StatusLoop& operator=(const StatusLoop&) = delete;

  // Starts the thread; the first pass runs at once.
  void Start();
  // Asks for a pass (and a status-file write) as soon as possible.
  void MarkDirty() ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the thread; idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // One pass now, on the caller's thread (e.g. the final write after the
  // node stopped).
  void PassNow() { Pass(); }

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  void Pass();

  Node* const node_;
  Supervisor* const sup_;
  PodManager* const pods_;
  const StatusLoopOptions opts_;
  absl::Mutex mu_;
  bool dirty_ ABSL_GUARDED_BY(mu_) = true;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace devmgr::node

#endif  // DEVMGR_NODE_STATUS_LOOP_H_
