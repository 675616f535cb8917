// Node: one emulated kubelet's device-manager side, put together: the
// manager (domain), its registration server (transport) and, when a
// plugins_registry directory is set, the plugin manager with the registration
// server as its "DevicePlugin" handler, started and stopped in the kubelet's
// order, plus the node-status view of capacity.
#ifndef DEVMGR_NODE_NODE_H_
#define DEVMGR_NODE_NODE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/bind_paths.h"
#include "common/clock.h"
#include "common/fs.h"
#include "dra/driver_calls.h"
#include "dra/state.h"
#include "dra/timers.h"
#include "kubelet/profile.h"
#include "manager/manager.h"
#include "nlohmann/json.hpp"
#include "node/pod_status_sync.h"
#include "node/status_file.h"
#include "pluginmanager/plugin_manager.h"
#include "topology/admit_result.h"
#include "topology/hint_provider.h"
#include "topology/topology_manager.h"
#include "transport/registration_server.h"

namespace devmgr::apiserver {
class Store;
}  // namespace devmgr::apiserver

namespace devmgr::dra {
class DraPluginHandler;
struct DraPluginHandlerOptions;
struct DeviceHealth;
class HandlerDriverCalls;
class HealthInfoCache;
class HealthStreams;
class Manager;
}  // namespace devmgr::dra

namespace devmgr::node {

class DraPods;

// DRA on the node (docs/dra.md): the plugin manager's "DRAPlugin" handler,
// the DRA manager and its checkpoint, and pods' claims over the embedded API
// endpoint's store. On when `store` is set, the node has a plugins_registry
// directory and the profile is 1.34 or newer.
struct NodeDraOptions {
  // The API endpoint's store (not owned; must outlive the node).
  apiserver::Store* store = nullptr;
  // The node's name in that store (slices and allocations are for it).
  std::string node_name;
  // The kubelet's root directory: dra_manager_state is written there.
  std::string state_dir;
  // How long a driver may stay without a connected instance before its
  // ResourceSlices are deleted (the kubelet's 30 s).
  absl::Duration wiping_delay = absl::Seconds(30);
  // Runs that delay (not owned; must outlive the node); nullptr: wall-clock
  // timers of the DRA plugin handler. `devmgr run` passes ClockTimers on its
  // virtual clock.
  dra::Timers* timers = nullptr;
  // The deadline of every NodePrepareResources / NodeUnprepareResources
  // call (the kubelet's 45 s, dra::kDefaultCallTimeout).
  absl::Duration call_timeout = absl::Seconds(45);
  // The bind mounts the drivers run under (serve --private-mount,
  // process::PrivateMountBinds): an endpoint registered from inside them is
  // dialled at its host path (DraPluginHandlerOptions::endpoint_binds).
  std::vector<BindPath> endpoint_binds;
  // Called after every NodePrepareResources / NodeUnprepareResources the
  // DRA manager makes (dra::ObservedDriverCalls), on the calling thread;
  // empty: none. `devmgr run` records them for `dra_calls` expectations.
  std::function<void(const dra::DriverCallRecord&)> on_driver_call;
  // The kubelet's DRA metrics: each pod's PrepareResources /
  // UnprepareResources (DraPods' DraOperationObserver) and each gRPC call to
  // a driver (dra::DraClientOptions::on_rpc). Empty: none.
  std::function<void(const std::string& operation, bool failed, absl::Duration duration)>
      on_operation;
  std::function<void(const std::string& driver, const std::string& method, const std::string& code,
                     absl::Duration duration)>
      on_rpc;
};

struct NodeOptions {
  // Absolute device-plugin directory.
  std::string plugin_dir;
  // plugins_registry directory for probe-mode plugins; empty: off.
  std::string registry_dir;
  Profile profile = DefaultProfile();
  // nullptr: the real clock. Must outlive the node.
  Clock* clock = nullptr;
  bool fsync = true;
  // The manager's filesystem (ManagerOptions::filesystem; not owned, must
  // outlive the node). nullptr: fs::Default().
  fs::Filesystem* filesystem = nullptr;
  int max_recv_msg_size = transport::kDefaultMaxRecvMsgSize;
  absl::Duration dial_timeout = transport::kDefaultDialTimeout;
  std::vector<int> numa_nodes = {0};
  // Passed to the manager (ManagerOptions::on_allocate_rpc): the alloc
  // duration metric.
  std::function<void(const std::string& resource, absl::Duration)> on_allocate_rpc;
  // Called after every pod admission (AdmitPod, every policy) with its
  // verdict and wall-clock duration: the topology manager's admission
  // metrics. Empty: none.
  std::function<void(const topology::AdmitResult&, absl::Duration)> on_pod_admission;
  // cadvisor's NUMA distances: one row per numa_nodes entry, each indexed
  // by node id. Empty: unknown (prefer-closest-numa-nodes then fails).
  std::vector<std::vector<uint64_t>> numa_distances;
  // The topology manager: policy, scope, options (default: policy none).
  topology::TopologyManagerConfig topology;
  // Static hint providers after the device manager (stand-ins for the CPU
  // and memory managers), in order.
  std::vector<topology::StaticProviderSpec> topology_hint_providers;
  // The ResourceHealthStatus gate (device health in pod status); nullopt:
  // the profile's default (manager::ResourceHealthStatusDefault).
  std::optional<bool> resource_health_status;
  // The kubelet's --sync-frequency and the resync jitter source (see
  // PodStatusSyncOptions); periodic pod syncs follow `clock`.
  absl::Duration sync_frequency = kDefaultSyncFrequency;
  std::function<double()> resync_jitter;
  // The Node object's extended resources as the previous kubelet left them
  // (the Node outlives the kubelet). Start takes them over, zeroed when
  // ShouldResetExtendedResources holds for the directory; later passes
  // merge GetCapacity into them. nullopt: a new Node.
  std::optional<NodeResources> existing_node;
  NodeDraOptions dra;
};

// Thread-safe. Stop is idempotent and run by the destructor.
class Node {
 public:
  explicit Node(NodeOptions opts);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // The kubelet's ManagerImpl.Start: read the checkpoint and restore state,
  // then start the registration server (clean the directory, listen).
  absl::Status Start(manager::StartOptions start = {});
  // Disconnects every plugin and stops serving. The checkpoint is kept.
  void Stop();

  manager::Manager& manager() { return *manager_; }
  // The pod admit handler that allocates (section 6.1): one call of the
  // topology manager's Admit, for every policy ("none" included).
  //
  // The admission rule: admissions are serialised, one pod at a time in the
  // order AdmitPod is called, as the kubelet admits pods one at a time from
  // its sync loop goroutine (HandlePodAdditions). Callers wait for their
  // turn (a ticket, not a lock): no mutex is held while the topology manager
  // and the device manager work, so the device manager's RPCs (Allocate,
  // GetPreferredAllocation) run with no lock of the node, the topology
  // manager or the device manager held, and everything else on the node
  // (status, snapshots, plugin registration) proceeds meanwhile.
  topology::AdmitResult AdmitPod(const pod::Pod& pod) ABSL_LOCKS_EXCLUDED(admit_mu_);
  // Never null (a bad topology configuration gets a "none" stand-in, and
  // Start fails).
  topology::TopologyManager* topology_manager() { return topology_.get(); }
  // The NUMA affinity stored for the container at admission (nullopt: none
  // stored, a nil affinity, or policy none).
  std::optional<uint64_t> NumaAffinity(const std::string& pod_uid,
                                       const std::string& container_name) const;
  transport::RegistrationServer* server() { return server_.get(); }

  // What the kubelet's metrics mirror: Register RPCs per resource name (as
  // sent), and kubelet_container_aligned_compute_resources_count by scope
  // ("container", "pod"; empty without a topology manager).
  std::map<std::string, int64_t> RegistrationCounts();
  std::map<std::string, int64_t> AlignedComputeResourceCounts();
  const NodeOptions& options() const { return opts_; }

  // One pass of the kubelet's node-status setter: GetCapacity (which
  // expires resources whose endpoint's grace period is over) applied to the
  // node's extended resources.
  NodeResources UpdateNodeStatus();
  NodeResources node_resources() const;

  // Device health in pod status (docs/resource-health.md): whether the
  // ResourceHealthStatus gate is on, and pod UID -> its regular containers'
  // allocatedResourcesStatus (empty with the gate off).
  bool resource_health_status() const { return pod_status_->enabled(); }
  std::map<std::string, std::vector<manager::ContainerResourceStatus>> PodResourceStatuses() const {
    return pod_status_->Statuses();
  }
  PodStatusSyncer& pod_status() { return *pod_status_; }

  // DRA (NodeDraOptions); all of these are null or empty while it is off.
  // The handler and the manager exist from Start on.
  dra::DraPluginHandler* dra_handler() { return dra_handler_.get(); }
  dra::Manager* dra_manager() { return dra_manager_.get(); }
  // The pod worker's sync, before the containers start (the kubelet's
  // PrepareDynamicResources): the pod's claims made, allocated, reserved and
  // prepared (DraPods::Prepare). Not admitted: the sync failed (reason and
  // message say why) and is to be retried; admitted when done or when the
  // pod has no claims.
  topology::AdmitResult PrepareDynamicResources(const pod::Pod& pod);
  // The pods whose claims were prepared and not yet unprepared.
  std::vector<std::string> DraPodUids();
  // The CDI device IDs the container gets (ContainerConfig.CDIDevices).
  std::vector<std::string> DraCdiDevices(const std::string& pod_uid, const std::string& container);
  // The pod's manifest as its sync resolved it, with
  // status.resourceClaimStatuses (DraPods::PodManifest); nullopt for a pod
  // not prepared, or while DRA is off.
  std::optional<nlohmann::json> DraPodManifest(const std::string& pod_uid);
  // The claims the container uses (DraPods::ContainerClaimInfos), for the
  // PodResources API; empty while DRA is off.
  absl::StatusOr<std::vector<dra::ClaimInfoState>> DraClaimInfos(const std::string& pod_uid,
                                                                 const std::string& container);
  // A pod is gone (deleted or terminated): its claims are unprepared and
  // released (DraPods::Unprepare).
  // `observe`: false where the kubelet unprepares without timing the
  // operation (its reconcile loop, a pod whose termination was synced).
  absl::Status DraPodGone(const std::string& pod_uid, bool observe = true);
  // Prepared claims per driver, and under "<any>" all of them (the
  // kubelet's dra_resource_claims_in_use); {"<any>": 0} while DRA is off.
  std::map<std::string, int64_t> DraClaimsInUse() const;
  // One pass of the DRA manager's reconcile loop (every 60 s on the
  // kubelet): the claims of pods not in `active` are unprepared, those of
  // pods this node synced (DraPods::Unprepare, which also releases them)
  // and those restored from dra_manager_state for pods it never saw
  // (DraPods::ReconcileOrphans). Returns the UIDs of the latter.
  std::vector<std::string> DraReconcile(const std::vector<std::string>& active);
  // DRA device health (KEP-4680, docs/resource-health.md "DRA devices"):
  // with the ResourceHealthStatus gate on, the DRA manager's health cache
  // (dra_health_state in NodeDraOptions::state_dir; timeouts on the node's
  // clock) and the NodeWatchResources streams the handler opens per
  // registered driver. Null while DRA or the gate is off.
  const dra::HealthInfoCache* dra_health() const { return dra_health_.get(); }
  dra::HealthStreams* dra_health_streams() { return dra_health_streams_.get(); }
  // The DRA manager's UpdateAllocatedResourcesStatus for a pod the node
  // prepared: its containers' claim:<name>[/<request>] entries. No-op for
  // other pods or while DRA health is off.
  void DraUpdateStatuses(const std::string& pod_uid,
                         std::vector<manager::ContainerResourceStatus>* statuses);
  // The pod's containers started after its claims were prepared: the PLEG's
  // sync, the pod's first status with DRA entries (the admission's sync ran
  // before the claims were prepared). Only for pods with prepared claims and
  // with DRA health on (other pods' statuses would not change).
  void DraPodStarted(const std::string& pod_uid);

 private:
  absl::Status StartDra() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The health cache and streams (gate on); their changes queue pods on the
  // pod status syncer's DRA channel.
  void StartDraHealth(dra::DraPluginHandlerOptions* handler_options);
  // HandleWatchResourcesStream after a report changed `changed` of `driver`.
  void DraHealthChanged(const std::string& driver, const std::vector<dra::DeviceHealth>& changed);
  // Deletes the node's ResourceSlices in the store, of one driver or ("")
  // of all.
  void WipeSlices(const std::string& driver);

  const NodeOptions opts_;
  // The topology manager outlives the manager, which reads affinities from
  // it; its creation error is returned by Start.
  absl::Status topology_status_;
  std::unique_ptr<topology::TopologyManager> topology_;
  std::vector<std::unique_ptr<topology::HintProvider>> static_providers_;
  std::unique_ptr<manager::Manager> manager_;
  std::unique_ptr<transport::RegistrationServer> server_;
  // Probe mode (registry_dir set): started after the server, stopped after it.
  std::unique_ptr<pluginmanager::PluginManager> plugin_manager_;
  std::unique_ptr<PodStatusSyncer> pod_status_;
  // DRA health: made by StartDra before the handler, which hands the
  // streams its instances; they outlive the handler (declared before it),
  // the cache outlives the streams. Node::Stop stops the streams first.
  std::unique_ptr<dra::HealthInfoCache> dra_health_;
  std::unique_ptr<dra::HealthStreams> dra_health_streams_;
  // DRA: created by Start when on; the handler stops with the plugin manager.
  std::unique_ptr<dra::DraPluginHandler> dra_handler_;
  std::unique_ptr<dra::HandlerDriverCalls> dra_calls_;
  // dra_calls_ behind NodeDraOptions::on_driver_call (null without one).
  std::unique_ptr<dra::DriverCalls> dra_observed_calls_;
  std::unique_ptr<dra::Manager> dra_manager_;
  std::unique_ptr<DraPods> dra_pods_;
  // The admission turn (see AdmitPod): never held across an admission.
  absl::Mutex admit_mu_;
  absl::CondVar admit_cv_;
  uint64_t next_admit_ticket_ ABSL_GUARDED_BY(admit_mu_) = 0;
  uint64_t admitting_ticket_ ABSL_GUARDED_BY(admit_mu_) = 0;
  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  NodeResources node_ ABSL_GUARDED_BY(mu_);
};

// True when something accepts connections on `socket_path` (e.g. a live
// kubelet's kubelet.sock).
bool SocketAnswers(const std::string& socket_path);

}  // namespace devmgr::node

#endif  // DEVMGR_NODE_NODE_H_
