#include "plugin/device_state.h"

#include <algorithm>

namespace devmgr::plugin {
namespace {
constexpr absl::Duration kPoll = absl::Milliseconds(100);
}  // namespace

DeviceState::DeviceState(std::vector<DeviceConfig> devices) : devices_(std::move(devices)) {}

void DeviceState::BumpLocked() {
  ++version_;
  cv_.SignalAll();
}

bool DeviceState::SetHealth(const std::string& id, const std::string& health) {
  absl::MutexLock l(&mu_);
  bool found = false;
  for (DeviceConfig& d : devices_) {
    if (d.id == id) {
      d.health = health;
      found = true;
    }
  }
  if (found) BumpLocked();
  return found;
}

void DeviceState::SetDevices(std::vector<DeviceConfig> devices) {
  absl::MutexLock l(&mu_);
  devices_ = std::move(devices);
  BumpLocked();
}

void DeviceState::AddDevice(DeviceConfig device) {
  absl::MutexLock l(&mu_);
  devices_.push_back(std::move(device));
  BumpLocked();
}

bool DeviceState::RemoveDevice(const std::string& id) {
  absl::MutexLock l(&mu_);
  const size_t before = devices_.size();
  devices_.erase(std::remove_if(devices_.begin(), devices_.end(),
                                [&](const DeviceConfig& d) { return d.id == id; }),
                 devices_.end());
  if (devices_.size() == before) return false;
  BumpLocked();
  return true;
}

std::vector<DeviceConfig> DeviceState::Devices() const {
  absl::MutexLock l(&mu_);
  return devices_;
}

std::optional<std::string> DeviceState::HealthOf(const std::string& id) const {
  absl::MutexLock l(&mu_);
  for (const DeviceConfig& d : devices_) {
    if (d.id == id) return d.health;
  }
  return std::nullopt;
}

uint64_t DeviceState::version() const {
  absl::MutexLock l(&mu_);
  return version_;
}

uint64_t DeviceState::Fill(v1beta1::ListAndWatchResponse* out) const {
  absl::MutexLock l(&mu_);
  out->Clear();
  out->mutable_devices()->Reserve(static_cast<int>(devices_.size()));
  for (const DeviceConfig& d : devices_) {
    v1beta1::Device* pd = out->add_devices();
    pd->set_id(d.id);
    pd->set_health(d.health);
    if (d.has_topology) {
      v1beta1::TopologyInfo* t = pd->mutable_topology();
      for (int64_t n : d.numa_nodes) t->add_nodes()->set_id(n);
    }
  }
  return version_;
}

void DeviceState::WakeAll() {
  absl::MutexLock l(&mu_);
  ++wakes_;
  cv_.SignalAll();
}

bool DeviceState::WaitForChange(uint64_t seen, absl::Time deadline,
                                const std::function<bool()>& interrupted) {
  absl::MutexLock l(&mu_);
  while (version_ == seen) {
    if (interrupted()) return false;
    const absl::Time now = absl::Now();
    if (now >= deadline) return false;
    cv_.WaitWithDeadline(&mu_, std::min(deadline, now + kPoll));
  }
  return true;
}

bool DeviceState::SleepUntil(absl::Time deadline, const std::function<bool()>& interrupted) {
  absl::MutexLock l(&mu_);
  while (true) {
    if (interrupted()) return false;
    const absl::Time now = absl::Now();
    if (now >= deadline) return true;
    cv_.WaitWithDeadline(&mu_, std::min(deadline, now + kPoll));
  }
}

}  // namespace devmgr::plugin
