// HealthService: the reference DRA driver's device health (KEP-4680,
// DRAResourceHealth v1alpha1 and v1). Every NodeWatchResources stream gets
// the driver's complete device list at once and again after each change;
// changes come from the driver's --health-control file (ApplyControlLine),
// which can also end the open streams. Which versions are served is the
// config's health.serve (docs/sample-dra-driver.md, "Device health").
#ifndef DEVMGR_DRAPLUGIN_HEALTH_SERVICE_H_
#define DEVMGR_DRAPLUGIN_HEALTH_SERVICE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "draplugin/config.h"

namespace grpc {
class Service;
}  // namespace grpc

namespace devmgr::draplugin {

// A device's health as the driver reports it.
struct DeviceHealthState {
  std::string health = "Healthy";  // "Healthy", "Unhealthy" or "Unknown"
  std::string message;
};

// Thread-safe.
class HealthService {
 public:
  // `pool`: the pool every device is reported in (the node's name, as the
  // driver's slice has it).
  HealthService(const Config& config, std::string pool);
  ~HealthService();
  HealthService(const HealthService&) = delete;
  HealthService& operator=(const HealthService&) = delete;

  // The gRPC services to register, per config.health.serve (may be none).
  std::vector<grpc::Service*> Services();

  // One control line (docs/sample-dra-driver.md):
  //   health DEVICE HEALTH [MESSAGE...]   HEALTH: Healthy, Unhealthy, Unknown;
  //                                       the message is the rest of the line
  //   silence DEVICE                      leave the device out of the list
  //   end-health-streams                  end every open stream (OK status)
  // Blank lines and lines starting with '#' are ignored. InvalidArgument for
  // a bad line (an unknown command or device, a bad health value).
  absl::Status ApplyControlLine(const std::string& line) ABSL_LOCKS_EXCLUDED(mu_);

  // Ends every open stream and refuses new ones (CANCELLED).
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Streams open now, for tests.
  int open_streams() const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until open_streams() >= n; false after `timeout` (real time).
  bool WaitForStreams(int n, absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);

  // The list every stream sends, as (device, state), devices in config order
  // (silenced ones left out).
  std::vector<std::pair<std::string, DeviceHealthState>> List() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The generated services' adapters and the stream loop (health_service.cc).
  struct Streamer;

  const std::string pool_;
  const std::vector<std::string> order_;
  const int64_t timeout_seconds_;
  std::unique_ptr<grpc::Service> v1alpha1_;
  std::unique_ptr<grpc::Service> v1_;

  mutable absl::Mutex mu_;
  std::map<std::string, DeviceHealthState> devices_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, bool> silenced_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t end_generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  int open_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace devmgr::draplugin

#endif  // DEVMGR_DRAPLUGIN_HEALTH_SERVICE_H_
