// HealthStreams: the kubelet's DRAResourceHealth client (KEP-4680; the DRA
// plugin manager's health goroutine and the DRA manager's
// HandleWatchResourcesStream, pkg/kubelet/cm/dra, 1.34-1.37). For each
// registered driver instance it opens NodeWatchResources when the kubelet
// would, feeds every response into the HealthInfoCache, reports the changed
// devices, clears the driver's health when the stream ends and opens it
// again after the retry period. Facts and sources: docs/resource-health.md
// ("DRA").
#ifndef DEVMGR_DRA_HEALTH_STREAM_H_
#define DEVMGR_DRA_HEALTH_STREAM_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dra/health_info.h"
#include "grpcpp/channel.h"

namespace devmgr::dra {

inline constexpr char kV1alpha1DRAResourceHealth[] = "v1alpha1.DRAResourceHealth";
inline constexpr char kV1DRAResourceHealth[] = "v1.DRAResourceHealth";
// wait.UntilWithContext's period around the stream: it is opened again this
// long after it ended (or failed to open).
inline constexpr absl::Duration kHealthStreamRetryPeriod = absl::Seconds(5);

enum class HealthService { kNone, kV1alpha1, kV1 };

// The health service the kubelet of `minor` watches for a driver that
// registered with `versions`, with the ResourceHealthStatus gate `gate`:
//   gate off:  none;
//   1.34-1.36: v1alpha1, whether or not the driver advertised it;
//   1.37:      v1 when advertised, else v1alpha1 when advertised, else none.
HealthService ChooseHealthService(int minor, bool gate, const std::vector<std::string>& versions);

struct HealthStreamsOptions {
  // The kubelet release emulated (1.<minor>, 34+).
  int kubelet_minor = 37;
  // The ResourceHealthStatus gate.
  bool enabled = false;
  absl::Duration retry_period = kHealthStreamRetryPeriod;
  // Not owned; must outlive the streams.
  HealthInfoCache* cache = nullptr;
  // Called with the devices of `driver` a response changed (never empty), on
  // the stream's thread with no lock of HealthStreams held. May be empty.
  std::function<void(const std::string& driver, const std::vector<DeviceHealth>& changed)>
      on_change;
};

// Thread-safe. One thread per watched instance; Stop (and the destructor)
// cancels every stream and joins every thread, without clearing any
// driver's health (the kubelet stopping; Unwatch does clear it).
class HealthStreams {
 public:
  explicit HealthStreams(HealthStreamsOptions opts);
  ~HealthStreams();
  HealthStreams(const HealthStreams&) = delete;
  HealthStreams& operator=(const HealthStreams&) = delete;

  // A registered instance of `driver` (id unique per handler): starts its
  // stream loop when ChooseHealthService picks a service. Never blocks.
  // No-op after Stop.
  void Watch(uint64_t id, const std::string& driver, std::shared_ptr<grpc::Channel> channel,
             const std::vector<std::string>& versions) ABSL_LOCKS_EXCLUDED(mu_);
  // The instance deregistered: its stream is cancelled (which clears the
  // driver's health) and not opened again. Never blocks; unknown ids are
  // ignored.
  void Unwatch(uint64_t id) ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Streams opened so far (each NodeWatchResources call), for tests.
  int64_t opened() const ABSL_LOCKS_EXCLUDED(mu_);
  // Streams ended so far (the health cleared after each), for tests.
  int64_t ended() const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until opened() >= n (or ended() >= n); false after `timeout`.
  bool WaitForOpened(int64_t n, absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);
  bool WaitForEnded(int64_t n, absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Stream;

  void Loop(std::shared_ptr<Stream> s);
  // One NodeWatchResources call until it ends; its gRPC status code.
  int RunOnce(Stream& s) ABSL_LOCKS_EXCLUDED(mu_);
  void ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const HealthStreamsOptions opts_;

  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::map<uint64_t, std::shared_ptr<Stream>> streams_ ABSL_GUARDED_BY(mu_);
  // Threads of unwatched instances, joined once done (or by Stop).
  std::vector<std::shared_ptr<Stream>> retired_ ABSL_GUARDED_BY(mu_);
  int64_t opened_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t ended_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_HEALTH_STREAM_H_
