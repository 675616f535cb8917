// ConnectionMonitor: follows the connectivity of gRPC channels (one per
// registered DRA driver instance) on one thread and reports when a channel
// becomes connected (READY) or stops being so, the events behind the
// kubelet's DRA connection monitoring (#132058, 1.34): calls go to a
// connected instance, and a driver left with none has its ResourceSlices
// wiped after a delay.
#ifndef DEVMGR_DRA_CONNECTION_MONITOR_H_
#define DEVMGR_DRA_CONNECTION_MONITOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/completion_queue.h"

namespace devmgr::dra {

// Thread-safe. The callback runs on the monitor's thread with no lock of the
// monitor held; it may call Watch and Unwatch.
class ConnectionMonitor {
 public:
  // `on_change(id, connected)`: the channel watched as `id` became READY
  // (true) or left READY (false). A channel that is not READY when watched
  // counts as not connected (no report). `recheck` bounds each wait for a
  // state change, and so how long Stop may take.
  ConnectionMonitor(std::function<void(uint64_t id, bool connected)> on_change,
                    absl::Duration recheck);
  ~ConnectionMonitor();
  ConnectionMonitor(const ConnectionMonitor&) = delete;
  ConnectionMonitor& operator=(const ConnectionMonitor&) = delete;

  // Starts watching `channel` as `id` and asks it to connect; an idle
  // channel (a dropped connection leaves one idle) is asked again at each
  // change. REQUIRES: `id` was never watched before. No-op after Stop.
  void Watch(uint64_t id, std::shared_ptr<grpc::Channel> channel);
  // Stops reporting `id` (no report comes once this returns, unless one is
  // running now). Unknown ids are ignored.
  void Unwatch(uint64_t id);
  // Stops watching everything and joins the thread. Idempotent.
  void Stop();

 private:
  struct Entry {
    std::shared_ptr<grpc::Channel> channel;
    grpc_connectivity_state last;
    bool connected = false;
  };
  void Loop();
  void ArmLocked(uint64_t id, Entry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const std::function<void(uint64_t, bool)> on_change_;
  const absl::Duration recheck_;

  grpc::CompletionQueue cq_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<uint64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_CONNECTION_MONITOR_H_
