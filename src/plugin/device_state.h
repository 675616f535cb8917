// DeviceState: the plugin's current device list, with a version that bumps on
// every change so that ListAndWatch streams know when to send.
#ifndef DEVMGR_PLUGIN_DEVICE_STATE_H_
#define DEVMGR_PLUGIN_DEVICE_STATE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "plugin/config.h"

namespace devmgr::plugin {

// Thread-safe.
class DeviceState {
 public:
  explicit DeviceState(std::vector<DeviceConfig> devices);
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  // Sets the health of every device with this id. False if there is none.
  bool SetHealth(const std::string& id, const std::string& health);
  void SetDevices(std::vector<DeviceConfig> devices);
  void AddDevice(DeviceConfig device);
  // Removes every device with this id. False if there is none.
  bool RemoveDevice(const std::string& id);
  std::vector<DeviceConfig> Devices() const;
  // The health of the first device with this id; nullopt if unknown.
  std::optional<std::string> HealthOf(const std::string& id) const;

  uint64_t version() const;
  // Fills `out` with the current list (in configured order) and returns the
  // version it reflects.
  uint64_t Fill(v1beta1::ListAndWatchResponse* out) const;

  // Wakes every waiter (after an external flag they check has changed).
  void WakeAll();
  // Blocks until the version differs from `seen`, `deadline` passes or
  // `interrupted()` is true (checked at least every 100 ms and after each
  // WakeAll). Returns true when the version changed.
  bool WaitForChange(uint64_t seen, absl::Time deadline, const std::function<bool()>& interrupted);
  // Blocks until `deadline` or `interrupted()`. Returns false when interrupted.
  bool SleepUntil(absl::Time deadline, const std::function<bool()>& interrupted);

 private:
  void BumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  std::vector<DeviceConfig> devices_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t wakes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace devmgr::plugin

#endif  // DEVMGR_PLUGIN_DEVICE_STATE_H_
