// RunContext: the node's lifecycle (set-up, kubelet stop/start, teardown).
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "apiserver/server.h"
#include "checkpoint/checkpoint.h"
#include "common/fs.h"
#include "dra/state.h"
#include "fmt/format.h"
#include "manager/resource_health.h"
#include "node/node_options.h"
#include "node/pod_sync_loop.h"
#include "podresources/observability.h"
#include "process/plugin_process.h"
#include "scenario/expect/expectations.h"
#include "scenario/run/run_context.h"
#include "scenario/steps/step_backend.h"
#include "topology/bitmask.h"
#include "topology/hint_provider.h"
#include "topology/topology_manager.h"

namespace devmgr::scenario {
namespace {

topology::ProviderHints ToProviderHints(const ResourceHints& in) {
  topology::ProviderHints out;
  for (const auto& [r, list] : in) {
    if (!list) {
      out[r] = std::nullopt;
      continue;
    }
    std::vector<topology::TopologyHint> hs;
    for (const HintSpec& h : *list) {
      topology::TopologyHint t;
      if (h.numa) t.numa_node_affinity = *topology::BitMask::FromBits(*h.numa);  // 0..63: parser
      t.preferred = h.preferred;
      hs.push_back(t);
    }
    out[r] = std::move(hs);
  }
  return out;
}

std::string AbsolutePluginDir(const std::string& dir, const std::string& work_dir) {
  if (dir.empty()) return work_dir + "/dp";
  if (dir[0] == '/') return dir;
  char cwd[4096];
  return std::string(getcwd(cwd, sizeof cwd) ? cwd : ".") + "/" + dir;
}

}  // namespace

RunContext::RunContext(const Scenario& s, const Profile& p, const RunnerOptions& o)
    : sc(s), opts(o), profile(p) {}

std::string RunContext::CheckpointPath() const {
  return env.plugin_dir + "/" + checkpoint::kCheckpointName;
}

// The kubelet's root is the work dir: dra_manager_state lives there.
std::string RunContext::DraCheckpointPath() const { return work_dir + "/" + dra::kCheckpointName; }

absl::Status RunContext::StartApi() {
  api = std::make_unique<apiserver::ApiServer>(clock);
  dra_timers = std::make_unique<dra::ClockTimers>(&clock);
  // The parser checked every SPEC.
  if (absl::Status s = apiserver::AddFaultSpecs(api->faults(), sc.api_faults); !s.ok()) return s;
  absl::StatusOr<std::string> url = api->Start(apiserver::kDefaultApiListen);
  if (!url.ok()) {
    return EnvError(fmt::format("the API endpoint for DRA drivers did not start: {}",
                                std::string(url.status().message())));
  }
  if (absl::Status s = apiserver::CreateNode(api->store(), kDraNodeName); !s.ok()) {
    return EnvError(std::string(s.message()));
  }
  env.kubeconfig = work_dir + "/kubeconfig";
  env.node_name = kDraNodeName;
  env.dra_plugin_dir = work_dir + "/dra-plugins";
  env.cdi_dir = work_dir + "/cdi";
  env.dra_checkpoint = DraCheckpointPath();
  if (absl::Status s = apiserver::WriteKubeconfig(env.kubeconfig, *url); !s.ok()) {
    return EnvError(std::string(s.message()));
  }
  for (const std::string& d : {env.dra_plugin_dir, env.cdi_dir}) {
    if (absl::Status s = fs::MkdirAll(*fs::Default(), d, 0750); !s.ok()) {
      return EnvError(std::string(s.message()));
    }
  }
  last_sync_retry_ = last_dra_reconcile_ = clock.Now();
  return absl::OkStatus();
}

std::vector<dra::DriverCallRecord> RunContext::DraCalls() const {
  absl::MutexLock l(&dra_calls_mu_);
  return dra_calls_;
}

absl::Status RunContext::PrepareDirs() {
  char tmpl[] = "/tmp/dmrun-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    return EnvError(fmt::format("cannot create a temp dir: {}", std::strerror(errno)));
  }
  work_dir = tmpl;
  env.devmgr_bin = opts.devmgr_bin;
  env.work_dir = work_dir;
  env.scenario_dir = sc.dir;
  env.kubelet_version = profile.name;
  env.metrics_url = opts.metrics_url;
  env.plugin_dir = AbsolutePluginDir(sc.node.dir, work_dir);
  if (sc.node.plugins_registry) env.registry_dir = work_dir + "/reg";
  if (opts.pod_resources_socket.empty()) {
    env.pod_resources_socket = work_dir + "/pod-resources/" + podresources::kSocketName;
  } else if (opts.pod_resources_socket != podresources::kOff) {
    env.pod_resources_socket = opts.pod_resources_socket;
    if (node::SocketAnswers(env.pod_resources_socket)) {
      return EnvError(fmt::format(
          "{} answers: a kubelet (or another devmgr) serves the PodResources API there; use "
          "another --pod-resources-socket",
          env.pod_resources_socket));
    }
  }
  for (const std::string& d : {env.plugin_dir, env.registry_dir, work_dir + "/plugins"}) {
    if (d.empty()) continue;
    if (absl::Status s = fs::MkdirAll(*fs::Default(), d, 0750); !s.ok()) {
      return EnvError(std::string(s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status RunContext::Setup() {
  if (absl::Status s = PrepareDirs(); !s.ok()) return s;
  if (sc.UsesDra()) {
    if (absl::Status s = StartApi(); !s.ok()) return s;
  }
  // The profile's gates already hold --feature-gates and node.feature_gates.
  pr_opts = podresources::OptionsForProfile(profile);
  resource_health = profile.gates.Enabled(kGateResourceHealthStatus);
  for (const PluginSpec& p : sc.plugins) {
    if (p.private_mount) {
      if (absl::Status s = node::CheckPrivateMountSupported(); !s.ok()) {
        return EnvError(fmt::format("plugin '{}' needs a private mount namespace: {}", p.name,
                                    std::string(s.message())));
      }
    }
    hosts.push_back(std::make_unique<PluginHost>(p, env));
    if (absl::Status s = hosts.back()->Prepare(); !s.ok())
      return EnvError(std::string(s.message()));
  }
  for (auto& h : hosts) {
    if (h->spec().start != PluginStart::kBeforeKubelet || h->spec().external) continue;
    if (absl::Status s = StartHost(*h, /*wait=*/false); !s.ok()) return s;
  }
  node = MakeNode();
  pods = std::make_unique<node::PodManager>(node.get());
  if (absl::Status s = BootNode(pods->MakeStartOptions(/*node_rebooted=*/false)); !s.ok()) {
    const std::optional<std::string> error = KubeletStartError(s);
    if (!error) return s;
    return EnvError(fmt::format("the emulated kubelet did not start: {}", *error));
  }
  return StartPlugins();
}

// The plugins that start with (after) the kubelet, and the registration
// waits of those started before it.
absl::Status RunContext::StartPlugins() {
  for (auto& h : hosts) {
    const PluginSpec& p = h->spec();
    absl::Status s;
    if (p.external) {
      if (!p.socket.empty()) s = RegisterExternal(p);
      if (s.ok() && p.wait_for_registration) {
        s = WaitConnected(p.resource, 0, sc.timeouts.wait, nullptr);
      }
    } else if (p.start == PluginStart::kAfterKubelet) {
      s = StartHost(*h, /*wait=*/true);
    } else if (p.start == PluginStart::kBeforeKubelet && p.wait_for_registration &&
               !p.dra_driver.empty()) {
      s = WaitDraDriver(p.dra_driver, 1, 0, sc.timeouts.wait, h.get());
    } else if (p.start == PluginStart::kBeforeKubelet && p.wait_for_registration &&
               !p.resource.empty()) {
      s = WaitConnected(p.resource, 0, sc.timeouts.wait, h.get(), p.initial_devices);
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

std::unique_ptr<node::Node> RunContext::MakeNode(std::optional<node::NodeResources> existing_node) {
  node::NodeOptionsBuilder b(env.plugin_dir, profile);
  b.RegistryDir(env.registry_dir)
      .WithClock(&clock)
      .Fsync(sc.node.fsync)
      .MaxRecvMsgSize(static_cast<int>(sc.node.max_recv_msg_size))
      .DialTimeout(sc.node.dial_timeout)
      .Numa(sc.node.numa_nodes, sc.node.numa_distances)
      .Topology(sc.node.topology_policy, sc.node.topology_scope, sc.node.topology_policy_options);
  for (const HintProviderSpec& h : sc.node.hint_providers) {
    topology::StaticProviderSpec sp;
    sp.name = h.name;
    sp.hints = ToProviderHints(h.hints);
    for (const auto& [c, hints] : h.containers) sp.per_container[c] = ToProviderHints(hints);
    if (h.pod) sp.pod = ToProviderHints(*h.pod);
    b.AddHintProvider(std::move(sp));
  }
  node::NodeOptions o = b.options();
  o.existing_node = std::move(existing_node);
  if (api != nullptr) {
    o.dra.store = &api->store();
    o.dra.node_name = kDraNodeName;
    o.dra.state_dir = work_dir;
    o.dra.timers = dra_timers.get();
    // A driver in a private mount namespace registers the endpoint it sees
    // inside (/var/lib/kubelet/plugins/...): the node dials its host path.
    if (std::any_of(sc.plugins.begin(), sc.plugins.end(),
                    [](const PluginSpec& p) { return p.private_mount; })) {
      o.dra.endpoint_binds = node::PrivateMountBinds(env.ProcessDirs(true));
    }
    o.dra.on_driver_call = [this](const dra::DriverCallRecord& r) {
      {
        absl::MutexLock l(&dra_calls_mu_);
        dra_calls_.push_back(r);
      }
      changes.Notify();
    };
  }
  if (opts.metrics != nullptr) opts.metrics->Hook(&o);
  auto n = std::make_unique<node::Node>(o);
  n->manager().SetChangeCallback([this] { changes.Notify(); });
  n->pod_status().SetChangeCallback([this] { changes.Notify(); });
  return n;
}

absl::Status RunContext::StartNode(manager::StartOptions start,
                                   std::optional<node::NodeResources> existing_node) {
  node = MakeNode(std::move(existing_node));
  return BootNode(std::move(start));
}

absl::Status RunContext::BootNode(manager::StartOptions start) {
  // The kubelet exits when its start fails (e.g. on a corrupt
  // dra_manager_state: NewContainerManager's error ends kubelet's run).
  if (absl::Status s = node->Start(std::move(start)); !s.ok()) {
    return KubeletStartFailed(std::string(s.message()));
  }
  if (opts.metrics != nullptr) opts.metrics->Attach(node.get());
  return StartPodResources();
}

// Stops the PodResources server and the node, as a stopping kubelet does
// (the node object stays alive for the caller).
void RunContext::StopNode() {
  StopPodResources();
  node->Stop();
  if (opts.metrics != nullptr) opts.metrics->Detach(node.get());
}

// The PodResources socket over the current node (none when off).
absl::Status RunContext::StartPodResources() {
  if (env.pod_resources_socket.empty()) return absl::OkStatus();
  podresources::ServerOptions so;
  so.socket_path = env.pod_resources_socket;
  so.api = pr_opts;
  so.metrics = opts.metrics != nullptr ? &opts.metrics->metrics() : nullptr;
  pr_server_ = std::make_unique<podresources::Server>(node.get(), pods.get(), so);
  if (absl::Status s = pr_server_->Start(); !s.ok()) {
    pr_server_.reset();
    return EnvError(fmt::format("the PodResources server did not start on {}: {}",
                                env.pod_resources_socket, std::string(s.message())));
  }
  return absl::OkStatus();
}

void RunContext::StopPodResources() {
  if (pr_server_) pr_server_->Stop();
  pr_server_.reset();
}

void RunContext::StopKubelet() {
  if (node == nullptr || kubelet_stopped_) return;
  StopNode();
  kubelet_stopped_ = true;
}

absl::Status RunContext::StartKubelet(bool rebooted, const std::vector<PluginHost*>& restart,
                                      bool wait, absl::Duration timeout) {
  manager::StartOptions start = pods->MakeStartOptions(rebooted);
  StopKubelet();
  // The stopped node lives until the new one has taken over its pods.
  std::unique_ptr<node::Node> old = std::move(node);
  kubelet_stopped_ = false;
  // The Node object outlives the kubelet: the new one starts from it.
  if (absl::Status s = StartNode(std::move(start), old->node_resources()); !s.ok()) {
    // The new kubelet exited at its start: the node has no running kubelet
    // (the stopped one keeps the pods' references) until a later start.
    node = std::move(old);
    kubelet_stopped_ = true;
    return s;
  }
  // The new kubelet's DRA manager starts its reconcile loop: its first
  // pass that does anything is one period after the start (the one at the
  // start finds the pod sources not ready yet).
  last_dra_reconcile_ = clock.Now();
  for (PluginHost* h : restart) {
    if (absl::Status s = StartHost(*h, wait); !s.ok()) return s;
  }
  node::Node* fresh = node.get();
  absl::Status s = Bounded(
      [this, fresh, rebooted] {
        if (rebooted) {
          pods->ReadmitAfterReboot(fresh);
        } else {
          pods->ReadmitAfterRestart(fresh);
        }
        return absl::OkStatus();
      },
      timeout,
      fmt::format("re-admission of active pods after the {}", rebooted ? "reboot" : "restart"));
  if (!s.ok()) return s;
  old.reset();
  if (!rebooted && wait) {
    if (absl::Status w = WaitReregistrations(sc.timeouts.wait); !w.ok()) return w;
  }
  // The pods whose claims could not be prepared before their drivers came
  // back: the pod worker syncs them again (its back-off, taken now).
  if (api != nullptr && wait) return RetryFailedSyncs(timeout);
  return absl::OkStatus();
}

absl::Status RunContext::RetryFailedSyncs(absl::Duration timeout) {
  node::PodManager* p = pods.get();
  last_sync_retry_ = clock.Now();
  return Bounded(
      [p] {
        p->RetryFailedSyncs();
        return absl::OkStatus();
      },
      timeout, "the retry of failed pod syncs");
}

absl::Status RunContext::DraPeriodicWork(absl::Duration timeout) {
  if (api == nullptr || !kubelet_running()) return absl::OkStatus();
  // The slices of drivers without a connected instance for 30 s go (the
  // callbacks delete them from the store, on this thread).
  dra_timers->RunDue();
  const absl::Time now = clock.Now();
  const node::PodSyncLoopOptions periods;  // the kubelet's back-off and reconcile periods
  if (now - last_dra_reconcile_ >= periods.reconcile_period) {
    last_dra_reconcile_ = now;
    node::PodManager* p = pods.get();
    absl::Status s = Bounded(
        [p] {
          p->ReconcileDra();
          return absl::OkStatus();
        },
        timeout, "the DRA manager's reconcile");
    if (!s.ok()) return s;
  }
  if (now - last_sync_retry_ >= periods.retry_period) return RetryFailedSyncs(timeout);
  return absl::OkStatus();
}

absl::Status RunContext::NeedKubelet(const char* what) const {
  if (kubelet_running()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      fmt::format("{} needs a running kubelet: it was stopped by stop_kubelet (add a "
                  "start_kubelet step first)",
                  what));
}

// Registers an already-running plugin's socket on its behalf.
absl::Status RunContext::RegisterExternal(const PluginSpec& p) {
  std::string endpoint = p.socket;
  const std::string prefix = env.plugin_dir + "/";
  if (endpoint.rfind(prefix, 0) == 0) endpoint = endpoint.substr(prefix.size());
  if (endpoint.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(
        fmt::format("plugin '{}': socket {} must be inside the device-plugin dir {}", p.name,
                    p.socket, env.plugin_dir));
  }
  v1beta1::RegisterRequest req;
  req.set_version("v1beta1");
  req.set_endpoint(endpoint);
  req.set_resource_name(p.resource);
  absl::Status s = node->server()->Register(req);
  if (!s.ok()) {
    return absl::FailedPreconditionError(fmt::format("registering plugin '{}' at {}: {}", p.name,
                                                     p.socket, std::string(s.message())));
  }
  return absl::OkStatus();
}

void RunContext::Teardown() {
  if (torn_down_) return;
  torn_down_ = true;
  // A hung worker: kill plugins at once so that its RPC fails.
  const bool hung = JobRunning();
  for (auto& h : hosts) {
    if (hung) h->Kill();
    h->Stop(absl::Seconds(2));
  }
  StopKubelet();
  bool detached = false;
  if (worker_) {
    if (WaitJob(absl::Seconds(10))) {
      worker_->join();
    } else {
      // Still stuck: never free what it uses.
      worker_->detach();
      (void)pods.release();
      (void)node.release();
      (void)dra_timers.release();  // the node's DRA handler may still use them
      detached = true;
    }
    worker_.reset();
  }
  pods.reset();
  node.reset();
  hosts.clear();
  if (api != nullptr) {
    api->Stop();
    if (detached) {
      (void)api.release();  // the stuck worker may still read its store
    } else {
      api.reset();
    }
  }
  if (!work_dir.empty() && !opts.keep_dir) {
    std::system(fmt::format("rm -rf {}", ShellQuote(work_dir)).c_str());
  }
}

}  // namespace devmgr::scenario
