#include "node/node.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <set>

#include "absl/time/clock.h"
#include "apiserver/server.h"
#include "common/logging.h"
#include "dra/dra_plugin_handler.h"
#include "dra/handler_driver_calls.h"
#include "dra/health_info.h"
#include "dra/health_status.h"
#include "dra/health_stream.h"
#include "dra/manager.h"
#include "node/dra_pods.h"
#include "topology/config_text.h"
#include "transport/registration_client.h"

namespace devmgr::node {

Node::Node(NodeOptions opts) : opts_(std::move(opts)) {
  manager::ManagerOptions mo;
  mo.plugin_dir = opts_.plugin_dir;
  mo.profile = opts_.profile;
  mo.clock = opts_.clock;
  mo.fsync = opts_.fsync;
  mo.filesystem = opts_.filesystem;
  mo.numa_nodes = opts_.numa_nodes;
  mo.on_allocate_rpc = opts_.on_allocate_rpc;
  mo.resource_health_status =
      opts_.resource_health_status.value_or(manager::ResourceHealthStatusDefault(opts_.profile));
  // The topology manager first: the manager reads affinities from it, and
  // it asks the manager for hints (the device manager is the first provider).
  absl::StatusOr<std::vector<topology::NumaNode>> numa =
      topology::MakeNumaTopology(opts_.numa_nodes, opts_.numa_distances);
  if (numa.ok()) {
    auto tm = topology::TopologyManager::Create(opts_.topology, *numa, opts_.profile);
    if (tm.ok()) {
      topology_ = std::move(*tm);
    } else {
      topology_status_ = tm.status();
    }
  } else {
    topology_status_ = numa.status();
  }
  if (topology_ == nullptr) {
    // A bad configuration fails Start; until then the node still has an
    // admit handler (the "none" policy, which cannot fail to build).
    topology::TopologyManagerConfig none;
    none.policy = topology::kPolicyNone;
    topology_ = std::move(*topology::TopologyManager::Create(none, {}, opts_.profile));
  }
  mo.affinity_store = topology_.get();
  PodStatusSyncOptions so;
  so.enabled = mo.resource_health_status;
  so.clock = opts_.clock;
  so.sync_frequency = opts_.sync_frequency;
  so.jitter = opts_.resync_jitter;
  so.dra_status = [this](const std::string& uid,
                         std::vector<manager::ContainerResourceStatus>* statuses) {
    DraUpdateStatuses(uid, statuses);
  };
  manager_ = manager::NewManager(std::move(mo));
  pod_status_ = std::make_unique<PodStatusSyncer>(manager_.get(), std::move(so));
  // The device manager is the first hint provider, then the static stand-ins
  // for the CPU and memory managers.
  topology_->AddHintProvider(manager_.get());
  for (const topology::StaticProviderSpec& spec : opts_.topology_hint_providers) {
    static_providers_.push_back(std::make_unique<topology::StaticHintProvider>(spec));
    topology_->AddHintProvider(static_providers_.back().get());
  }
}

topology::AdmitResult Node::AdmitPod(const pod::Pod& pod) {
  // One admission at a time, in arrival order, with no lock held while the
  // topology manager and the device manager work (their RPCs included).
  {
    absl::MutexLock l(&admit_mu_);
    const uint64_t ticket = next_admit_ticket_++;
    while (admitting_ticket_ != ticket) admit_cv_.Wait(&admit_mu_);
  }
  const absl::Time start = absl::Now();
  topology::AdmitResult r = topology_->Admit(pod);
  if (opts_.on_pod_admission) opts_.on_pod_admission(r, absl::Now() - start);
  {
    absl::MutexLock l(&admit_mu_);
    ++admitting_ticket_;
    admit_cv_.SignalAll();
  }
  return r;
}

std::optional<uint64_t> Node::NumaAffinity(const std::string& pod_uid,
                                           const std::string& container_name) const {
  std::optional<topology::BitMask> a = topology_->GetAffinity(pod_uid, container_name);
  if (!a.has_value()) return std::nullopt;
  return a->bits();
}

Node::~Node() {
  Stop();
  pod_status_->Stop();  // also when never started
}

absl::Status Node::Start(manager::StartOptions start) {
  absl::MutexLock l(&mu_);
  if (started_) return absl::FailedPreconditionError("node already started");
  // The kubelet fails to start on a bad topology-manager configuration.
  if (!topology_status_.ok()) return topology_status_;
  std::function<std::vector<std::string>()> active = start.active_pod_uids;
  transport::RegistrationServerOptions so;
  so.plugin_dir = opts_.plugin_dir;
  so.profile = opts_.profile;
  so.max_recv_msg_size = opts_.max_recv_msg_size;
  so.dial_timeout = opts_.dial_timeout;
  plugin_manager_.reset();  // a stopped one, from an earlier Start
  auto server = transport::RegistrationServer::Create(std::move(so), manager_.get());
  if (!server.ok()) return server.status();
  server_ = std::move(*server);
  // The kubelet registers its Node (and, for one that exists, reconciles
  // its extended resources) before the device manager starts.
  if (opts_.existing_node.has_value()) {
    node_ = *opts_.existing_node;
    if (ShouldResetExtendedResources(opts_.plugin_dir)) {
      for (const auto& [name, v] : node_.capacity) {
        DM_INFO("Zero out resource capacity in existing node", {"resourceName", name});
      }
      node_.ZeroExtended();
    }
  }
  if (!opts_.registry_dir.empty()) {
    // The kubelet's container manager hands the plugin manager one handler
    // per plugin type; the device manager's is its registration server.
    pluginmanager::PluginManagerOptions po;
    po.dir = opts_.registry_dir;
    po.operations.dial_timeout = opts_.dial_timeout;
    po.operations.deregister_failed_registrations = opts_.profile.watcher_failure_deregisters;
    plugin_manager_ =
        std::make_unique<pluginmanager::PluginManager>(std::move(po), transport::DialRegistration);
    if (absl::Status s =
            plugin_manager_->AddHandler(pluginmanager::kDevicePluginType, server_.get());
        !s.ok()) {
      return s;
    }
    if (absl::Status s = StartDra(); !s.ok()) return s;
  }
  // ManagerImpl.Start: readCheckpoint first (errors only logged), then
  // server.Start (directory cleanup, listen).
  if (absl::Status s = manager_->Start(std::move(start)); !s.ok()) return s;
  if (absl::Status s = server_->Start(); !s.ok()) {
    manager_->Stop();
    return s;
  }
  if (plugin_manager_ != nullptr) {
    if (absl::Status s = plugin_manager_->Start(); !s.ok()) {
      server_->Stop();
      manager_->Stop();
      return s;
    }
  }
  pod_status_->Start(std::move(active));
  started_ = true;
  return absl::OkStatus();
}

void Node::Stop() {
  absl::MutexLock l(&mu_);
  if (!started_) return;
  started_ = false;
  // The kubelet's Stop: disconnect every client (PluginDisconnected), stop
  // the server. The manager's own Stop is idempotent.
  server_->Stop();
  // The health streams end with the kubelet, which leaves dra_health_state
  // as it was (a deregistration, not a stop, clears a driver's health).
  if (dra_health_streams_ != nullptr) dra_health_streams_->Stop();
  if (plugin_manager_ != nullptr) plugin_manager_->Stop();
  if (dra_handler_ != nullptr) dra_handler_->Stop();
  manager_->Stop();
  pod_status_->Stop();
}

std::map<std::string, int64_t> Node::RegistrationCounts() {
  return server_ == nullptr ? std::map<std::string, int64_t>{} : server_->RegistrationCounts();
}

std::map<std::string, int64_t> Node::AlignedComputeResourceCounts() {
  const topology::TopologyMetrics tm = topology_->metrics();
  return {{"container", tm.aligned_container}, {"pod", tm.aligned_pod}};
}

NodeResources Node::UpdateNodeStatus() {
  manager::CapacityResult r = manager_->GetCapacity();
  absl::MutexLock l(&mu_);
  node_.Apply(r);
  return node_;
}

NodeResources Node::node_resources() const {
  absl::MutexLock l(&mu_);
  return node_;
}

absl::Status Node::StartDra() {
  const NodeDraOptions& d = opts_.dra;
  if (d.store == nullptr) return absl::OkStatus();
  if (opts_.profile.minor < 34) {
    DM_INFO("DRA is not emulated for this kubelet version; the DRAPlugin type has no handler",
            {"kubeletVersion", opts_.profile.name});
    return absl::OkStatus();
  }
  dra_pods_.reset();  // a stopped node's, from an earlier Start
  dra::DraPluginHandlerOptions ho;
  ho.profile = opts_.profile;
  ho.wiping_delay = d.wiping_delay;
  ho.timers = d.timers;
  ho.client.call_timeout = d.call_timeout;
  ho.client.on_rpc = d.on_rpc;
  ho.endpoint_binds = d.endpoint_binds;
  ho.on_wipe = [this](const std::string& driver) { WipeSlices(driver); };
  StartDraHealth(&ho);
  absl::StatusOr<std::unique_ptr<dra::DraPluginHandler>> handler =
      dra::DraPluginHandler::Create(std::move(ho));
  if (!handler.ok()) return handler.status();
  dra_handler_ = *std::move(handler);
  dra_calls_ = std::make_unique<dra::HandlerDriverCalls>(dra_handler_.get());
  dra::ManagerOptions mo;
  mo.state_dir = d.state_dir;
  mo.kubelet_minor = opts_.profile.minor;
  mo.fsync = opts_.fsync;
  mo.filesystem = opts_.filesystem;
  dra::DriverCalls* calls = dra_calls_.get();
  if (d.on_driver_call) {
    dra_observed_calls_ = std::make_unique<dra::ObservedDriverCalls>(calls, d.on_driver_call);
    calls = dra_observed_calls_.get();
  }
  dra_manager_ = std::make_unique<dra::Manager>(calls, std::move(mo));
  // The kubelet's DRA manager fails its start on a corrupt checkpoint.
  if (absl::Status s = dra_manager_->Start(); !s.ok()) return s;
  // At start the kubelet deletes every ResourceSlice of its node: the
  // drivers publish theirs again once registered.
  WipeSlices("");
  dra_pods_ = std::make_unique<DraPods>(d.store, d.node_name, dra_manager_.get(), d.on_operation);
  return plugin_manager_->AddHandler(pluginmanager::kDRAPluginType, dra_handler_.get());
}

void Node::StartDraHealth(dra::DraPluginHandlerOptions* handler_options) {
  dra_health_streams_.reset();  // a stopped node's, from an earlier Start
  dra_health_.reset();
  if (!pod_status_->enabled()) return;
  // NewManager: the cache reads dra_health_state (the kubelet's
  // stateFileDirectory, beside dra_manager_state).
  dra::HealthInfoCacheOptions co;
  co.kubelet_minor = opts_.profile.minor;
  if (!opts_.dra.state_dir.empty()) co.state_file = opts_.dra.state_dir + "/dra_health_state";
  co.filesystem = opts_.filesystem;
  dra_health_ = std::make_unique<dra::HealthInfoCache>(opts_.clock, std::move(co));
  dra::HealthStreamsOptions so;
  so.kubelet_minor = opts_.profile.minor;
  so.enabled = true;
  so.cache = dra_health_.get();
  so.on_change = [this](const std::string& driver, const std::vector<dra::DeviceHealth>& changed) {
    DraHealthChanged(driver, changed);
  };
  dra_health_streams_ = std::make_unique<dra::HealthStreams>(std::move(so));
  handler_options->health = dra_health_streams_.get();
}

void Node::DraHealthChanged(const std::string& driver,
                            const std::vector<dra::DeviceHealth>& changed) {
  // The DRA manager exists before any driver registers (StartDra).
  std::vector<std::string> pods =
      dra::PodsUsingDevices(dra_manager_->ClaimInfos(), driver, changed);
  if (pods.empty()) {
    DM_VINFO(4, "Health info changed, but no active pods found using the affected devices",
             {"pluginName", driver});
    return;
  }
  std::string text = "[";
  for (const std::string& uid : pods) text += (text.size() > 1 ? " " : "") + uid;
  DM_INFO("Sending health update notification for pods", {"pluginName", driver},
          {"pods", text + "]"});
  pod_status_->SendDraUpdate(std::move(pods));
}

void Node::DraUpdateStatuses(const std::string& pod_uid,
                             std::vector<manager::ContainerResourceStatus>* statuses) {
  if (dra_pods_ == nullptr || dra_health_ == nullptr) return;
  std::optional<nlohmann::json> pod = dra_pods_->PodManifest(pod_uid);
  if (!pod.has_value()) return;
  dra::HealthStatusOptions o;
  o.kubelet_minor = opts_.profile.minor;
  o.message_gate = opts_.profile.gates.Enabled(kGateResourceHealthStatusMessage);
  dra::UpdateAllocatedResourcesStatus(*pod, *dra_manager_, *dra_health_, o, statuses);
}

void Node::DraPodStarted(const std::string& pod_uid) {
  if (dra_pods_ == nullptr || dra_health_ == nullptr) return;
  if (!dra_pods_->PodManifest(pod_uid).has_value()) return;
  pod_status_->SyncNow(pod_uid);
}

void Node::WipeSlices(const std::string& driver) {
  apiserver::ApiOr<std::vector<nlohmann::json>> deleted =
      apiserver::DeleteNodeSlices(*opts_.dra.store, opts_.dra.node_name, driver);
  if (!deleted.ok()) {
    DM_ERROR(deleted.error->message, "Deleting ResourceSlices failed",
             {"node", opts_.dra.node_name}, {"driver", driver});
    return;
  }
  DM_INFO("Deleted ResourceSlices", {"node", opts_.dra.node_name}, {"driver", driver},
          {"count", std::to_string(deleted.value.size())});
}

topology::AdmitResult Node::PrepareDynamicResources(const pod::Pod& pod) {
  if (dra_pods_ == nullptr) return {};
  return dra_pods_->Prepare(pod);
}

std::vector<std::string> Node::DraPodUids() {
  if (dra_pods_ == nullptr) return {};
  return dra_pods_->PodUids();
}

std::vector<std::string> Node::DraCdiDevices(const std::string& pod_uid,
                                             const std::string& container) {
  if (dra_pods_ == nullptr) return {};
  return dra_pods_->ContainerCdiIds(pod_uid, container);
}

std::optional<nlohmann::json> Node::DraPodManifest(const std::string& pod_uid) {
  if (dra_pods_ == nullptr) return std::nullopt;
  return dra_pods_->PodManifest(pod_uid);
}

absl::StatusOr<std::vector<dra::ClaimInfoState>> Node::DraClaimInfos(const std::string& pod_uid,
                                                                     const std::string& container) {
  if (dra_pods_ == nullptr) return std::vector<dra::ClaimInfoState>{};
  return dra_pods_->ContainerClaimInfos(pod_uid, container);
}

absl::Status Node::DraPodGone(const std::string& pod_uid, bool observe) {
  if (dra_pods_ == nullptr) return absl::OkStatus();
  bool running;
  {
    absl::MutexLock l(&mu_);
    running = started_;
  }
  // A stopped kubelet calls no driver: the claims stay in dra_manager_state
  // for the reconcile loop of the next kubelet (DraReconcile).
  if (!running) return dra_pods_->Release(pod_uid);
  return dra_pods_->Unprepare(pod_uid, observe);
}

std::map<std::string, int64_t> Node::DraClaimsInUse() const {
  // The kubelet's claimsInUse (cm/dra/claiminfo.go): prepared claims only,
  // each counted once per driver of its allocation.
  std::map<std::string, int64_t> counts{{"<any>", 0}};
  if (dra_manager_ == nullptr) return counts;
  for (const auto& [uid, info] : dra_manager_->ClaimInfos()) {
    if (!info.prepared) continue;
    ++counts["<any>"];
    if (!info.state.driver_state.has_value()) continue;
    for (const auto& [driver, state] : *info.state.driver_state) ++counts[driver];
  }
  return counts;
}

std::vector<std::string> Node::DraReconcile(const std::vector<std::string>& active) {
  if (dra_pods_ == nullptr) return {};
  const std::set<std::string> keep(active.begin(), active.end());
  for (const std::string& uid : dra_pods_->PodUids()) {
    // The reconcile loop unprepares without the operation's metric.
    if (keep.count(uid) == 0) (void)dra_pods_->Unprepare(uid, /*observe=*/false);
  }
  return dra_pods_->ReconcileOrphans(active);
}

bool SocketAnswers(const std::string& socket_path) {
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof(addr.sun_path)) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace devmgr::node
