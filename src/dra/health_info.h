// HealthInfoCache: the DRA manager's device health cache (KEP-4680, the
// kubelet's pkg/kubelet/cm/dra healthinfo.go, 1.34-1.37): per driver, pool
// and device, the last health a driver's DRAResourceHealth stream reported,
// when, with its timeout and message. No gRPC: the stream client
// (dra/health_stream.h) feeds it, the pod status (dra/health_status.h) reads
// it. Facts and sources: docs/resource-health.md ("DRA").
#ifndef DEVMGR_DRA_HEALTH_INFO_H_
#define DEVMGR_DRA_HEALTH_INFO_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/fs.h"

namespace devmgr::dra {

// DefaultHealthTimeout (healthTimeout in 1.34): how long a reported health
// stays valid, when the driver set no health_check_timeout_seconds (1.35+)
// or the kubelet reads none (1.34).
inline constexpr absl::Duration kDefaultHealthTimeout = absl::Seconds(30);
// maxDevicesPerDriver (1.37): new devices past this many per driver are
// ignored.
inline constexpr size_t kMaxHealthDevicesPerDriver = 16384;
// v1.ResourceHealthMessageMaxLength (k8s.io/api 0.36+).
inline constexpr size_t kHealthMessageMaxLength = 1024;

// state.DeviceHealthStatus.
enum class DeviceHealthStatus { kUnknown, kHealthy, kUnhealthy };

// "Unknown", "Healthy", "Unhealthy" (the API's ResourceHealthStatus values).
std::string_view HealthName(DeviceHealthStatus health);

// state.DeviceHealth.
struct DeviceHealth {
  std::string pool_name;
  std::string device_name;
  DeviceHealthStatus health = DeviceHealthStatus::kUnknown;
  // Set to the cache's clock at each report (the driver's last_updated_time
  // is overwritten, as by the kubelet).
  absl::Time last_updated;
  absl::Duration timeout = kDefaultHealthTimeout;
  std::string message;

  bool operator==(const DeviceHealth&) const = default;
};

// truncateHealthMessage (1.36+): a message over kHealthMessageMaxLength
// bytes keeps its first 1021 bytes and gains "..." (bytes, as Go slices).
std::string TruncateHealthMessage(std::string message);

// One device of a NodeWatchResources response as the kubelet of `minor`
// reads it: the timeout from health_check_timeout_seconds when positive
// (1.35+; 1.34's API has no such field), else kDefaultHealthTimeout; the
// message (1.36+, truncated) or none.
DeviceHealth ReadDeviceHealth(int minor, std::string pool_name, std::string device_name,
                              DeviceHealthStatus health, int64_t timeout_seconds,
                              std::string message);

struct HealthInfoCacheOptions {
  // The kubelet release emulated (1.<minor>, 34+): from 1.37 new devices
  // past kMaxHealthDevicesPerDriver are ignored and timed-out devices leave
  // the cache (1.34-1.36 keep them as Unknown); the state file's fields.
  int kubelet_minor = 37;
  // dra_health_state: read by the constructor, written after every change
  // (the kubelet's healthInfoCache checkpoint). "": memory only.
  std::string state_file;
  // nullptr: fs::Default(). Not owned.
  fs::Filesystem* filesystem = nullptr;
};

// The state file's JSON (state.DevicesHealthMap as Go's encoding/json writes
// it): {"<driver>":{"Devices":{"<pool>/<device>":{"PoolName":...,
// "DeviceName":...,"Health":...,"LastUpdated":RFC 3339 with nanoseconds,
// "HealthCheckTimeout":nanoseconds (1.35+),"Message":... (1.36+)}}}.
std::string EncodeHealthState(
    const std::map<std::string, std::map<std::string, DeviceHealth>>& drivers, int minor);
// The reverse; a missing HealthCheckTimeout or one of 0 reads as
// kDefaultHealthTimeout. InvalidArgument for text that is not such JSON.
absl::StatusOr<std::map<std::string, std::map<std::string, DeviceHealth>>> DecodeHealthState(
    const std::string& text);

// Thread-safe.
class HealthInfoCache {
 public:
  // `clock` (not owned; nullptr: the real clock) must outlive the cache.
  // `max_devices_per_driver` 0: no limit (1.34-1.36). Memory only, timed-out
  // devices dropped (as 1.37).
  explicit HealthInfoCache(const Clock* clock, size_t max_devices_per_driver = 0);
  // The node's cache: per release, with the state file loaded (a missing
  // file is an empty cache; an unreadable or corrupt one is logged, "Failed
  // to load health checkpoint, proceeding with empty cache", and ignored).
  HealthInfoCache(const Clock* clock, HealthInfoCacheOptions opts);
  HealthInfoCache(const HealthInfoCache&) = delete;
  HealthInfoCache& operator=(const HealthInfoCache&) = delete;

  // updateHealthInfo: one response of `driver`'s stream, its complete list.
  // Each reported device is stored with last_updated = now; it counts as
  // changed when it is new or its health, message or timeout differ. A
  // stored device missing from the list whose timeout has passed since its
  // last report turns Unknown (changed, unless it was Unknown already) and
  // leaves the cache. Returns the changed devices, reported ones first in
  // report order, then the timed-out ones by pool/device.
  std::vector<DeviceHealth> Update(const std::string& driver, std::vector<DeviceHealth> reported)
      ABSL_LOCKS_EXCLUDED(mu_);

  // getHealthInfo: the stored health of the device, or Unknown without a
  // message when none is stored or its timeout has passed.
  DeviceHealth Get(const std::string& driver, const std::string& pool,
                   const std::string& device) const ABSL_LOCKS_EXCLUDED(mu_);

  // clearDriver: forgets everything of `driver` (its stream ended). The
  // state file is written.
  void ClearDriver(const std::string& driver) ABSL_LOCKS_EXCLUDED(mu_);

  // Driver -> "<pool>/<device>" -> stored health (the status file).
  std::map<std::string, std::map<std::string, DeviceHealth>> Snapshot() const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // saveToCheckpointInternal: errors are logged only.
  void SaveLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const Clock* const clock_;
  const size_t max_devices_;
  const HealthInfoCacheOptions opts_;
  // 1.34-1.36: a timed-out device stays, as Unknown.
  const bool keep_timed_out_;

  mutable absl::Mutex mu_;
  std::map<std::string, std::map<std::string, DeviceHealth>> drivers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_HEALTH_INFO_H_
