// ManagerImpl: plugin connection, ListAndWatch updates, disconnection,
// GetCapacity and snapshots (devicemanager manager.go).
#include "manager/manager_impl.h"

#include <algorithm>
#include <set>
#include <utility>

#include "common/logging.h"
#include "fmt/format.h"

namespace devmgr::manager {

std::unique_ptr<Manager> NewManager(ManagerOptions opts) {
  return std::make_unique<ManagerImpl>(std::move(opts));
}

namespace {
const topology::NoAffinityStore kNoAffinity;
}  // namespace

ManagerImpl::ManagerImpl(ManagerOptions opts)
    : opts_(std::move(opts)),
      clock_(opts_.clock != nullptr ? opts_.clock : &RealClock::Get()),
      affinity_(opts_.affinity_store != nullptr ? opts_.affinity_store : &kNoAffinity),
      store_(opts_.plugin_dir, opts_.fsync, opts_.filesystem) {}

ManagerImpl::~ManagerImpl() = default;

void ManagerImpl::SetChangeCallback(std::function<void()> cb) {
  absl::MutexLock l(&callback_mu_);
  change_cb_ = std::move(cb);
}

void ManagerImpl::NotifyChange() {
  std::function<void()> cb;
  {
    absl::MutexLock l(&callback_mu_);
    cb = change_cb_;
  }
  if (cb) cb();
}

absl::Status ManagerImpl::PluginConnected(const std::string& resource_name,
                                          std::shared_ptr<PluginClient> client) {
  // No deadline: the kubelet uses context.Background(). The lock is not
  // held during the RPC.
  absl::StatusOr<v1beta1::DevicePluginOptions> options = client->GetDevicePluginOptions();
  if (!options.ok()) {
    return absl::Status(options.status().code(),
                        fmt::format("failed to get device plugin options: {}",
                                    std::string(options.status().message())));
  }
  const std::string socket_path = client->SocketPath();
  auto e = std::make_shared<Endpoint>(resource_name, std::move(client));
  e->set_connected_since(clock_->Now());
  {
    absl::MutexLock l(&mu_);
    if (opts_.profile.endpoints_per_socket) {
      // 1.37 (#135437): endpoints are identified by (resource, socket path).
      // A connected pair must disconnect before its socket can be reused.
      std::map<std::string, EndpointInfo>& store = endpoint_store_[resource_name];
      auto existing = store.find(socket_path);
      if (existing != store.end()) {
        DM_INFO(
            "Device plugin registration rejected: socket already in use by a connected "
            "endpoint; possible same-socket race",
            {"resourceName", resource_name}, {"socketPath", socket_path},
            {"incumbentStopped", existing->second.e->IsStopped() ? "true" : "false"});
        return absl::UnknownError(fmt::format("device plugin already connected: {}", socket_path));
      }
      store[socket_path] = EndpointInfo{e, *options};
    }
    // The newest endpoint is the primary (Allocate, PreStartContainer,
    // GetPreferredAllocation, options). Before 1.37 the previous endpoint
    // is simply forgotten, neither stopped nor disconnected
    // (kubernetes#121994 follows from this). Device sets are untouched:
    // devices appear with the first ListAndWatch response.
    endpoints_[resource_name] = EndpointInfo{std::move(e), *std::move(options)};
  }
  DM_VINFO(2, "Device plugin connected", {"resourceName", resource_name});
  NotifyChange();
  return absl::OkStatus();
}

void ManagerImpl::PluginListAndWatchReceiver(const std::string& resource_name, PluginClient* client,
                                             const v1beta1::ListAndWatchResponse& resp) {
  std::set<std::string> pods_to_update;
  {
    absl::MutexLock l(&mu_);
    // ResourceHealthStatus: the pods holding a device whose health changed
    // (or that is new), judged against the previous list.
    if (opts_.resource_health_status) {
      pods_to_update = PodsToUpdate(devices_.All(resource_name), resp.devices(), pod_devices_,
                                    resource_name, opts_.profile.health_update_per_resource);
    }
    // genericDeviceUpdateCallback: a full replacement. Devices that vanish
    // keep their podDevices entries and stay in allocatedDevices.
    devices_.Replace(resource_name, resp.devices());
    auto ep = endpoints_.find(resource_name);
    if (ep != endpoints_.end() && ep->second.e->client() == client) ++ep->second.lists_applied;
  }
  SendPodUpdates(pods_to_update);
  // Always written, even when nothing changed; errors are only logged.
  absl::Status s = WriteCheckpoint();
  if (!s.ok()) DM_ERROR(std::string(s.message()), "Writing checkpoint encountered");
  NotifyChange();
}

void ManagerImpl::PluginDisconnected(const std::string& resource_name, PluginClient* client) {
  {
    absl::MutexLock l(&mu_);
    if (opts_.profile.endpoints_per_socket) {
      if (!DisconnectPerSocketLocked(resource_name, client)) return;
    } else {
      auto it = endpoints_.find(resource_name);
      if (it == endpoints_.end()) return;
      it->second.e->SetStopTime(clock_->Now());
    }
    devices_.MarkResourceUnhealthy(resource_name);
    DM_VINFO(2, "Endpoint became unhealthy", {"resourceName", resource_name});
  }
  // No checkpoint write here (section 8.2).
  NotifyChange();
}

bool ManagerImpl::DisconnectPerSocketLocked(const std::string& resource_name,
                                            PluginClient* client) {
  if (client == nullptr) return false;
  auto store = endpoint_store_.find(resource_name);
  if (store == endpoint_store_.end()) return false;
  // Keyed by the socket path alone: whichever endpoint sits there goes.
  auto ep = store->second.find(client->SocketPath());
  if (ep == store->second.end()) return false;
  ep->second.e->SetStopTime(clock_->Now());
  if (store->second.size() == 1) {
    // The last one: the resource's devices become unhealthy and the
    // stopped endpoint stays the primary for the grace period.
    endpoint_store_.erase(store);
    DM_VINFO(2, "Last device plugin for this resource disconnected", {"resource", resource_name});
    return true;
  }
  store->second.erase(ep);
  // The kubelet promotes an arbitrary survivor (Go map order); devmgr
  // promotes the most recently connected one. Devices stay as they are.
  const EndpointInfo* next = nullptr;
  for (const auto& [path, info] : store->second) {
    if (next == nullptr || info.e->connected_since() >= next->e->connected_since()) next = &info;
  }
  endpoints_[resource_name] = *next;
  DM_VINFO(2, "Device plugin disconnected; another endpoint of the resource remains",
           {"resourceName", resource_name}, {"socketPath", client->SocketPath()},
           {"primary", next->e->SocketPath()});
  return false;
}

CapacityResult ManagerImpl::GetCapacity() {
  CapacityResult out;
  bool needs_checkpoint = false;
  {
    absl::MutexLock l(&mu_);
    const absl::Time now = clock_->Now();
    std::set<std::string> removed;
    // 1.30-1.34 delete the endpoint and one of the resource's sets in each
    // loop, so the second loop finds the endpoint of an expired resource
    // gone and logs that it is out of sync (#133702). 1.35+ (#133724)
    // delete endpoint and both sets together after both loops.
    const bool together = !opts_.profile.capacity_out_of_sync_log;
    auto expire = [&](const std::string& r, const char* out_of_sync_msg)
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> bool {
      auto ep = endpoints_.find(r);
      bool missing = ep == endpoints_.end();
      if (!missing && !ep->second.e->StopGracePeriodExpired(now)) return false;
      if (missing) DM_ERROR("", out_of_sync_msg, {"resourceName", r});
      if (!together) endpoints_.erase(r);
      removed.insert(r);
      needs_checkpoint = true;
      return true;
    };
    for (const std::string& r : devices_.HealthyResources()) {
      if (expire(r, "Unexpected: healthyDevices and endpoints are out of sync")) {
        if (!together) devices_.EraseHealthy(r);
        continue;
      }
      const int64_t n = static_cast<int64_t>(devices_.HealthyCount(r));
      out.capacity[r] = n;
      out.allocatable[r] = n;
    }
    for (const std::string& r : devices_.UnhealthyResources()) {
      if (expire(r, "Unexpected: unhealthyDevices and endpoints became out of sync")) {
        if (!together) devices_.EraseUnhealthy(r);
        continue;
      }
      // A resource with only an unhealthy entry gets capacity but no
      // allocatable entry (node status then copies capacity).
      out.capacity[r] += static_cast<int64_t>(devices_.UnhealthyCount(r));
    }
    if (together) {
      for (const std::string& r : removed) {
        endpoints_.erase(r);
        devices_.EraseHealthy(r);
        devices_.EraseUnhealthy(r);
      }
    }
    out.removed.assign(removed.begin(), removed.end());
  }
  if (needs_checkpoint) {
    absl::Status s = WriteCheckpoint();
    if (!s.ok()) DM_ERROR(std::string(s.message()), "Error on writing checkpoint");
    NotifyChange();
  }
  return out;
}

std::vector<ResourceStatus> ManagerImpl::Snapshot() const {
  absl::MutexLock l(&mu_);
  std::set<std::string> names;
  for (const auto& [r, e] : endpoints_) names.insert(r);
  for (const auto& [r, d] : devices_.resources()) {
    if (d.has_healthy || d.has_unhealthy) names.insert(r);
  }
  for (const auto& [r, s] : allocated_devices_) names.insert(r);
  std::vector<ResourceStatus> out;
  out.reserve(names.size());
  for (const std::string& r : names) {
    ResourceStatus st;
    st.resource_name = r;
    const bool has_h = devices_.HasHealthy(r);
    const bool has_u = devices_.HasUnhealthy(r);
    if (has_h) {
      st.healthy = devices_.HealthyIds(r);
      std::sort(st.healthy.begin(), st.healthy.end());
      st.allocatable = static_cast<int64_t>(st.healthy.size());
    }
    if (has_u) {
      st.unhealthy = devices_.UnhealthyIds(r);
      std::sort(st.unhealthy.begin(), st.unhealthy.end());
    }
    st.capacity = static_cast<int64_t>(st.healthy.size() + st.unhealthy.size());
    auto a = allocated_devices_.find(r);
    if (a != allocated_devices_.end()) st.allocated = SortedList(a->second);
    const DeviceMap* all = devices_.All(r);
    if (all != nullptr && (has_h || has_u)) {
      st.devices.reserve(all->size());
      for (const auto& [id, d] : *all) {
        DeviceInfo info;
        info.id = id;
        info.health = d.health;
        if (!d.numa_nodes.empty()) {
          info.numa_nodes.emplace(d.numa_nodes.begin(), d.numa_nodes.end());
        }
        st.devices.push_back(std::move(info));
      }
      std::sort(st.devices.begin(), st.devices.end(),
                [](const DeviceInfo& x, const DeviceInfo& y) { return x.id < y.id; });
    }
    auto ep = endpoints_.find(r);
    if (ep != endpoints_.end()) {
      st.has_endpoint = true;
      st.endpoint_socket = ep->second.e->SocketPath();
      st.stopped = ep->second.e->IsStopped();
      st.connected_since = ep->second.e->connected_since();
      st.stopped_since = ep->second.e->StopTime();
      st.lists_applied = ep->second.lists_applied;
    }
    out.push_back(std::move(st));
  }
  return out;
}

std::map<std::string, DeviceSet> ManagerImpl::AllocatedDevicesForTest() const {
  absl::MutexLock l(&mu_);
  return allocated_devices_;
}

PodDevices ManagerImpl::PodDevicesForTest() const {
  absl::MutexLock l(&mu_);
  return pod_devices_;
}

std::optional<v1beta1::DevicePluginOptions> ManagerImpl::EndpointOptionsForTest(
    const std::string& resource_name) const {
  absl::MutexLock l(&mu_);
  auto it = endpoints_.find(resource_name);
  if (it == endpoints_.end()) return std::nullopt;
  return it->second.opts;
}

}  // namespace devmgr::manager
