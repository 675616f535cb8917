#include "dra/health_info.h"

#include <set>
#include <utility>

#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "nlohmann/json.hpp"

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

namespace {

// Go's time.Time.MarshalJSON in UTC: RFC 3339, nanoseconds without trailing
// zeros, "Z".
std::string GoTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ", t, absl::UTCTimeZone());
}

DeviceHealthStatus ParseHealth(const std::string& s) {
  if (s == "Healthy") return DeviceHealthStatus::kHealthy;
  if (s == "Unhealthy") return DeviceHealthStatus::kUnhealthy;
  return DeviceHealthStatus::kUnknown;
}

}  // namespace

std::string EncodeHealthState(
    const std::map<std::string, std::map<std::string, DeviceHealth>>& drivers, int minor) {
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  for (const auto& [driver, devices] : drivers) {
    nlohmann::ordered_json devs = nlohmann::ordered_json::object();
    for (const auto& [key, d] : devices) {
      nlohmann::ordered_json j;
      j["PoolName"] = d.pool_name;
      j["DeviceName"] = d.device_name;
      j["Health"] = std::string(HealthName(d.health));
      j["LastUpdated"] = GoTime(d.last_updated);
      if (minor >= 35) j["HealthCheckTimeout"] = absl::ToInt64Nanoseconds(d.timeout);
      if (minor >= 36) j["Message"] = d.message;
      devs[key] = std::move(j);
    }
    root[driver] = {{"Devices", std::move(devs)}};
  }
  // encoding/json escapes <, > and & (HTML-safe) and U+2028/U+2029; they
  // only occur inside strings.
  return absl::StrReplaceAll(root.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                             {{"<", "\\u003c"},
                              {">", "\\u003e"},
                              {"&", "\\u0026"},
                              {"\xe2\x80\xa8", "\\u2028"},
                              {"\xe2\x80\xa9", "\\u2029"}});
}

absl::StatusOr<std::map<std::string, std::map<std::string, DeviceHealth>>> DecodeHealthState(
    const std::string& text) {
  std::map<std::string, std::map<std::string, DeviceHealth>> out;
  const nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!root.is_object()) return absl::InvalidArgumentError("not a JSON object");
  for (const auto& [driver, state] : root.items()) {
    if (!state.is_object())
      return absl::InvalidArgumentError("driver " + driver + ": not an object");
    const nlohmann::json devices = state.value("Devices", nlohmann::json::object());
    if (!devices.is_object()) return absl::InvalidArgumentError("driver " + driver + ": Devices");
    std::map<std::string, DeviceHealth>& into = out[driver];
    for (const auto& [key, j] : devices.items()) {
      if (!j.is_object()) return absl::InvalidArgumentError("device " + key + ": not an object");
      DeviceHealth d;
      d.pool_name = j.value("PoolName", "");
      d.device_name = j.value("DeviceName", "");
      d.health = ParseHealth(j.value("Health", ""));
      std::string err;
      if (!absl::ParseTime(absl::RFC3339_full, j.value("LastUpdated", "0001-01-01T00:00:00Z"),
                           &d.last_updated, &err)) {
        return absl::InvalidArgumentError("device " + key + ": LastUpdated: " + err);
      }
      const int64_t ns = j.value("HealthCheckTimeout", int64_t{0});
      d.timeout = ns == 0 ? kDefaultHealthTimeout : absl::Nanoseconds(ns);
      d.message = j.value("Message", "");
      into[key] = std::move(d);
    }
  }
  return out;
}

HealthInfoCache::HealthInfoCache(const Clock* clock, size_t max_devices_per_driver)
    : clock_(clock != nullptr ? clock : &RealClock::Get()),
      max_devices_(max_devices_per_driver),
      keep_timed_out_(false) {}

HealthInfoCache::HealthInfoCache(const Clock* clock, HealthInfoCacheOptions opts)
    : clock_(clock != nullptr ? clock : &RealClock::Get()),
      max_devices_(opts.kubelet_minor >= 37 ? kMaxHealthDevicesPerDriver : 0),
      opts_(std::move(opts)),
      keep_timed_out_(opts_.kubelet_minor < 37) {
  if (opts_.state_file.empty()) return;
  fs::Filesystem& fsys = opts_.filesystem != nullptr ? *opts_.filesystem : *fs::Default();
  absl::StatusOr<std::string> text = fsys.ReadFile(opts_.state_file);
  if (!text.ok()) {
    if (!absl::IsNotFound(text.status())) {
      DM_ERROR(std::string(text.status().message()),
               "Failed to load health checkpoint, proceeding with empty cache");
    }
    return;
  }
  absl::StatusOr<std::map<std::string, std::map<std::string, DeviceHealth>>> state =
      DecodeHealthState(*text);
  if (!state.ok()) {
    DM_ERROR(std::string(state.status().message()),
             "Failed to load health checkpoint, proceeding with empty cache");
    return;
  }
  absl::MutexLock l(&mu_);
  drivers_ = *std::move(state);
}

void HealthInfoCache::SaveLocked() {
  if (opts_.state_file.empty()) return;
  fs::Filesystem& fsys = opts_.filesystem != nullptr ? *opts_.filesystem : *fs::Default();
  fs::AtomicWriteOptions w;
  // os.CreateTemp (0600) in the same directory, write, close, rename: no
  // fsync.
  w.fsync = false;
  w.sync_dir = false;
  w.mode = 0600;
  const std::string base = opts_.state_file.substr(opts_.state_file.rfind('/') + 1);
  w.temp_prefix = base + ".tmp";
  absl::Status s = fs::WriteFileAtomically(fsys, opts_.state_file,
                                           EncodeHealthState(drivers_, opts_.kubelet_minor), w);
  if (!s.ok()) {
    DM_ERROR(std::string(s.message()),
             "Failed to save health checkpoint after update. Kubelet restart may lose the device "
             "health information.");
  }
}

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
  // 1.34-1.36 keep them as Unknown (with a new report time), 1.37 drops
  // them; a missing device reads as Unknown, so both look the same from
  // outside, but the state file differs.
  bool deleted = false;
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
    if (keep_timed_out_) {
      ++it;
      continue;
    }
    it = devices.erase(it);
    deleted = true;
  }
  if (!changed.empty() || deleted) SaveLocked();
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
  SaveLocked();
}

std::map<std::string, std::map<std::string, DeviceHealth>> HealthInfoCache::Snapshot() const {
  absl::MutexLock l(&mu_);
  return drivers_;
}

}  // namespace devmgr::dra
