// RunContext: the state of one scenario run (the emulated node, its pods,
// the plugins, the virtual clock) and the operations devmgr's step backend
// (devmgr_backend.h) builds on. Its methods live in two files by concern:
//   node_lifecycle.cc  set-up, kubelet start/stop/restart, node reboot,
//                      the PodResources server, teardown;
//   waits.cc           bounded actions on a worker thread and the polls
//                      that wait for registrations and device lists.
// runner.cc drives the steps (the step interpreter over that backend) and
// reports. Used from the runner's thread
// only (the worker thread of Bounded() touches just what its closure takes).
#ifndef DEVMGR_SCENARIO_RUN_RUN_CONTEXT_H_
#define DEVMGR_SCENARIO_RUN_RUN_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "apiserver/server.h"
#include "common/clock.h"
#include "dra/driver_calls.h"
#include "dra/timers.h"
#include "kubelet/profile.h"
#include "manager/manager.h"
#include "node/node.h"
#include "node/pod_manager.h"
#include "podresources/options.h"
#include "podresources/server.h"
#include "scenario/format/scenario.h"
#include "scenario/report/result.h"
#include "scenario/run/plugin_host.h"
#include "scenario/run/runner.h"

namespace devmgr::scenario {

// The node's name in the API store of a DRA scenario (drivers get it as
// $DEVMGR_NODE_NAME; their slices and the allocations are for it).
inline constexpr char kDraNodeName[] = "devmgr-node";

// How often polls re-check when nothing signals a change.
inline constexpr absl::Duration kPoll = absl::Milliseconds(20);

// A step failure that is the environment's fault (exit code 3).
absl::Status EnvError(const std::string& msg);
bool IsEnvError(const absl::Status& s);

// Wakes pollers when the manager reports a change.
class ChangeSignal {
 public:
  void Notify();
  // Waits for a change or `kPoll`, whichever comes first.
  void WaitBriefly();

 private:
  absl::Mutex mu_;
  int64_t gen_ ABSL_GUARDED_BY(mu_) = 0;
};

// The state a worker thread reports back.
struct Job {
  absl::Mutex mu;
  bool done ABSL_GUARDED_BY(mu) = false;
  absl::Status status ABSL_GUARDED_BY(mu);
};

class RunContext {
 public:
  RunContext(const Scenario& sc, const Profile& profile, const RunnerOptions& opts);
  ~RunContext() { Teardown(); }

  const Scenario& sc;
  const RunnerOptions& opts;
  const Profile profile;
  FakeClock clock;
  ChangeSignal changes;
  HostEnv env;
  std::string work_dir;
  std::vector<std::unique_ptr<PluginHost>> hosts;
  // Null between stop_kubelet and start_kubelet.
  std::unique_ptr<node::Node> node;
  std::unique_ptr<node::PodManager> pods;
  podresources::Options pr_opts;
  bool resource_health = false;  // the ResourceHealthStatus gate of this run
  std::string log_mark;          // the last log line before the current step
  // DRA (Scenario::UsesDra): the API endpoint the drivers publish to and the
  // node allocates from. It outlives kubelet restarts and reboots, as the
  // API server outlives a kubelet. Null without DRA.
  std::unique_ptr<apiserver::ApiServer> api;
  // DRA: the timers of the 30 s ResourceSlice wiping delay, on the virtual
  // clock (run on advance_clock). Outlive every node. Null without DRA.
  std::unique_ptr<dra::ClockTimers> dra_timers;
  // How many driver calls were recorded when the current step began.
  size_t dra_calls_mark = 0;
  // How many API requests were recorded when the current step began.
  uint64_t api_requests_mark = 0;

  // ---- node_lifecycle.cc ----
  // The temp dir, plugins, node and PodResources server (environment
  // failures as EnvError).
  absl::Status Setup();
  // Stops the kubelet (PodResources, then the node) and keeps the stopped
  // node until the next start; the pods and the directory stay.
  void StopKubelet();
  // Starts a fresh kubelet on the same directory (stopping the running one
  // first), starts `restart` (plugins a reboot stopped), re-admits the
  // active pods (the restart path, or the reboot path when `rebooted`)
  // within `timeout` and, when `wait`, waits for the plugins to register
  // again and their device lists to be applied.
  absl::Status StartKubelet(bool rebooted, const std::vector<PluginHost*>& restart, bool wait,
                            absl::Duration timeout);
  bool kubelet_running() const { return node != nullptr && !kubelet_stopped_; }
  // Kills stuck work, stops plugins and the node, removes the temp dir.
  void Teardown();
  std::string CheckpointPath() const;

  // ---- waits.cc ----
  bool Cancelled() const;
  // Runs `fn` on a worker thread, waiting up to `timeout`. A timed-out
  // worker is left running; teardown ends it.
  absl::Status Bounded(std::function<absl::Status()> fn, absl::Duration timeout,
                       const std::string& what);
  // Polls `ready` until it holds, the host's process exits, or timeout.
  absl::Status WaitFor(const std::function<bool()>& ready, absl::Duration timeout,
                       const std::string& what, PluginHost* host,
                       const std::function<std::string()>& state = nullptr);
  // Waits for resource `r` to be registered more than `count_before` times
  // (kubelet-sock mode), connected, and a device list received on that
  // connection: `devices` of them when known (>= 0), else any number.
  absl::Status WaitConnected(const std::string& r, int64_t count_before, absl::Duration timeout,
                             PluginHost* host, int64_t devices = -1);
  // After a kubelet start: every running plugin that re-registers.
  absl::Status WaitReregistrations(absl::Duration timeout);
  absl::Status StartHost(PluginHost& h, bool wait);
  // "r: 2 registration(s), connected, capacity 2, 2 healthy".
  std::string ResourceState(const std::string& r);
  // Waits until DRA driver `driver` was registered more than
  // `registrations_before` times by the current node, has a connected
  // instance, and its ResourceSlices for the node list at least
  // `min_devices` devices.
  absl::Status WaitDraDriver(const std::string& driver, int64_t min_devices,
                             int64_t registrations_before, absl::Duration timeout,
                             PluginHost* host);
  // "d: 1 registration(s), connected, 4 device(s) in 1 slice(s)".
  std::string DraDriverState(const std::string& driver);
  // The periodic DRA work the virtual clock made due: the ResourceSlice
  // wipes of drivers gone for 30 s, the pod worker's retry of failed pod
  // syncs (every 10 s) and the DRA manager's reconcile loop (every 60 s),
  // within `timeout`.
  absl::Status DraPeriodicWork(absl::Duration timeout);
  // Every call the node made to a DRA driver, in order, across restarts.
  std::vector<dra::DriverCallRecord> DraCalls() const;
  std::string DraCheckpointPath() const;
  bool JobRunning() const;

  // ---- helpers ----
  PluginHost* Host(const std::string& name);
  absl::StatusOr<std::string> PodUid(const std::string& ref);
  absl::Duration StepTimeout(const Step& st) const { return st.timeout.value_or(sc.timeouts.step); }
  // A live node or FailedPrecondition naming the step kind.
  absl::Status NeedKubelet(const char* what) const;

 private:
  // `existing_node`: the Node object's extended resources a restarting
  // kubelet finds (NodeOptions::existing_node); nullopt: a new Node.
  std::unique_ptr<node::Node> MakeNode(std::optional<node::NodeResources> existing_node = {});
  absl::Status StartNode(manager::StartOptions start,
                         std::optional<node::NodeResources> existing_node = {});
  // Starts the already made `node` and its PodResources server.
  absl::Status BootNode(manager::StartOptions start);
  // Whether the worker thread finished within `timeout`.
  bool WaitJob(absl::Duration timeout);
  void StopNode();
  absl::Status StartPodResources();
  void StopPodResources();
  absl::Status PrepareDirs();
  absl::Status StartPlugins();
  absl::Status RegisterExternal(const PluginSpec& p);
  // The API endpoint, the node in it and the kubeconfig (DRA scenarios).
  absl::Status StartApi();
  // The pod worker's retry of the pods whose DRA sync failed, bounded.
  absl::Status RetryFailedSyncs(absl::Duration timeout);

  std::unique_ptr<podresources::Server> pr_server_;
  std::shared_ptr<Job> job_;
  std::unique_ptr<std::thread> worker_;
  bool kubelet_stopped_ = false;
  bool torn_down_ = false;
  mutable absl::Mutex dra_calls_mu_;
  std::vector<dra::DriverCallRecord> dra_calls_ ABSL_GUARDED_BY(dra_calls_mu_);
  // The virtual times of the last pod-sync retry and DRA reconcile.
  absl::Time last_sync_retry_;
  absl::Time last_dra_reconcile_;
};

const manager::ResourceStatus* FindResource(const std::vector<manager::ResourceStatus>& all,
                                            const std::string& r);

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_RUN_RUN_CONTEXT_H_
