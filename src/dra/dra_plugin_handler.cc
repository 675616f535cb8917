#include "dra/dra_plugin_handler.h"

#include <algorithm>
#include <utility>

#include "common/logging.h"
#include "fmt/format.h"

namespace devmgr::dra {
namespace {

DraClientOptions ClientOptionsFor(const DraPluginHandlerOptions& opts) {
  DraClientOptions c = opts.client;
  c.validate_utf8 = opts.profile.dra_validates_utf8;
  // v1's Device.share_id came with 1.35 (KEP-5075).
  c.read_share_id = opts.profile.minor >= 35;
  return c;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DraPluginHandler>> DraPluginHandler::Create(
    DraPluginHandlerOptions opts) {
  if (opts.profile.minor < kOldestDraMinor) {
    return absl::InvalidArgumentError(
        fmt::format("DRA plugin registration is emulated for kubelet 1.{} and newer, not {}",
                    kOldestDraMinor, opts.profile.name));
  }
  std::unique_ptr<Timers> own;
  if (opts.timers == nullptr) own = std::make_unique<RealTimers>();
  return std::unique_ptr<DraPluginHandler>(new DraPluginHandler(std::move(opts), std::move(own)));
}

DraPluginHandler::DraPluginHandler(DraPluginHandlerOptions opts, std::unique_ptr<Timers> own)
    : opts_(std::move(opts)),
      client_opts_(ClientOptionsFor(opts_)),
      own_timers_(std::move(own)),
      timers_(opts_.timers != nullptr ? opts_.timers : own_timers_.get()),
      monitor_([this](uint64_t id, bool connected) { OnConnectionChange(id, connected); },
               opts_.connection_recheck) {}

DraPluginHandler::~DraPluginHandler() { Stop(); }

void DraPluginHandler::Stop() {
  // First: no connection report comes after this.
  monitor_.Stop();
  std::unique_ptr<Timers> own;
  {
    absl::MutexLock l(&mu_);
    if (stopped_) return;
    stopped_ = true;
    for (const auto& [driver, id] : wipes_) timers_->Cancel(id);
    wipes_.clear();
    own = std::move(own_timers_);
  }
  // Joins the timers' thread; a wipe running now finds stopped_ set.
  own.reset();
}

// The service list is checked as the kubelet does (docs/profiles.md, "DRA":
// oracle-confirmed texts), and nothing else: the kubelet's ValidatePlugin
// accepts an empty driver name and RegisterPlugin stores the instance under
// "" (k8s.io/kubernetes v1.34.4-v1.37.2,
// pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go, ValidatePlugin and add).
// What follows from that name: GetClient refuses it, and its wipe (no
// instance connected for 30 s) deletes every ResourceSlice of the node, the
// kubelet's wipeResourceSlices adding no driver to its field selector for "".
absl::Status DraPluginHandler::ValidatePlugin(const std::string& name, const std::string& endpoint,
                                              const std::vector<std::string>& versions) {
  return ChooseService(opts_.profile, name, endpoint, versions).status();
}

absl::Status DraPluginHandler::RegisterPlugin(const std::string& name, const std::string& endpoint,
                                              const std::vector<std::string>& versions) {
  absl::StatusOr<DraService> service = ChooseService(opts_.profile, name, endpoint, versions);
  if (!service.ok()) return service.status();
  // The channel does not connect yet: made outside the lock, dropped when
  // the endpoint turns out to be taken.
  const std::string dial = HostPathOf(endpoint, opts_.endpoint_binds);
  auto client = std::make_shared<DraClient>(name, dial, *service, client_opts_);
  absl::MutexLock l(&mu_);
  std::vector<Instance>& instances = drivers_[name];
  for (const Instance& i : instances) {
    if (i.endpoint == endpoint) {
      return absl::AlreadyExistsError(
          fmt::format("endpoint {} already registered for DRA driver plugin {}", endpoint, name));
    }
  }
  const uint64_t id = next_id_++;
  instances.push_back(Instance{id, endpoint, client, false});
  ++registrations_[name];
  if (dial == endpoint) {
    DM_INFO("Registered DRA plugin", {"driver", name}, {"endpoint", endpoint},
            {"service", std::string(ServiceName(*service))});
  } else {
    DM_INFO("Registered DRA plugin", {"driver", name}, {"endpoint", endpoint},
            {"service", std::string(ServiceName(*service))}, {"dialled", dial});
  }
  // No instance of the driver connected yet (this one connects on its own
  // time): its slices go in 30 s unless one connects first, as the
  // kubelet's add queues the wipe through its sync (v1.34.4-v1.37.2,
  // pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go). A driver that
  // registers but never serves loses its slices.
  if (!AnyConnectedLocked(name)) ScheduleWipeLocked(name);
  // Under mu_, so that a DeRegisterPlugin cannot come between (the monitor's
  // lock is a leaf: it calls back without it).
  monitor_.Watch(id, client->channel());
  if (opts_.health != nullptr) opts_.health->Watch(id, name, client->channel(), versions);
  return absl::OkStatus();
}

void DraPluginHandler::DeRegisterPlugin(const std::string& name, const std::string& endpoint) {
  std::shared_ptr<DraClient> dropped;
  absl::MutexLock l(&mu_);
  auto it = drivers_.find(name);
  if (it == drivers_.end()) return;
  std::vector<Instance>& instances = it->second;
  auto pos = std::find_if(instances.begin(), instances.end(),
                          [&](const Instance& i) { return i.endpoint == endpoint; });
  if (pos == instances.end()) return;
  monitor_.Unwatch(pos->id);
  if (opts_.health != nullptr) opts_.health->Unwatch(pos->id);
  dropped = std::move(pos->client);
  instances.erase(pos);
  DM_INFO("Deregistered DRA plugin", {"driver", name}, {"endpoint", endpoint});
  if (instances.empty()) drivers_.erase(it);
  // A wipe already queued keeps its time (ScheduleWipeLocked).
  if (!AnyConnectedLocked(name)) ScheduleWipeLocked(name);
}

absl::StatusOr<std::shared_ptr<DraClient>> DraPluginHandler::GetClient(
    const std::string& driver) const {
  // The kubelet's GetPlugin, before it looks the name up (v1.34.4-v1.37.2
  // pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go): a driver registered
  // with an empty name is never called.
  if (driver.empty()) return absl::InvalidArgumentError("DRA driver name is empty");
  absl::MutexLock l(&mu_);
  auto it = drivers_.find(driver);
  if (it == drivers_.end() || it->second.empty()) {
    // The kubelet's text, as reported from 1.34 nodes
    // (kubernetes-sigs/dra-driver-nvidia-gpu#814).
    return absl::NotFoundError(fmt::format("DRA driver {} is not registered", driver));
  }
  const std::vector<Instance>& instances = it->second;
  for (auto i = instances.rbegin(); i != instances.rend(); ++i) {
    if (i->connected) return i->client;
  }
  return instances.back().client;
}

int64_t DraPluginHandler::RegistrationCount(const std::string& driver) const {
  absl::MutexLock l(&mu_);
  auto it = registrations_.find(driver);
  return it == registrations_.end() ? 0 : it->second;
}

std::vector<std::string> DraPluginHandler::Drivers() const {
  absl::MutexLock l(&mu_);
  std::vector<std::string> out;
  for (const auto& [name, instances] : drivers_) {
    if (!instances.empty()) out.push_back(name);
  }
  return out;
}

std::vector<std::string> DraPluginHandler::Endpoints(const std::string& driver) const {
  absl::MutexLock l(&mu_);
  std::vector<std::string> out;
  auto it = drivers_.find(driver);
  if (it == drivers_.end()) return out;
  for (const Instance& i : it->second) out.push_back(i.endpoint);
  return out;
}

void DraPluginHandler::OnConnectionChange(uint64_t id, bool connected) {
  absl::MutexLock l(&mu_);
  for (auto& [driver, instances] : drivers_) {
    for (Instance& i : instances) {
      if (i.id != id) continue;
      i.connected = connected;
      DM_INFO(connected ? "DRA plugin connected" : "DRA plugin disconnected", {"driver", driver},
              {"endpoint", i.endpoint});
      if (connected) {
        CancelWipeLocked(driver);
      } else if (!AnyConnectedLocked(driver)) {
        ScheduleWipeLocked(driver);
      }
      return;
    }
  }
}

bool DraPluginHandler::AnyConnectedLocked(const std::string& driver) const {
  auto it = drivers_.find(driver);
  if (it == drivers_.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(),
                     [](const Instance& i) { return i.connected; });
}

void DraPluginHandler::ScheduleWipeLocked(const std::string& driver) {
  if (stopped_ || wipes_.count(driver) != 0) return;
  // The id is only known once After returns, and the timer may fire before
  // that (a short delay): the callback reads it under mu_, which this thread
  // holds until the id is stored.
  auto id = std::make_shared<Timers::Id>(0);
  *id = timers_->After(opts_.wiping_delay, [this, driver, id] {
    Timers::Id mine;
    {
      absl::MutexLock l(&mu_);
      mine = *id;
    }
    OnWipeDue(driver, mine);
  });
  wipes_[driver] = *id;
}

void DraPluginHandler::CancelWipeLocked(const std::string& driver) {
  auto it = wipes_.find(driver);
  if (it == wipes_.end()) return;
  timers_->Cancel(it->second);
  wipes_.erase(it);
}

void DraPluginHandler::OnWipeDue(const std::string& driver, Timers::Id id) {
  {
    absl::MutexLock l(&mu_);
    auto it = wipes_.find(driver);
    // Cancelled (a connection came back) or superseded while waiting for mu_.
    if (stopped_ || it == wipes_.end() || it->second != id) return;
    wipes_.erase(it);
    if (AnyConnectedLocked(driver)) return;
  }
  DM_INFO("Wiping the ResourceSlices of DRA driver without a connection", {"driver", driver});
  if (opts_.on_wipe) opts_.on_wipe(driver);
}

bool DraPluginHandler::WaitForConnection(const std::string& driver, const std::string& endpoint,
                                         bool connected, absl::Duration timeout) const {
  auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = drivers_.find(driver);
    if (it == drivers_.end()) return false;
    for (const Instance& i : it->second) {
      if (i.endpoint == endpoint) return i.connected == connected;
    }
    return false;
  };
  absl::MutexLock l(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
}

}  // namespace devmgr::dra
