#include "dra/health_info.h"

#include <set>
#include <utility>

#include "common/logging.h"

namespace devmgr::dra {
namespace {

std::string KeyOf(const std::string& pool, const std::string& device) {
  return pool + "/" + device;
}

}  // namespace

std::string_view HealthName(DeviceHealthStatus health) {
  switch (health) {
    case DeviceHealthStatus::kHealthy:
      return "Healthy";
    case DeviceHealthStatus::kUnhealthy:
      return "Unhealthy";
    case DeviceHealthStatus::kUnknown:
      break;
  }
  return "Unknown";
}

std::string TruncateHealthMessage(std::string message) {
  if (message.size() <= kHealthMessageMaxLength) return message;
  message.resize(kHealthMessageMaxLength - 3);
  return message + "...";
}

DeviceHealth ReadDeviceHealth(int minor, std::string pool_name, std::string device_name,
                              DeviceHealthStatus health, int64_t timeout_seconds,
                              std::string message) {
  DeviceHealth d;
  d.pool_name = std::move(pool_name);
  d.device_name = std::move(device_name);
  d.health = health;
  // buildDeviceHealth (1.35+): zero or negative means the default.
  if (minor >= 35 && timeout_seconds > 0) d.timeout = absl::Seconds(timeout_seconds);
  if (minor >= 36) d.message = TruncateHealthMessage(std::move(message));
  return d;
}

HealthInfoCache::HealthInfoCache(const Clock* clock, size_t max_devices_per_driver)
    : clock_(clock != nullptr ? clock : &RealClock::Get()), max_devices_(max_devices_per_driver) {}

std::vector<DeviceHealth> HealthInfoCache::Update(const std::string& driver,
                                                  std::vector<DeviceHealth> reported) {
  std::vector<DeviceHealth> changed;
  absl::MutexLock l(&mu_);
  const absl::Time now = clock_->Now();
  std::map<std::string, DeviceHealth>& devices = drivers_[driver];
  std::set<std::string> seen;
  size_t ignored = 0;
  for (DeviceHealth& d : reported) {
    d.last_updated = now;
    const std::string key = KeyOf(d.pool_name, d.device_name);
    seen.insert(key);
    auto it = devices.find(key);
    if (it == devices.end() && max_devices_ != 0 && devices.size() >= max_devices_) {
      ++ignored;
      continue;
    }
    if (it == devices.end() || it->second.health != d.health || it->second.message != d.message ||
        it->second.timeout != d.timeout) {
      changed.push_back(d);
    }
    devices[key] = std::move(d);
  }
  if (ignored > 0) {
    DM_ERROR("",
             "Health report contains more devices than the cache keeps per driver, ignoring "
             "new devices beyond the limit",
             {"driverName", driver}, {"limit", std::to_string(max_devices_)},
             {"ignoredDevices", std::to_string(ignored)});
  }
  // Devices the driver no longer lists: Unknown once their timeout passed.
  // (1.34-1.36 keep them as Unknown, 1.37 drops them; a missing device
  // reads as Unknown, so both look the same from outside.)
  for (auto it = devices.begin(); it != devices.end();) {
    DeviceHealth& d = it->second;
    if (seen.count(it->first) != 0 || now - d.last_updated <= d.timeout) {
      ++it;
      continue;
    }
    if (d.health != DeviceHealthStatus::kUnknown) {
      d.health = DeviceHealthStatus::kUnknown;
      d.message.clear();
      d.last_updated = now;
      changed.push_back(d);
    }
    it = devices.erase(it);
  }
  return changed;
}

DeviceHealth HealthInfoCache::Get(const std::string& driver, const std::string& pool,
                                  const std::string& device) const {
  DeviceHealth out;
  out.pool_name = pool;
  out.device_name = device;
  absl::MutexLock l(&mu_);
  const absl::Time now = clock_->Now();
  auto d = drivers_.find(driver);
  if (d == drivers_.end()) return out;
  auto it = d->second.find(KeyOf(pool, device));
  if (it == d->second.end()) return out;
  if (now - it->second.last_updated > it->second.timeout) return out;
  return it->second;
}

void HealthInfoCache::ClearDriver(const std::string& driver) {
  absl::MutexLock l(&mu_);
  drivers_.erase(driver);
}

std::map<std::string, std::map<std::string, DeviceHealth>> HealthInfoCache::Snapshot() const {
  absl::MutexLock l(&mu_);
  return drivers_;
}

}  // namespace devmgr::dra
