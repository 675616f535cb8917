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
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cli/commands.h"
#include "common/logging.h"
#include "common/profile.h"
#include "fmt/format.h"
#include "node/node.h"
#include "node/status_file.h"
#include "node/pod_manager.h"
#include "node/supervisor.h"
#include "pod/static_pod_dir.h"
#include "topology/config_text.h"
#include "topology/topology_manager.h"
#include "podresources/observability.h"

namespace devmgr::cli {
namespace {

struct ServeOptions {
  std::string dir;
  std::string registry_dir;
  std::string kubelet_version = DefaultProfile().name;
  std::string status_file;
  std::vector<std::string> plugins;
  bool private_mount = false;
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
};

// Rewrites the status file when told something changed, and runs the
// node-status loop (GetCapacity every interval), until stopped.
class StatusLoop {
 public:
  StatusLoop(node::Node* n, node::Supervisor* sup, node::PodManager* pods,
             const ServeOptions& o)
      : node_(n), sup_(sup), pods_(pods), opts_(o) {}
  ~StatusLoop() { Stop(); }

  void Start() { thread_ = std::thread([this] { Run(); }); }
  void MarkDirty() {
    absl::MutexLock l(&mu_);
    dirty_ = true;
  }
  void Stop() {
    {
      absl::MutexLock l(&mu_);
      stop_ = true;
    }
    if (thread_.joinable()) thread_.join();
  }
  // One final write, after the node has stopped.
  void WriteNow() { Write(); }

 private:
  void Run() {
    const absl::Duration period = absl::Seconds(opts_.node_status_seconds);
    absl::Time next_status = absl::Now();
    for (;;) {
      {
        absl::MutexLock l(&mu_);
        auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return dirty_ || stop_; };
        mu_.AwaitWithDeadline(absl::Condition(&ready), next_status);
        if (stop_) return;
        dirty_ = false;
      }
      if (absl::Now() >= next_status) next_status = absl::Now() + period;
      Write();
    }
  }

  void Write() {
    node::NodeResources res = node_->UpdateNodeStatus();
    if (opts_.status_file.empty()) return;
    node::StatusInput in;
    in.kubelet_version = node_->options().profile.name;
    in.plugin_dir = node_->options().plugin_dir;
    in.registry_dir = node_->options().registry_dir;
    in.node = std::move(res);
    in.resources = node_->manager().Snapshot();
    in.plugins = sup_->Status();
    in.pods = pods_->Pods();
    in.allocations = node_->manager().Allocations();
    in.resource_health_status = node_->resource_health_status();
    in.pod_statuses = node_->PodResourceStatuses();
    in.now = absl::Now();
    const std::string text =
        node::BuildStatus(in).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
        "\n";
    if (absl::Status s = node::WriteFileAtomically(opts_.status_file, text); !s.ok()) {
      DM_ERROR(std::string(s.message()), "Failed to write the status file",
               {"path", opts_.status_file});
    }
  }

  node::Node* node_;
  node::Supervisor* sup_;
  node::PodManager* pods_;
  const ServeOptions& opts_;
  absl::Mutex mu_;
  bool dirty_ ABSL_GUARDED_BY(mu_) = true;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

std::string Absolute(const std::string& p) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(p, ec);
  return ec ? p : abs.lexically_normal().string();
}

int RunServe(const ServeOptions& o) {
  log::Init(o.verbosity, o.logging_format == "json" ? log::Format::kJson : log::Format::kText);
  absl::StatusOr<Profile> profile = ProfileForVersion(o.kubelet_version);
  if (!profile.ok()) {
    std::cerr << "devmgr serve: --kubelet-version: " << profile.status().message() << "\n";
    return kExitUsage;
  }
  if (!profile->notice.empty()) std::cerr << "devmgr serve: warning: " << profile->notice << "\n";
  if (absl::Status s = profile->gates.Set(o.observe.feature_gates); !s.ok()) {
    std::cerr << "devmgr serve: --feature-gates: " << s.message() << "\n";
    return kExitUsage;
  }
  // The directory: a fresh temporary one unless given.
  std::string dir = o.dir;
  if (dir.empty()) {
    char tmpl[] = "/tmp/devmgr-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      std::cerr << "devmgr serve: cannot create a temporary directory: " << std::strerror(errno)
                << "\n";
      return kExitEnvironment;
    }
    dir = tmpl;
  }
  dir = Absolute(dir);
  std::string registry_dir = o.registry_dir.empty() ? "" : Absolute(o.registry_dir);
  const std::string kubelet_sock = dir + "/kubelet.sock";
  if (kubelet_sock.size() >= 108) {
    std::cerr << "devmgr serve: " << kubelet_sock
              << " is too long for a unix socket path (107 bytes at most); use a shorter --dir\n";
    return kExitUsage;
  }
  if (!o.force && node::SocketAnswers(kubelet_sock)) {
    std::cerr << "devmgr serve: " << kubelet_sock
              << " answers: a kubelet (or another devmgr) is serving this directory. Starting "
                 "would delete its plugins' sockets. Use another --dir, or --force.\n";
    return kExitEnvironment;
  }
  if (o.private_mount && !o.plugins.empty()) {
    if (absl::Status s = node::CheckPrivateMountSupported(); !s.ok()) {
      std::cerr << "devmgr serve: " << s.message() << "\n";
      return kExitEnvironment;
    }
  }

  // Signals are taken synchronously by this thread; every thread started
  // from here on inherits the mask.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  // Metrics and the PodResources socket (docs/observability.md).
  podresources::ObservabilityOptions observe_opts = o.observe;
  observe_opts.force = o.force;
  // The profile's gates hold --feature-gates (set above).
  const bool health_gate = profile->gates.Enabled(kGateResourceHealthStatus);
  auto observe = podresources::Observability::Create(*profile, observe_opts);
  if (!observe.ok()) {
    std::cerr << "devmgr serve: --feature-gates: " << observe.status().message() << "\n";
    return kExitUsage;
  }

  node::NodeOptions no;
  (*observe)->Hook(&no);
  no.plugin_dir = dir;
  no.registry_dir = registry_dir;
  no.profile = *profile;
  no.fsync = o.fsync;
  no.max_recv_msg_size = o.max_recv_msg_size;
  no.resource_health_status = health_gate;
  {
    auto ids = topology::ParseNumaNodeList(o.numa_nodes);
    if (!ids.ok()) {
      std::cerr << "devmgr serve: --numa-nodes: " << ids.status().message() << "\n";
      return kExitUsage;
    }
    auto distances = topology::ParseNumaDistances(o.numa_distances);
    if (!distances.ok()) {
      std::cerr << "devmgr serve: --numa-distances: " << distances.status().message() << "\n";
      return kExitUsage;
    }
    auto options = topology::ParsePolicyOptions(o.topology_policy_options);
    if (!options.ok()) {
      std::cerr << "devmgr serve: --topology-manager-policy-options: "
                << options.status().message() << "\n";
      return kExitUsage;
    }
    no.numa_nodes = *ids;
    no.numa_distances = *distances;
    no.topology.policy = o.topology_policy;
    no.topology.scope = o.topology_scope;
    no.topology.policy_options = *options;
    // The kubelet refuses to start on a bad topology-manager configuration.
    auto numa = topology::MakeNumaTopology(no.numa_nodes, no.numa_distances);
    absl::Status valid = numa.status();
    if (valid.ok()) valid = topology::TopologyManager::Create(no.topology, *numa, *profile).status();
    if (!valid.ok()) {
      std::cerr << "devmgr serve: topology manager: " << valid.message() << "\n";
      return kExitUsage;
    }
  }
  node::Node n(no);
  node::PodManager pods(&n);
  if (absl::Status s = n.Start(pods.MakeStartOptions(/*node_rebooted=*/false)); !s.ok()) {
    std::cerr << "devmgr serve: cannot start: " << s.message() << "\n";
    return kExitEnvironment;
  }
  DM_INFO("devmgr is serving the kubelet device-plugin API", {"socket", kubelet_sock},
          {"kubeletVersion", profile->name});
  if (absl::Status s = (*observe)->Start(dir, &n, &pods); !s.ok()) {
    std::cerr << "devmgr serve: " << s.message() << "\n";
    return s.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitEnvironment;
  }

  node::Supervisor sup;
  StatusLoop status(&n, &sup, &pods, o);
  n.manager().SetChangeCallback([&status] { status.MarkDirty(); });
  n.pod_status().SetChangeCallback([&status] { status.MarkDirty(); });
  sup.SetChangeCallback([&status] { status.MarkDirty(); });
  status.Start();

  int code = kExitOk;
  for (const std::string& cmd : o.plugins) {
    node::PluginProcessOptions po;
    po.command = cmd;
    po.private_mount = o.private_mount;
    po.plugin_dir = dir;
    po.registry_dir = registry_dir;
    po.log_prefix = "[plugin] ";
    if (absl::Status s = sup.Add(std::move(po)); !s.ok()) {
      std::cerr << "devmgr serve: " << s.message() << "\n";
      code = kExitEnvironment;
      break;
    }
  }
  // Static pods: a manifest appearing is admitted, one disappearing deleted.
  std::unique_ptr<pod::StaticPodDir> static_pods;
  if (code == kExitOk && !o.pod_manifest_path.empty()) {
    pod::StaticPodDirOptions spo;
    spo.path = Absolute(o.pod_manifest_path);
    spo.period = absl::Seconds(o.pod_manifest_poll_seconds);
    static_pods = std::make_unique<pod::StaticPodDir>(spo);
    absl::Status s = static_pods->Start([&](const std::vector<pod::ManifestChange>& changes) {
      for (const pod::ManifestChange& c : changes) {
        if (c.kind != pod::ManifestChange::Kind::kAdded) {
          // Removed, or changed (the old version goes away first).
          for (const pod::Pod& p : c.pods) {
            if (c.kind == pod::ManifestChange::Kind::kRemoved) {
              DM_INFO("Static pod manifest removed; deleting pod", {"path", c.path},
                      {"pod", p.namespace_ + "/" + p.name});
              (void)pods.DeletePod(p.uid);
            }
          }
        }
        // A changed file: pods no longer in it (an edited pod has a new
        // UID) are deleted; pods still in it unchanged are kept as they are.
        std::set<std::string> unchanged;
        if (c.kind == pod::ManifestChange::Kind::kChanged) {
          std::set<std::string> now;
          for (const pod::Pod& p : c.pods) now.insert(p.uid);
          for (const node::PodRecord& r : pods.Pods()) {
            if (r.pod.source != c.path || r.deleted) continue;
            if (now.count(r.pod.uid) != 0) {
              unchanged.insert(r.pod.uid);
            } else {
              DM_INFO("Static pod changed; deleting the old pod", {"path", c.path},
                      {"pod", r.pod.namespace_ + "/" + r.pod.name}, {"uid", r.pod.uid});
              (void)pods.DeletePod(r.pod.uid);
            }
          }
        }
        if (!c.error.ok()) {
          DM_ERROR(std::string(c.error.message()), "Could not process manifest file",
                   {"path", c.path});
          continue;
        }
        if (c.kind == pod::ManifestChange::Kind::kRemoved) continue;
        for (const pod::Pod& p : c.pods) {
          if (unchanged.count(p.uid) != 0) continue;
          DM_INFO("Admitting static pod", {"pod", p.namespace_ + "/" + p.name}, {"uid", p.uid},
                  {"path", c.path});
          auto rec = pods.AddPod(p);
          if (!rec.ok()) {
            DM_ERROR(std::string(rec.status().message()), "Could not add static pod",
                     {"path", c.path});
          }
        }
      }
      status.MarkDirty();
    });
    if (!s.ok()) {
      std::cerr << "devmgr serve: --pod-manifest-path: " << s.message() << "\n";
      code = kExitEnvironment;
    }
  }
  if (code == kExitOk) {
    timespec limit{};
    const bool timed = o.exit_after_seconds > 0;
    limit.tv_sec = static_cast<time_t>(o.exit_after_seconds);
    limit.tv_nsec = static_cast<long>((o.exit_after_seconds - limit.tv_sec) * 1e9);
    const int sig = timed ? sigtimedwait(&sigs, nullptr, &limit) : sigwaitinfo(&sigs, nullptr);
    if (sig > 0) DM_INFO("Received signal; shutting down", {"signal", strsignal(sig)});
  }
  if (static_pods) static_pods->Stop();
  sup.Stop();
  (void)(*observe)->Stop();  // serving ends; --metrics-file is written
  n.Stop();
  status.Stop();
  status.WriteNow();
  return code;
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
                  "Rewrite this JSON file atomically on every change (shape: README.md)");
  sub->add_option("--plugin", opts->plugins,
                  "Start and supervise this plugin command line (repeatable); it runs under "
                  "/bin/sh and is restarted with back-off when it exits");
  sub->add_flag("--private-mount", opts->private_mount,
                "Run each --plugin in a private mount namespace where DIR is bind-mounted over "
                "/var/lib/kubelet/device-plugins (needs root or user namespaces); the host's "
                "/var/lib/kubelet is never written");
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
  sub->add_option("--fsync", opts->fsync,
                  "fsync checkpoint writes (false: faster, for CI)")
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
  sub->callback([opts, exit_code] { *exit_code = RunServe(*opts); });
}

}  // namespace devmgr::cli
