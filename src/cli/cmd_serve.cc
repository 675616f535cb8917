// devmgr serve: the kubelet side of the device plugin API, running until
// interrupted, optionally starting and supervising plugin binaries and
// writing a status file on every change.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/serve_api.h"
#include "common/fs.h"
#include "common/logging.h"
#include "fmt/format.h"
#include "kubelet/profile.h"
#include "node/node.h"
#include "node/node_options.h"
#include "node/pod_manager.h"
#include "node/pod_sync_loop.h"
#include "node/static_pods.h"
#include "node/status_loop.h"
#include "pod/static_pod_dir.h"
#include "podresources/observability.h"
#include "process/supervisor.h"

namespace devmgr::cli {
namespace {

struct ServeOptions {
  std::string dir;
  std::string registry_dir;
  std::string kubelet_version = DefaultProfile().name;
  std::string status_file;
  std::vector<std::string> plugins;
  bool private_mount = false;
  // Bound over /var/lib/kubelet/plugins and the CDI directories with
  // --private-mount; "": under the kubelet root (PluginTemplate).
  std::string plugins_dir;
  std::string cdi_dir;
  bool force = false;
  int max_recv_msg_size = 4 * 1024 * 1024;
  bool fsync = true;
  int verbosity = 0;
  std::string logging_format = "text";
  double node_status_seconds = 10;
  double exit_after_seconds = 0;
  std::string pod_manifest_path;
  double pod_manifest_poll_seconds = 1;
  // NUMA layout and topology manager (docs/topology.md).
  std::string numa_nodes = "0";
  std::string numa_distances;
  std::string topology_policy = "none";
  std::string topology_scope = "container";
  std::string topology_policy_options;
  podresources::ObservabilityOptions observe;
  ServeApiOptions api;  // the API endpoint for DRA drivers (cli/serve_api.h)
};

std::string Absolute(const std::string& p) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(p, ec);
  return ec ? p : abs.lexically_normal().string();
}

// A usage or environment error, printed as "devmgr serve: <message>".
struct Failure {
  int code;
  std::string message;
};

// The device-plugin directory (a fresh temporary one unless given), checked
// for a socket path that fits and for a live kubelet; the private-mount
// flags checked (--plugins-dir and --cdi-dir need --private-mount).
std::optional<Failure> PrepareDir(const ServeOptions& o, std::string* dir) {
  if (!o.private_mount && (!o.plugins_dir.empty() || !o.cdi_dir.empty())) {
    return Failure{kExitUsage,
                   "--plugins-dir and --cdi-dir are bound over the kubelet's paths with "
                   "--private-mount only; add it, or give the driver these directories with its "
                   "own flags"};
  }
  *dir = o.dir;
  if (dir->empty()) {
    char tmpl[] = "/tmp/devmgr-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      return Failure{kExitEnvironment,
                     fmt::format("cannot create a temporary directory: {}", std::strerror(errno))};
    }
    *dir = tmpl;
  }
  *dir = Absolute(*dir);
  const std::string kubelet_sock = *dir + "/kubelet.sock";
  if (kubelet_sock.size() >= 108) {
    return Failure{kExitUsage, kubelet_sock +
                                   " is too long for a unix socket path (107 bytes "
                                   "at most); use a shorter --dir"};
  }
  if (!o.force && node::SocketAnswers(kubelet_sock)) {
    return Failure{kExitEnvironment,
                   kubelet_sock +
                       " answers: a kubelet (or another devmgr) is serving this "
                       "directory. Starting would delete its plugins' sockets. Use "
                       "another --dir, or --force."};
  }
  if (o.private_mount && !o.plugins.empty()) {
    if (absl::Status s = node::CheckPrivateMountSupported(); !s.ok()) {
      return Failure{kExitEnvironment, std::string(s.message())};
    }
  }
  return std::nullopt;
}

// The node's options from the flags; the kubelet refuses to start on a bad
// topology-manager configuration.
absl::StatusOr<node::NodeOptions> NodeOptionsFor(const ServeOptions& o, const std::string& dir,
                                                 const Profile& profile) {
  node::NodeOptionsBuilder b(dir, profile);
  b.RegistryDir(o.registry_dir.empty() ? "" : Absolute(o.registry_dir))
      .Fsync(o.fsync)
      .MaxRecvMsgSize(o.max_recv_msg_size)
      .Topology(o.topology_policy, o.topology_scope, {});
  if (absl::Status s = b.ParseNumaFlags(o.numa_nodes, o.numa_distances); !s.ok()) return s;
  if (absl::Status s = b.ParsePolicyOptionsFlag(o.topology_policy_options); !s.ok()) return s;
  if (absl::Status s = b.ValidateTopology(); !s.ok()) {
    return absl::InvalidArgumentError("topology manager: " + std::string(s.message()));
  }
  return b.options();
}

// What every --plugin runs with but its command and environment: with
// --private-mount, the device-plugin, plugins_registry, plugins and CDI
// directories bound over the kubelet's paths. The plugins and CDI
// directories default to ROOT/plugins and ROOT/cdi, ROOT being the kubelet
// root (DraStateDir), and are made here. The node dials a DRA endpoint
// registered from inside at its host path.
absl::StatusOr<node::PluginProcessOptions> PluginTemplate(const ServeOptions& o,
                                                          node::NodeOptions* no) {
  node::PluginProcessOptions po;
  po.private_mount = o.private_mount;
  po.plugin_dir = no->plugin_dir;
  po.registry_dir = no->registry_dir;
  po.log_prefix = "[plugin] ";
  if (!o.private_mount || o.plugins.empty()) return po;
  const std::string root = DraStateDir(no->plugin_dir);
  po.plugins_dir = Absolute(o.plugins_dir.empty() ? root + "/plugins" : o.plugins_dir);
  po.cdi_dir = Absolute(o.cdi_dir.empty() ? root + "/cdi" : o.cdi_dir);
  for (const std::string& d : {po.plugins_dir, po.cdi_dir}) {
    if (absl::Status s = fs::MkdirAll(*fs::Default(), d, 0750); !s.ok()) return s;
  }
  no->dra.endpoint_binds = node::PrivateMountBinds(po);
  return po;
}

absl::Status StartPlugins(const ServeOptions& o, const node::PluginProcessOptions& tmpl,
                          const std::map<std::string, std::string>& env, node::Supervisor* sup) {
  for (const std::string& cmd : o.plugins) {
    node::PluginProcessOptions po = tmpl;
    po.command = cmd;
    po.env = env;
    if (absl::Status s = sup->Add(std::move(po)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// Static pods: a manifest appearing is admitted, one disappearing deleted.
absl::StatusOr<std::unique_ptr<pod::StaticPodDir>> StartStaticPods(const ServeOptions& o,
                                                                   node::PodManager* pods,
                                                                   node::StatusLoop* status) {
  if (o.pod_manifest_path.empty()) return nullptr;
  pod::StaticPodDirOptions spo;
  spo.path = Absolute(o.pod_manifest_path);
  spo.period = absl::Seconds(o.pod_manifest_poll_seconds);
  auto dir = std::make_unique<pod::StaticPodDir>(spo);
  absl::Status s = dir->Start([pods, status](const std::vector<pod::ManifestChange>& changes) {
    node::ReconcileStaticPods(*pods, changes);
    status->MarkDirty();
  });
  if (!s.ok()) return absl::Status(s.code(), "--pod-manifest-path: " + std::string(s.message()));
  return dir;
}

// Until SIGINT/SIGTERM/SIGHUP (blocked in every thread since startup), or
// --exit-after.
void WaitForSignal(const ServeOptions& o, const sigset_t& sigs) {
  timespec limit{};
  limit.tv_sec = static_cast<time_t>(o.exit_after_seconds);
  limit.tv_nsec = static_cast<long>((o.exit_after_seconds - limit.tv_sec) * 1e9);
  const int sig =
      o.exit_after_seconds > 0 ? sigtimedwait(&sigs, nullptr, &limit) : sigwaitinfo(&sigs, nullptr);
  if (sig > 0) DM_INFO("Received signal; shutting down", {"signal", strsignal(sig)});
}

int Fail(const Failure& f) {
  std::cerr << "devmgr serve: " << f.message << "\n";
  return f.code;
}

// --kubelet-version with --feature-gates applied (the node reads the gates,
// ResourceHealthStatus among them, from the profile).
std::optional<Failure> ProfileFromFlags(const ServeOptions& o, Profile* out) {
  absl::StatusOr<Profile> profile = ProfileForVersion(o.kubelet_version);
  if (!profile.ok()) {
    return Failure{kExitUsage, "--kubelet-version: " + std::string(profile.status().message())};
  }
  if (!profile->notice.empty()) std::cerr << "devmgr serve: warning: " << profile->notice << "\n";
  if (absl::Status s = profile->gates.Set(o.observe.feature_gates); !s.ok()) {
    return Failure{kExitUsage, "--feature-gates: " + std::string(s.message())};
  }
  *out = *std::move(profile);
  return std::nullopt;
}

int RunServe(const ServeOptions& o) {
  log::Init(o.verbosity, o.logging_format == "json" ? log::Format::kJson : log::Format::kText);
  Profile profile;
  if (auto f = ProfileFromFlags(o, &profile)) return Fail(*f);
  std::string dir;
  if (auto f = PrepareDir(o, &dir)) return Fail(*f);
  // Signals are taken synchronously by this thread; every thread started
  // from here on inherits the mask.
  sigset_t sigs;
  sigemptyset(&sigs);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sigs, sig);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  // Metrics and the PodResources socket (docs/observability.md).
  podresources::ObservabilityOptions observe_opts = o.observe;
  observe_opts.force = o.force;
  auto observe = podresources::Observability::Create(profile, observe_opts);
  if (!observe.ok()) {
    return Fail({kExitUsage, "--feature-gates: " + std::string(observe.status().message())});
  }
  absl::StatusOr<node::NodeOptions> no = NodeOptionsFor(o, dir, profile);
  if (!no.ok()) return Fail({kExitUsage, std::string(no.status().message())});
  (*observe)->Hook(&*no);
  // The status file stands for the Node object, which outlives the kubelet.
  if (!o.status_file.empty()) no->existing_node = node::ReadStatusFileNode(o.status_file);
  // The API endpoint first: the node's DRA side uses its store from Start on.
  absl::StatusOr<ServeApi> api = StartServeApi(o.api, dir, RealClock::Get(), o.status_file);
  if (!api.ok()) {
    return Fail(
        {api.status().code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitEnvironment,
         std::string(api.status().message())});
  }
  HookDra(*api, dir, &*no);
  absl::StatusOr<node::PluginProcessOptions> plugin_tmpl = PluginTemplate(o, &*no);
  if (!plugin_tmpl.ok())
    return Fail({kExitEnvironment, std::string(plugin_tmpl.status().message())});
  node::Node n(*no);
  // A long-running node forgets deleted pods, as the kubelet does.
  node::PodManager pods(&n, {.keep_deleted = false});
  if (absl::Status s = n.Start(pods.MakeStartOptions(/*node_rebooted=*/false)); !s.ok()) {
    return Fail({kExitEnvironment, "cannot start: " + std::string(s.message())});
  }
  DM_INFO("devmgr is serving the kubelet device-plugin API", {"socket", dir + "/kubelet.sock"},
          {"kubeletVersion", profile.name});
  if (absl::Status s = (*observe)->Start(dir, &n, &pods); !s.ok()) {
    return Fail({s.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitEnvironment,
                 std::string(s.message())});
  }
  node::Supervisor sup;
  node::StatusLoop status(&n, &sup, &pods,
                          {absl::Seconds(o.node_status_seconds), o.status_file,
                           [&api] { return ApiStatusSection(*api); }});
  std::thread api_changes;
  if (api->server && !o.status_file.empty()) {
    api_changes = WatchStoreChanges(api->server->store(), [&status] { status.MarkDirty(); });
  }
  n.manager().SetChangeCallback([&status] { status.MarkDirty(); });
  n.pod_status().SetChangeCallback([&status] { status.MarkDirty(); });
  sup.SetChangeCallback([&status] { status.MarkDirty(); });
  status.Start();
  node::PodSyncLoop pod_sync(&pods, {});  // DRA: sync retries, the reconcile loop
  if (n.dra_manager() != nullptr) pod_sync.Start();
  absl::StatusOr<std::unique_ptr<pod::StaticPodDir>> static_pods = nullptr;
  absl::Status started = StartPlugins(o, *plugin_tmpl, api->plugin_env, &sup);
  if (started.ok()) static_pods = StartStaticPods(o, &pods, &status);
  if (started.ok()) started = static_pods.status();
  if (started.ok()) WaitForSignal(o, sigs);
  if (!started.ok()) std::cerr << "devmgr serve: " << started.message() << "\n";
  if (static_pods.ok() && *static_pods) (*static_pods)->Stop();
  pod_sync.Stop();
  sup.Stop();
  if (api->server) api->server->Stop();
  if (api_changes.joinable()) api_changes.join();
  (void)(*observe)->Stop();  // serving ends; --metrics-file is written
  n.Stop();
  status.Stop();
  status.PassNow();
  return started.ok() ? kExitOk : kExitEnvironment;
}

}  // namespace

void AddServeCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<ServeOptions>();
  CLI::App* sub = app.add_subcommand(
      "serve",
      "Run the kubelet side of the device plugin API until interrupted (SIGINT/SIGTERM):\n"
      "the Registration server on DIR/kubelet.sock, one endpoint per registered resource,\n"
      "device tracking and the checkpoint. Optionally starts and supervises plugins.");
  sub->add_option("--dir", opts->dir,
                  "Device-plugin directory (kubelet.sock, plugin sockets, checkpoint). "
                  "Default: a new temporary directory under /tmp. Only use a real node's "
                  "/var/lib/kubelet/device-plugins when its kubelet is stopped.");
  sub->add_option("--kubelet-version", opts->kubelet_version,
                  "Behaviour profile: 1.30 ... 1.37, or v1.MINOR.PATCH (see docs/profiles.md)")
      ->capture_default_str();
  sub->add_option("--status-file", opts->status_file,
                  "Rewrite this JSON file atomically on every change (shape: docs/serve.md)");
  sub->add_option("--plugin", opts->plugins,
                  "Start and supervise this plugin command line (repeatable); it runs under "
                  "/bin/sh and is restarted with back-off when it exits");
  sub->add_flag("--private-mount", opts->private_mount,
                "Run each --plugin in a private mount namespace where DIR is bind-mounted over "
                "/var/lib/kubelet/device-plugins, --plugins-dir over /var/lib/kubelet/plugins "
                "and --cdi-dir over /var/run/cdi and /etc/cdi (needs root or user namespaces); "
                "the host's /var/lib/kubelet, /run and /etc are never written");
  sub->add_option("--plugins-dir", opts->plugins_dir,
                  "With --private-mount: the directory bound over /var/lib/kubelet/plugins, "
                  "where DRA drivers put their sockets (DRA endpoints registered under it are "
                  "dialled here). Default: ROOT/plugins when --dir is ROOT/device-plugins, else "
                  "DIR-dra/plugins");
  sub->add_option("--cdi-dir", opts->cdi_dir,
                  "With --private-mount: the directory bound over /var/run/cdi and /etc/cdi, "
                  "where drivers write CDI specs. Default: ROOT/cdi when --dir is "
                  "ROOT/device-plugins, else DIR-dra/cdi");
  sub->add_option("--plugins-registry-dir", opts->registry_dir,
                  "Also accept plugin-watcher registrations from sockets in this directory "
                  "(the kubelet's plugins_registry); bound over "
                  "/var/lib/kubelet/plugins_registry with --private-mount");
  sub->add_flag("--force", opts->force,
                "Start even when DIR/kubelet.sock answers (a live kubelet would lose its "
                "plugins' sockets)");
  sub->add_option("--max-recv-msg-size", opts->max_recv_msg_size,
                  "Receive limit for plugin streams in bytes (the kubelet's is gRPC's default)")
      ->capture_default_str()
      ->check(CLI::Range(1024, INT_MAX));
  sub->add_option("--fsync", opts->fsync, "fsync checkpoint writes (false: faster, for CI)")
      ->capture_default_str();
  sub->add_option("-v,--v", opts->verbosity, "Log verbosity (klog -v)")->capture_default_str();
  sub->add_option("--logging-format", opts->logging_format, "text (klog) or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  sub->add_option("--node-status-interval", opts->node_status_seconds,
                  "Seconds between node-status passes (GetCapacity), like the kubelet's "
                  "nodeStatusUpdateFrequency")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--exit-after", opts->exit_after_seconds,
                  "Stop by itself after this many seconds (for scripts); 0: run until signalled")
      ->capture_default_str();
  sub->add_option("--pod-manifest-path", opts->pod_manifest_path,
                  "Static pods: a Pod manifest (.yaml/.yml/.json) appearing in this directory "
                  "is admitted (devices allocated, containers started); one disappearing is "
                  "deleted (its devices are freed at the next allocation)");
  sub->add_option("--pod-manifest-poll", opts->pod_manifest_poll_seconds,
                  "Seconds between scans of --pod-manifest-path")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--pod-resources-socket", opts->observe.pod_resources_socket,
                  "Serve the PodResources v1 API (List, GetAllocatableResources, Get) on this "
                  "unix socket; 'off' disables. Default: ROOT/pod-resources/kubelet.sock when "
                  "--dir is ROOT/device-plugins, else the sibling DIR-pod-resources/kubelet.sock");
  sub->add_option("--metrics-address", opts->observe.metrics_address,
                  "Serve the kubelet's metrics (Prometheus text) at http://ADDRESS/metrics; "
                  "port 0 picks a free port; 'off' disables")
      ->capture_default_str()
      ->each([opts](const std::string&) { opts->observe.metrics_address_explicit = true; });
  sub->add_option("--metrics-file", opts->observe.metrics_file,
                  "Write the metrics (Prometheus text) to this file when serve ends");
  sub->add_option("--feature-gates", opts->observe.feature_gates,
                  "Kubelet feature gates, e.g. ResourceHealthStatus=true,DRAExtendedResource=true "
                  "(default: the --kubelet-version's defaults; table in docs/profiles.md, "
                  "health in pod status: docs/resource-health.md)");
  sub->add_option("--numa-nodes", opts->numa_nodes,
                  "The node's NUMA node ids, e.g. 0,1 (non-contiguous ids allowed, 0..63)")
      ->capture_default_str();
  sub->add_option("--numa-distances", opts->numa_distances,
                  "NUMA distances for prefer-closest-numa-nodes: one row per --numa-nodes entry, "
                  "rows separated by ';', each indexed by node id, e.g. \"10,20;20,10\"");
  sub->add_option("--topology-manager-policy", opts->topology_policy,
                  "none, best-effort, restricted or single-numa-node")
      ->capture_default_str();
  sub->add_option("--topology-manager-scope", opts->topology_scope, "container or pod")
      ->capture_default_str();
  sub->add_option("--topology-manager-policy-options", opts->topology_policy_options,
                  "k=v,... e.g. prefer-closest-numa-nodes=true,max-allowable-numa-nodes=16");
  AddServeApiFlags(sub, &opts->api);
  sub->callback([opts, exit_code] { *exit_code = RunServe(*opts); });
}

}  // namespace devmgr::cli
