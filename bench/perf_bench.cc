// perf_bench: devmgr's costs beside their physical floors, measured in the
// same run (method in docs/performance.md). One part per process,
// so that each part's peak RSS is its own:
//
//   perf_bench p1 --devmgr BIN [--tmp DIR] [--disk DIR] [--n N] [--peer BIN]
//                 [--kubelet-oracle BIN]  admission vs a bare Allocate RPC
//   perf_bench p2 --devmgr BIN [--oracle BIN]  checkpoint verify vs the Go tool
//   perf_bench p3 --devmgr BIN [--n DEVICES]   1M-device update, allocation, RSS
//   perf_bench p4 --devmgr BIN [--n CYCLES]    admit/delete churn over real sockets
//   perf_bench scaling                    in-process cost vs devices and entries
//
// Each part prints its figures and, with --json FILE, writes them as one
// flat JSON object (scripts/bench.sh merges them into bench/results.json).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/checksum.h"
#include "checkpoint/file_store.h"
#include "checkpoint_fixture.h"
#include "common/clock.h"
#include "common/status_util.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "grpcpp/client_context.h"
#include "kubelet/profile.h"
#include "manager/fake_plugin_client.h"
#include "manager/manager_impl.h"
#include "node/node.h"
#include "node/pod_manager.h"
#include "plugin/config.h"
#include "plugin/sample_plugin.h"
#include "pod/pod.h"
#include "process/plugin_process.h"
#include "scenario/compare_kubelet_oracle.h"
#include "scenario/plugin_host.h"
#include "topology/topology_manager.h"
#include "transport/grpc_plugin_client.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using devmgr::checkpoint::kCheckpointName;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Every directory MakeTempDir made: Die removes them (the parts do so on
// the way out; Die skips the destructors that would). Plugin processes,
// started through node::PluginProcess, die with this one by themselves.
std::vector<std::string>& MadeDirs() {
  static auto* dirs = new std::vector<std::string>;
  return *dirs;
}

// Ends the bench at once (no static destructors: node and plugin threads
// may still be running).
[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "perf_bench: %s\n", what.c_str());
  for (const std::string& d : MadeDirs()) {
    std::error_code ec;
    std::filesystem::remove_all(d, ec);
  }
  std::fflush(nullptr);
  std::_Exit(1);
}

struct Stats {
  double p50 = 0, p99 = 0, mean = 0;
  size_t n = 0;
};

Stats Summarize(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.n = v.size();
  s.p50 = v[v.size() / 2];
  s.p99 = v[std::min(v.size() - 1, static_cast<size_t>(v.size() * 0.99))];
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

// Flat JSON object of numbers and strings, in insertion order.
class Results {
 public:
  void Num(const std::string& k, double v) { items_.emplace_back(k, fmt::format("{:.6g}", v)); }
  void Str(const std::string& k, const std::string& v) {
    std::string q = "\"";
    for (char c : v) {
      if (c == '"' || c == '\\') q.push_back('\\');
      if (static_cast<unsigned char>(c) < 0x20) {
        q += fmt::format("\\u{:04x}", static_cast<int>(c));
        continue;
      }
      q.push_back(c);
    }
    items_.emplace_back(k, q + "\"");
  }
  void Null(const std::string& k) { items_.emplace_back(k, "null"); }
  std::string Json() const {
    std::string out = "{\n";
    for (size_t i = 0; i < items_.size(); ++i) {
      out += fmt::format("  \"{}\": {}{}\n", items_[i].first, items_[i].second,
                         i + 1 < items_.size() ? "," : "");
    }
    return out + "}\n";
  }

 private:
  std::vector<std::pair<std::string, std::string>> items_;
};

struct Args {
  std::string part;
  // Where the device-plugin directories go (tmpfs when available: see P1).
  std::string tmp = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  // A directory on disk, for P1's disk figures.
  std::string disk = "/tmp";
  std::string json;
  std::string devmgr;
  std::string oracle;
  // A real plugin binary for P1's second figure: the kubernetes e2e sample
  // device plugin (tests/peers), run in a private mount namespace.
  std::string peer;
  // The kubelet's own device manager (tests/kubelet-oracle), for P1's
  // figure of what the kubelet itself takes.
  std::string kubelet_oracle;
  int n = 0;
};

std::string MakeTempDir(const std::string& root, const std::string& tag) {
  std::string tmpl = fmt::format("{}/devmgr-{}-XXXXXX", root, tag);
  if (::mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp in " + root + " failed");
  MadeDirs().push_back(tmpl);
  return tmpl;
}

using devmgr::scenario::ShellQuote;

// The reference plugin as a process of its own, as a /bin/sh command.
std::string SamplePluginCommand(const std::string& devmgr, const std::string& config,
                                const std::string& dir) {
  return fmt::format("exec {} sample-plugin --config {} --dir {} --registry-dir {}",
                     ShellQuote(devmgr), ShellQuote(config), ShellQuote(dir), ShellQuote(dir));
}

std::string FsType(const std::string& path) {
  struct statfs s;
  if (::statfs(path.c_str(), &s) != 0) return "unknown";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0xEF53:
      return "ext4";
    case 0x01021994:
      return "tmpfs";
    case 0x794c7630:
      return "overlayfs";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    default:
      return fmt::format("0x{:x}", static_cast<unsigned long>(s.f_type));
  }
}

// CPU time of this whole process (all threads), in seconds.
double ProcessCpuSeconds() {
  timespec ts;
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double PeakRssMib() {
  rusage ru;
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB -> MiB
}

double LoadAverage() {
  double l[1] = {0};
  return ::getloadavg(l, 1) == 1 ? l[0] : -1;
}

// Counts the manager's change notifications (sent after each state change,
// after the checkpoint write that goes with it).
class Notifications {
 public:
  void Notify() {
    absl::MutexLock l(&mu_);
    ++n_;
  }
  int64_t count() {
    absl::MutexLock l(&mu_);
    return n_;
  }
  // Waits until `pred` holds, re-checking it after every notification
  // (and every 50 ms).
  bool WaitFor(const std::function<bool()>& pred, absl::Duration timeout = absl::Seconds(120)) {
    const absl::Time deadline = absl::Now() + timeout;
    while (!pred()) {
      if (absl::Now() > deadline) return false;
      absl::MutexLock l(&mu_);
      const int64_t seen = n_;
      auto changed = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return n_ != seen; };
      mu_.AwaitWithTimeout(absl::Condition(&changed), absl::Milliseconds(50));
    }
    return true;
  }

 private:
  absl::Mutex mu_;
  int64_t n_ ABSL_GUARDED_BY(mu_) = 0;
};

devmgr::pod::Pod OneDevicePod(const std::string& uid, const std::string& resource) {
  devmgr::pod::Pod p;
  p.uid = uid;
  p.name = uid;
  p.namespace_ = "default";
  devmgr::pod::Container c;
  c.name = "main";
  c.limits[resource] = 1;
  c.requests[resource] = 1;
  p.containers.push_back(c);
  return p;
}

// ---------------------------------------------------------------------------
// An emulated node and a plugin over real unix sockets: the reference
// plugin in a process of its own or in this one, or a real plugin binary.

constexpr char kResource[] = "bench.example.com/gpu";

std::string PluginYaml(int devices, bool preferred) {
  return fmt::format(R"(resource: {}
socket: bench-gpu.sock
devices:
  - count: {}
    id_prefix: GPU-
options:
  get_preferred_allocation_available: {}
allocate:
  envs: {{VISIBLE_DEVICES: "{{{{.DeviceIDs}}}}"}}
  mounts:
    - {{container_path: /usr/lib/x, host_path: /opt/x/lib, read_only: true}}
  device_specs:
    - {{container_path: /dev/ctl, host_path: /dev/ctl, permissions: rw}}
  per_device:
    device_specs:
      - {{container_path: "/dev/gpu{{{{.DeviceIndex}}}}", host_path: "/dev/{{{{.DeviceID}}}}", permissions: rw}}
)",
                     kResource, devices, preferred ? "true" : "false");
}

// The real filesystem, timing each checkpoint write's file operations: from
// the temp file's creation to the end of the rename (the store's write
// minus its directory check).
class TimingFs : public devmgr::fs::Filesystem {
 public:
  absl::Status Mkdir(const std::string& path, mode_t mode) override {
    return real_->Mkdir(path, mode);
  }
  absl::StatusOr<bool> IsDirectory(const std::string& path) override {
    return real_->IsDirectory(path);
  }
  absl::StatusOr<std::unique_ptr<devmgr::fs::WritableFile>> NewTempFile(
      const std::string& dir, const std::string& prefix, std::string* path) override {
    start_ = Clock::now();
    return real_->NewTempFile(dir, prefix, path);
  }
  absl::Status Chmod(const std::string& path, mode_t mode) override {
    return real_->Chmod(path, mode);
  }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    absl::Status s = real_->Rename(from, to);
    last_us_.store(SecondsSince(start_) * 1e6);
    return s;
  }
  absl::Status Remove(const std::string& path) override { return real_->Remove(path); }
  absl::Status SyncDir(const std::string& dir) override { return real_->SyncDir(dir); }
  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    return real_->ReadFile(path);
  }
  absl::StatusOr<std::vector<devmgr::fs::DirEntry>> ListDir(const std::string& dir) override {
    return real_->ListDir(dir);
  }
  // The last write's file operations, in microseconds.
  double last_us() const { return last_us_.load(); }

 private:
  devmgr::fs::Filesystem* real_ = devmgr::fs::Default();
  Clock::time_point start_;  // the manager writes one checkpoint at a time
  std::atomic<double> last_us_{0};
};

// A real plugin binary that NodeEnv starts instead of the reference plugin:
// the kubernetes e2e sample device plugin, which hard-codes
// /var/lib/kubelet/device-plugins (so it runs in a private mount namespace,
// with the node's directory bound there) and creates /tmp/<device id> in
// Allocate (a directory of the run is bound over /tmp).
struct PeerPlugin {
  std::string binary;
  std::string resource = "example.com/resource";
  std::string device = "Dev-1";  // the device a bare Allocate asks for
};

struct EnvOptions {
  bool fsync = false;
  int devices = 8;  // the reference plugin's
  bool preferred = false;
  // The devmgr binary: when set, the reference plugin runs in a process of
  // its own (`devmgr sample-plugin`), as every plugin does on a node; when
  // empty, inside this process, where its gRPC server shares the node's
  // pollers and threads.
  std::string devmgr;
  // When set, this plugin instead of the reference plugin.
  const PeerPlugin* peer = nullptr;
};

class NodeEnv {
 public:
  NodeEnv(const std::string& tmp_root, const EnvOptions& eo) {
    dir_ = MakeTempDir(tmp_root, "bench");
    devmgr::node::NodeOptions o;
    o.plugin_dir = dir_;
    o.profile = devmgr::DefaultProfile();
    o.fsync = eo.fsync;
    o.filesystem = &fs_;
    // The admission's own Allocate RPC, as the manager times it (for the
    // split of an admission into its RPC and the rest).
    o.on_allocate_rpc = [this](const std::string&, absl::Duration d) {
      last_rpc_us_.store(absl::ToDoubleMicroseconds(d));
    };
    node_ = std::make_unique<devmgr::node::Node>(o);
    node_->manager().SetChangeCallback([this] { notes_.Notify(); });
    pods_ = std::make_unique<devmgr::node::PodManager>(node_.get());
    if (!node_->Start(pods_->MakeStartOptions(false)).ok()) Die("node start failed");
    if (eo.peer != nullptr) {
      resource_ = eo.peer->resource;
      bare_device_ = eo.peer->device;
      plugin_status_ =
          StartProcess("exec " + ShellQuote(eo.peer->binary), /*private_mount=*/true, 0);
      return;
    }
    const std::string yaml = PluginYaml(eo.devices, eo.preferred);
    if (!eo.devmgr.empty()) {
      // The plugin's config lives outside the device-plugin directory.
      config_dir_ = MakeTempDir(tmp_root, "bench-plugin");
      const std::string config = config_dir_ + "/plugin.yaml";
      std::ofstream(config) << yaml;
      plugin_status_ = StartProcess(SamplePluginCommand(eo.devmgr, config, dir_),
                                    /*private_mount=*/false, eo.devices);
      if (!plugin_status_.ok()) Die("the reference plugin: " + plugin_status_.ToString());
      return;
    }
    auto cfg = devmgr::plugin::ParseConfig(yaml, "bench-plugin");
    if (!cfg.ok()) Die(std::string(cfg.status().message()));
    devmgr::plugin::PluginOptions po;
    po.dir = dir_;
    po.registry_dir = dir_;
    plugin_ = std::make_unique<devmgr::plugin::SamplePlugin>(*cfg, po);
    if (!plugin_->Start().ok()) Die("plugin start failed");
    if (!notes_.WaitFor([&] { return Allocatable() == eo.devices; })) {
      Die("the plugin did not register");
    }
    plugin_socket_ = dir_ + "/bench-gpu.sock";
  }
  ~NodeEnv() {
    if (plugin_) plugin_->Stop();
    if (process_) process_->Stop();
    node_->Stop();
    pods_.reset();
    plugin_.reset();
    process_.reset();
    node_.reset();
    std::filesystem::remove_all(dir_);
    if (!config_dir_.empty()) std::filesystem::remove_all(config_dir_);
    if (!peer_tmp_.empty()) std::filesystem::remove_all(peer_tmp_);
  }

  devmgr::node::Node& node() { return *node_; }
  devmgr::node::PodManager& pods() { return *pods_; }
  const std::string& dir() const { return dir_; }
  // The plugin's endpoint socket (the one it registered).
  std::string plugin_socket() const { return plugin_socket_; }
  const std::string& resource() const { return resource_; }
  const std::string& bare_device() const { return bare_device_; }
  // Whether a plugin process started and registered (always OK in process).
  const absl::Status& plugin_status() const { return plugin_status_; }
  double last_rpc_us() const { return last_rpc_us_.load(); }
  double last_write_us() const { return fs_.last_us(); }

 private:
  TimingFs fs_;  // before node_, which uses it
  std::atomic<double> last_rpc_us_{0};
  std::string dir_;
  Notifications notes_;
  std::unique_ptr<devmgr::node::Node> node_;
  std::unique_ptr<devmgr::node::PodManager> pods_;
  std::unique_ptr<devmgr::plugin::SamplePlugin> plugin_;
  std::unique_ptr<devmgr::node::PluginProcess> process_;
  std::string config_dir_;  // the reference plugin's, when it has a process
  std::string peer_tmp_;    // bound over a peer's /tmp
  absl::Status plugin_status_;
  std::string resource_ = kResource;
  std::string bare_device_ = "GPU-0";
  std::string plugin_socket_;

  // The resource's allocatable count; -1 before the plugin registers.
  int64_t Allocatable() {
    auto cap = node_->manager().GetCapacity();
    auto it = cap.allocatable.find(resource_);
    return it == cap.allocatable.end() ? -1 : it->second;
  }

  // Starts the plugin process and waits until its devices are allocatable
  // (`devices` of them; any number when 0). The caller decides what a
  // failure means: a peer's is reported (not measured) and the rest of the
  // bench goes on; the reference plugin's ends the bench.
  absl::Status StartProcess(const std::string& command, bool private_mount, int devices) {
    devmgr::node::PluginProcessOptions po;
    po.command = command;
    po.private_mount = private_mount;
    po.plugin_dir = dir_;
    if (private_mount) {
      peer_tmp_ = MakeTempDir(std::filesystem::path(dir_).parent_path().string(), "bench-peer-tmp");
      po.extra_binds = {{peer_tmp_, "/tmp"}};
    }
    process_ = std::make_unique<devmgr::node::PluginProcess>(po);
    DEVMGR_RETURN_IF_ERROR(process_->Start());
    bool registered = false;
    notes_.WaitFor(
        [&] {
          const int64_t n = Allocatable();
          registered = devices > 0 ? n == devices : n > 0;
          return registered || process_->WaitExit(absl::ZeroDuration());
        },
        absl::Seconds(30));
    if (!registered) {
      const std::vector<std::string> tail = process_->OutputTail(3);
      const std::string what = process_->running()
                                   ? "did not register within 30 s"
                                   : fmt::format("exited with code {} before it registered",
                                                 process_->exit_code().value_or(-1));
      return absl::UnavailableError(
          fmt::format("the plugin {}{}{}", what,
                      tail.empty() ? "" : "; its last output: ", fmt::join(tail, " | ")));
    }
    if (devices > 0) {  // the reference plugin: its socket is known
      plugin_socket_ = dir_ + "/bench-gpu.sock";
      return absl::OkStatus();
    }
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      if (e.is_socket() && e.path().filename() != "kubelet.sock") plugin_socket_ = e.path();
    }
    if (plugin_socket_.empty()) return absl::UnavailableError("no plugin socket in " + dir_);
    return absl::OkStatus();
  }
};

// Times of an AdmitLoop, in microseconds, one per admission.
struct LoopTimes {
  std::vector<double> admit;
  std::vector<double> rpc;    // the admission's own Allocate RPC
  std::vector<double> write;  // its checkpoint file operations
  // `bare` twice after each admission: the first call right after it (not
  // the floor), and the second.
  std::vector<double> bare_after, bare;
};

// Admits `n` one-device pods with Node::AdmitPod (the topology manager's
// admit handler -> garbage collection -> devicesToAllocate ->
// GetPreferredAllocation -> Allocate -> checkpoint write). The pods are not
// started; each one's devices are garbage-collected by the next admission,
// as the kubelet's are. `bare` (if set) runs twice between two admissions,
// and the second is the floor: like the admission's own RPC (which follows
// the previous bare call closely), it follows an RPC. The first follows the
// admission's 40-60 us without RPC traffic and is slower (8-15 us in the
// recorded runs; docs/performance.md).
LoopTimes AdmitLoop(NodeEnv& env, const std::string& tag, int n,
                    const std::function<double()>& bare = nullptr) {
  LoopTimes t;
  t.admit.reserve(n);
  for (int i = 0; i < n; ++i) {
    const devmgr::pod::Pod p = OneDevicePod(fmt::format("{}-{}", tag, i), env.resource());
    const auto start = Clock::now();
    const devmgr::topology::AdmitResult r = env.node().AdmitPod(p);
    t.admit.push_back(SecondsSince(start) * 1e6);
    t.rpc.push_back(env.last_rpc_us());
    t.write.push_back(env.last_write_us());
    if (!r.admitted) Die("admission failed: " + r.message);
    if (bare) {
      t.bare_after.push_back(bare());
      t.bare.push_back(bare());
    }
  }
  return t;
}

// ---------------------------------------------------------------------------
// P1: admission vs bare RPCs to the same plugin on the same socket.

// Bare RPCs to the plugin: a channel of its own on the plugin's socket (as
// the manager's client has), one device ID.
class BareClient {
 public:
  explicit BareClient(const std::string& socket, const std::string& device = "GPU-0")
      : stub_(v1beta1::DevicePlugin::NewStub(
            devmgr::transport::NewUnixChannel(socket, 4 * 1024 * 1024))) {
    alloc_.add_container_requests()->add_devices_ids(device);
    auto* r = pref_.add_container_requests();
    for (int i = 0; i < 8; ++i) r->add_available_deviceids(fmt::format("GPU-{}", i));
    r->set_allocation_size(1);
  }
  double Allocate() {
    grpc::ClientContext ctx;
    v1beta1::AllocateResponse resp;
    const auto t = Clock::now();
    const grpc::Status s = stub_->Allocate(&ctx, alloc_, &resp);
    const double us = SecondsSince(t) * 1e6;
    if (!s.ok()) Die("bare Allocate failed: " + s.error_message());
    return us;
  }
  double GetPreferredAllocation() {
    grpc::ClientContext ctx;
    v1beta1::PreferredAllocationResponse resp;
    const auto t = Clock::now();
    const grpc::Status s = stub_->GetPreferredAllocation(&ctx, pref_, &resp);
    const double us = SecondsSince(t) * 1e6;
    if (!s.ok()) Die("bare GetPreferredAllocation failed: " + s.error_message());
    return us;
  }

 private:
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
  v1beta1::AllocateRequest alloc_;
  v1beta1::PreferredAllocationRequest pref_;
};

// Median time of writing the node's current checkpoint bytes again through
// a FileStore like the manager's (same directory, same fsync setting).
double BareWriteP50Us(NodeEnv& env, bool fsync, int n) {
  devmgr::checkpoint::FileStore store(env.dir(), fsync);
  const std::string bytes = *store.Read(kCheckpointName);
  std::vector<double> us;
  for (int i = 0; i < n; ++i) {
    const auto t = Clock::now();
    if (!store.Write("floor", bytes).ok()) Die("bare write failed");
    us.push_back(SecondsSince(t) * 1e6);
  }
  return Summarize(us).p50;
}

// One P1 figure: `n` admissions, each followed by two bare Allocates of
// one device to the same plugin, the second the floor (after 200 warm-ups).
struct P1Pair {
  Stats admit, bare, bare_after, rpc, write, rest, own;
  double bare_write_p50 = 0;
};

P1Pair MeasurePair(NodeEnv& env, int n, const std::string& tag) {
  BareClient bare(env.plugin_socket(), env.bare_device());
  auto allocate = [&] { return bare.Allocate(); };
  AdmitLoop(env, tag + "-warm", 200, allocate);
  const LoopTimes t = AdmitLoop(env, tag, n, allocate);
  std::vector<double> rest_us, own_us;
  for (size_t i = 0; i < t.admit.size(); ++i) {
    rest_us.push_back(t.admit[i] - t.rpc[i]);
    own_us.push_back(t.admit[i] - t.rpc[i] - t.write[i]);
  }
  P1Pair r;
  r.admit = Summarize(t.admit);
  r.bare = Summarize(t.bare);
  r.bare_after = Summarize(t.bare_after);
  r.rpc = Summarize(t.rpc);
  r.write = Summarize(t.write);
  r.rest = Summarize(rest_us);
  r.own = Summarize(own_us);
  r.bare_write_p50 = BareWriteP50Us(env, false, 200);
  return r;
}

// `headline`: the pair the target is about.
void PrintPair(const P1Pair& r, bool headline) {
  std::printf("  admission          p50 %8.1f us   p99 %8.1f us\n", r.admit.p50, r.admit.p99);
  std::printf(
      "    of which its Allocate RPC p50 %.1f us, the rest (GC, devicesToAllocate, "
      "bookkeeping, checkpoint render and write) p50 %.1f us\n",
      r.rpc.p50, r.rest.p50);
  std::printf(
      "    the rest split: checkpoint file operations (create, write, close, rename) p50 "
      "%.1f us; devmgr's own work p50 %.1f us\n",
      r.write.p50, r.own.p50);
  std::printf("  bare Allocate RPC  p50 %8.1f us   p99 %8.1f us   (floor)\n", r.bare.p50,
              r.bare.p99);
  std::printf(
      "    (the bare call right after each admission, not the floor: p50 %.1f us; the "
      "admission against its own RPC: %.2fx)\n",
      r.bare_after.p50, r.admit.p50 / r.rpc.p50);
  std::printf("  ratio p50 %.2fx%s   p99 %.2fx;  bare checkpoint write p50 %.1f us\n",
              r.admit.p50 / r.bare.p50, headline ? " (target <= 1.5x)" : "",
              r.admit.p99 / r.bare.p99, r.bare_write_p50);
}

// A pair's figures in the JSON, each key `prefix` + its name.
void RecordPair(Results& res, const std::string& prefix, const P1Pair& r) {
  res.Num(prefix + "admission_p50_us", r.admit.p50);
  res.Num(prefix + "admission_p99_us", r.admit.p99);
  res.Num(prefix + "floor_p50_us", r.bare.p50);
  res.Num(prefix + "floor_p99_us", r.bare.p99);
  res.Num(prefix + "bare_after_admission_p50_us", r.bare_after.p50);
  res.Num(prefix + "ratio", r.admit.p50 / r.bare.p50);
  res.Num(prefix + "ratio_p99", r.admit.p99 / r.bare.p99);
  res.Num(prefix + "ratio_own_rpc", r.admit.p50 / r.rpc.p50);
  res.Num(prefix + "bare_write_p50_us", r.bare_write_p50);
  res.Num(prefix + "admission_rpc_p50_us", r.rpc.p50);
  res.Num(prefix + "admission_rest_p50_us", r.rest.p50);
  res.Num(prefix + "admission_write_p50_us", r.write.p50);
  res.Num(prefix + "admission_own_p50_us", r.own.p50);
}

// A P1 figure that could not be measured: the reason, printed and under
// `key` in the JSON.
void NotMeasured(Results& res, const std::string& key, const std::string& why) {
  std::printf("  not measured: %s\n", why.c_str());
  res.Str(key, why);
}

// Why a Go binary that runs in a private mount namespace (a peer plugin,
// the kubelet oracle) cannot run here, or "": `missing` when none was given.
std::string WhyNotRunnable(const std::string& binary, const std::string& missing) {
  if (binary.empty()) return missing;
  if (::access(binary.c_str(), X_OK) != 0) return binary + " is not an executable";
  if (absl::Status s = devmgr::node::CheckPrivateMountSupported(); !s.ok()) {
    return std::string(s.message());
  }
  return "";
}

// P1 again with a real Go plugin (the kubernetes e2e sample device plugin):
// grpc-go's server, fsnotify's watch of the directory. Skipped, with the
// reason in the JSON, when the binary or a private mount namespace is
// missing.
void RunP1Peer(const Args& a, int n, Results& res) {
  auto not_measured = [&](const std::string& why) { NotMeasured(res, "p1_peer_skipped", why); };
  std::printf(
      " real Go plugin (kubernetes e2e sample device plugin, %s), private mount namespace, "
      "dir on %s, fsync off:\n",
      a.peer.empty() ? "no binary" : a.peer.c_str(), FsType(a.tmp).c_str());
  const std::string why = WhyNotRunnable(
      a.peer, "no --peer binary (tests/peers/build.sh builds it; needs Go and the module proxy)");
  if (!why.empty()) return not_measured(why);
  PeerPlugin peer;
  peer.binary = a.peer;
  EnvOptions eo;
  eo.peer = &peer;
  NodeEnv env(a.tmp, eo);
  if (!env.plugin_status().ok()) return not_measured(std::string(env.plugin_status().message()));
  const P1Pair r = MeasurePair(env, n, "p1peer");
  PrintPair(r, /*headline=*/false);
  // Which plugin, not where this machine keeps it: results.json is committed.
  res.Str("p1_peer", std::filesystem::path(a.peer).filename().string());
  RecordPair(res, "p1_peer_", r);
}

// P1 as the kubelet itself does it: its own device manager and topology
// manager (kubernetes at one release, tests/kubelet-oracle) admit the same
// one-device pods from the same reference plugin process, timed inside the
// oracle against bare Allocate calls from grpc-go, its gRPC client, the same
// way (two bare calls after each admission, the second the floor). No
// target of its own: it shows where the kubelet's own code stands against
// its floor, and P1's verdict is devmgr's ratio to its floor over this one
// (docs/performance.md). The kubelet always fsyncs the checkpoint (on tmpfs
// a no-op).
void RunP1Kubelet(const Args& a, int n, const P1Pair& devmgr, Results& res) {
  auto not_measured = [&](const std::string& why) { NotMeasured(res, "p1_kubelet_skipped", why); };
  const std::string fs = FsType(a.tmp);
  std::printf(
      " the kubelet's own device manager (%s), the same reference plugin process, dir on "
      "%s, its fsync kept:\n",
      a.kubelet_oracle.empty() ? "no kubelet-oracle binary" : a.kubelet_oracle.c_str(), fs.c_str());
  const std::string why = WhyNotRunnable(
      a.kubelet_oracle,
      "no --kubelet-oracle binary (make kubelet-oracle builds it; needs Go and the module proxy)");
  if (!why.empty()) return not_measured(why);
  const std::string dir = MakeTempDir(a.tmp, "bench-kubelet");
  const std::string side = MakeTempDir(a.tmp, "bench-kubelet-side");
  std::string kubernetes;
  absl::StatusOr<nlohmann::json> got = [&]() -> absl::StatusOr<nlohmann::json> {
    devmgr::scenario::OracleProcess oracle;
    DEVMGR_RETURN_IF_ERROR(
        oracle.Start(a.kubelet_oracle, dir, side + "/oracle.stderr", absl::Seconds(30)));
    kubernetes = oracle.kubernetes();
    // One request; an answer with ok:false (an oracle built before
    // bench_admit says "unknown op") is an error too.
    auto call = [&](nlohmann::json req) -> absl::StatusOr<nlohmann::json> {
      absl::StatusOr<nlohmann::json> r = oracle.Call(std::move(req), absl::Seconds(300));
      if (r.ok() && !r->value("ok", false)) {
        return absl::UnavailableError(r->value("error", r->dump()));
      }
      return r;
    };
    DEVMGR_RETURN_IF_ERROR(call({{"op", "start"}}).status());
    std::ofstream(side + "/plugin.yaml") << PluginYaml(8, false);
    devmgr::node::PluginProcessOptions po;
    po.command = SamplePluginCommand(a.devmgr, side + "/plugin.yaml", dir);
    devmgr::node::PluginProcess plugin(po);
    DEVMGR_RETURN_IF_ERROR(plugin.Start());
    DEVMGR_RETURN_IF_ERROR(
        call({{"op", "wait"}, {"resource", kResource}, {"capacity", 8}, {"timeout_ms", 30000}})
            .status());
    return call({{"op", "bench_admit"},
                 {"resource", kResource},
                 {"endpoint", "bench-gpu.sock"},
                 {"device", "GPU-0"},
                 {"count", n},
                 {"warmup", 200}});
  }();  // the plugin and the oracle are stopped here
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(side);
  if (!got.ok()) return not_measured("kubelet-oracle: " + std::string(got.status().message()));
  const Stats admit = Summarize((*got)["admit_us"].get<std::vector<double>>());
  const Stats bare = Summarize((*got)["bare_us"].get<std::vector<double>>());
  const Stats after = Summarize((*got)["bare_after_us"].get<std::vector<double>>());
  std::printf("  kubelet %s admission  p50 %8.1f us   p99 %8.1f us\n", kubernetes.c_str(),
              admit.p50, admit.p99);
  std::printf("  bare Allocate RPC (grpc-go) p50 %8.1f us   p99 %8.1f us   (its floor)\n", bare.p50,
              bare.p99);
  std::printf(
      "  ratio p50 %.2fx   p99 %.2fx   (the bare call right after each admission: p50 %.1f "
      "us)\n",
      admit.p50 / bare.p50, admit.p99 / bare.p99, after.p50);
  // devmgr's headline runs with fsync off and the kubelet always fsyncs:
  // their admissions compare only where an fsync costs nothing (tmpfs).
  const bool fsync_free = fs == "tmpfs";
  const double devmgr_ratio = devmgr.admit.p50 / devmgr.bare.p50;
  const double kubelet_ratio = admit.p50 / bare.p50;
  if (fsync_free) {
    std::printf("  devmgr's admission above is %.2fx the kubelet's\n",
                devmgr.admit.p50 / admit.p50);
    std::printf(
        "  P1 verdict: devmgr's ratio to its floor %.2fx / the kubelet's %.2fx = %.2f (goal <= "
        "0.8)\n",
        devmgr_ratio, kubelet_ratio, devmgr_ratio / kubelet_ratio);
  } else {
    std::printf(
        "  devmgr's admission is not compared with the kubelet's here: off tmpfs the "
        "kubelet's fsync costs what devmgr's fsync-off write does not\n");
  }
  res.Str("p1_kubelet", kubernetes);
  res.Str("p1_kubelet_fs", fs);
  res.Num("p1_kubelet_admission_p50_us", admit.p50);
  res.Num("p1_kubelet_admission_p99_us", admit.p99);
  res.Num("p1_kubelet_floor_p50_us", bare.p50);
  res.Num("p1_kubelet_floor_p99_us", bare.p99);
  res.Num("p1_kubelet_bare_after_admission_p50_us", after.p50);
  res.Num("p1_kubelet_ratio", kubelet_ratio);
  if (fsync_free) {
    res.Num("p1_devmgr_vs_kubelet_admission", devmgr.admit.p50 / admit.p50);
    res.Num("p1_ratio_vs_kubelet", devmgr_ratio / kubelet_ratio);
  }
}

void RunP1(const Args& a, Results& res) {
  const int n = a.n > 0 ? a.n : 2000;
  if (a.devmgr.empty()) {
    Die("p1 needs --devmgr BIN: the reference plugin runs in a process of its own");
  }
  // The headline pair runs with the device-plugin directory on tmpfs, so
  // that "checkpoint write, fsync off" is the page-cache write it is meant
  // to be; on this machine's ext4 (mounted with `discard`) replacing the
  // file by rename waits for a discard of the old file's blocks even
  // without fsync. That case is measured after, beside a bare write.
  const std::string& mem = a.tmp;
  std::printf(
      "P1 admission: 1-container 1-device pod (node.AdmitPod: GC, devicesToAllocate, "
      "Allocate RPC, checkpoint write), %d admissions interleaved with bare RPCs\n",
      n);
  P1Pair headline;
  {
    std::printf(
        " reference plugin in its own process (devmgr sample-plugin), without "
        "GetPreferredAllocation, dir on %s, fsync off:\n",
        FsType(mem).c_str());
    EnvOptions eo;
    eo.devmgr = a.devmgr;
    NodeEnv env(mem, eo);
    const P1Pair r = MeasurePair(env, n, "p1");
    PrintPair(r, /*headline=*/true);
    RecordPair(res, "p1_", r);
    headline = r;
    res.Num("p1_n", n);
    res.Str("p1_fs", FsType(mem));
    res.Str("p1_plugin", "own process");
  }
  {
    // Not a node's arrangement (a plugin is always a process of its own):
    // the bench's before 2026-11-26, kept beside the headline.
    std::printf(
        " the same with the reference plugin inside this process (its gRPC server shares "
        "the node's pollers and threads):\n");
    NodeEnv env(mem, EnvOptions{});
    const P1Pair r = MeasurePair(env, n, "p1in");
    PrintPair(r, /*headline=*/false);
    RecordPair(res, "p1_inproc_", r);
  }
  RunP1Peer(a, n, res);
  RunP1Kubelet(a, n, headline, res);
  {
    std::printf(" plugin with GetPreferredAllocation (two RPCs per admission), dir on %s:\n",
                FsType(mem).c_str());
    EnvOptions eo;
    eo.preferred = true;
    eo.devmgr = a.devmgr;
    NodeEnv env(mem, eo);
    BareClient bare(env.plugin_socket());
    auto both = [&] { return bare.GetPreferredAllocation() + bare.Allocate(); };
    AdmitLoop(env, "warm", 200, both);
    const LoopTimes t = AdmitLoop(env, "p1g", n, both);
    const Stats sa = Summarize(t.admit);
    const Stats sb = Summarize(t.bare);
    std::printf(
        "  admission p50 %.1f us p99 %.1f us; bare GetPreferredAllocation + Allocate "
        "p50 %.1f us p99 %.1f us; ratio p50 %.2fx\n",
        sa.p50, sa.p99, sb.p50, sb.p99, sa.p50 / sb.p50);
    res.Num("p1_gpa_admission_p50_us", sa.p50);
    res.Num("p1_gpa_admission_p99_us", sa.p99);
    res.Num("p1_gpa_floor_p50_us", sb.p50);
    res.Num("p1_gpa_ratio", sa.p50 / sb.p50);
  }
  const int nd = std::max(50, n / 10);
  for (const bool fsync : {false, true}) {
    EnvOptions eo;
    eo.fsync = fsync;
    eo.devmgr = a.devmgr;
    NodeEnv env(a.disk, eo);
    BareClient bare(env.plugin_socket());
    AdmitLoop(env, "warmd", 20);
    const LoopTimes t = AdmitLoop(env, "p1d", nd, [&] { return bare.Allocate(); });
    const Stats sa = Summarize(t.admit);
    const std::vector<double>& bare_us = t.bare;
    const double w = BareWriteP50Us(env, fsync, nd);
    std::printf(
        " dir on %s (%s), fsync %s, %d admissions: p50 %.1f us p99 %.1f us; bare Allocate "
        "p50 %.1f us; bare checkpoint write p50 %.1f us\n",
        a.disk.c_str(), FsType(a.disk).c_str(), fsync ? "on" : "off", nd, sa.p50, sa.p99,
        Summarize(bare_us).p50, w);
    const std::string k = fsync ? "p1_fsync" : "p1_disk";
    res.Num(k + "_admission_p50_us", sa.p50);
    res.Num(k + "_admission_p99_us", sa.p99);
    res.Num(k + "_bare_allocate_p50_us", Summarize(bare_us).p50);
    res.Num(k + "_bare_write_p50_us", w);
  }
  res.Str("p1_disk_fs", FsType(a.disk));
}

// ---------------------------------------------------------------------------
// P2: checkpoint verify, devmgr vs the Go reference tool, same file.

using devmgr_bench::EntriesFile;
using devmgr_bench::GpuAllocResp;
using devmgr_bench::Uuid;

// Runs argv to completion with stdout/stderr to /dev/null; returns the
// exit status (-1 when it could not run) and adds the child's user + system
// CPU seconds to *cpu.
int RunQuiet(const std::vector<std::string>& argv, double* cpu) {
  std::vector<char*> cargv;
  for (const std::string& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  const int rc = posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  *cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Best of `reps` wall times of a whole process, and the best CPU time.
double BestProcessSeconds(const std::vector<std::string>& argv, int reps, int* rc,
                          double* best_cpu) {
  double best = 1e9;
  *best_cpu = 1e9;
  for (int i = 0; i < reps; ++i) {
    const auto t = Clock::now();
    double cpu = 0;
    *rc = RunQuiet(argv, &cpu);
    best = std::min(best, SecondsSince(t));
    *best_cpu = std::min(*best_cpu, cpu);
  }
  return best;
}

void RunP2(const Args& a, Results& res) {
  const int files = a.n > 0 ? a.n : 10;
  const std::string dir = MakeTempDir(a.tmp, "p2");
  const std::string path = dir + "/kubelet_internal_checkpoint";
  const std::string bytes = EntriesFile(10000);
  std::ofstream(path, std::ios::binary) << bytes;
  const double mb = static_cast<double>(bytes.size()) / 1e6;
  std::printf(
      "P2 checkpoint verify: a 10,000-entry file (%.2f MB), passed %d times to one "
      "process; best of 3\n",
      mb, files);
  res.Num("p2_file_mb", mb);
  res.Num("p2_entries", 10000);

  // In-process decode + verify, for reference.
  double inproc = 1e9;
  for (int i = 0; i < 5; ++i) {
    const auto t = Clock::now();
    const auto v = devmgr::checkpoint::Verify(bytes);
    if (!v.valid) Die("our own file does not verify");
    inproc = std::min(inproc, SecondsSince(t));
  }
  std::printf("  devmgr in-process decode+verify: %.1f ms = %.0f MB/s\n", inproc * 1e3,
              mb / inproc);
  res.Num("p2_devmgr_inprocess_ms", inproc * 1e3);

  std::vector<std::string> ours = {a.devmgr, "checkpoint", "verify"};
  for (int i = 0; i < files; ++i) ours.push_back(path);
  int rc = 0;
  double cpu_ours = 0;
  const double t_ours = BestProcessSeconds(ours, 3, &rc, &cpu_ours);
  if (rc != 0) Die(fmt::format("devmgr checkpoint verify exited {}", rc));
  std::printf("  devmgr checkpoint verify: %.1f ms = %.0f MB/s\n", t_ours * 1e3,
              files * mb / t_ours);
  res.Num("p2_devmgr_ms", t_ours * 1e3);
  res.Num("p2_devmgr_mb_s", files * mb / t_ours);
  res.Num("p2_devmgr_cpu_ms", cpu_ours * 1e3);

  if (a.oracle.empty() || ::access(a.oracle.c_str(), X_OK) != 0) {
    std::printf(
        "  the checkpoint reference tool is not built (%s; tests/checkpoint-oracle/build.sh "
        "builds it, with Go and the Go module proxy): ratio not measured\n",
        a.oracle.empty() ? "no --oracle" : a.oracle.c_str());
    res.Null("p2_ratio");
    res.Str("p2_note", "checkpoint reference tool (tests/checkpoint-oracle) not built");
  } else {
    std::vector<std::string> theirs = {a.oracle, "verify"};
    for (int i = 0; i < files; ++i) theirs.push_back(path);
    double cpu_go = 0;
    const double t_go = BestProcessSeconds(theirs, 3, &rc, &cpu_go);
    if (rc != 0) Die(fmt::format("checksum-oracle verify exited {}", rc));
    std::printf("  checksum-oracle verify (Go): %.1f ms = %.0f MB/s\n", t_go * 1e3,
                files * mb / t_go);
    std::printf("  ratio %.1fx wall (target >= 20x); CPU time %.0f ms vs %.0f ms = %.1fx\n",
                t_go / t_ours, cpu_go * 1e3, cpu_ours * 1e3, cpu_go / cpu_ours);
    res.Num("p2_go_cpu_ms", cpu_go * 1e3);
    res.Num("p2_cpu_ratio", cpu_go / cpu_ours);
    res.Num("p2_go_ms", t_go * 1e3);
    res.Num("p2_go_mb_s", files * mb / t_go);
    res.Num("p2_ratio", t_go / t_ours);
  }
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------------------
// P3: a million devices, over the real socket, with the plugin in its own
// process (so that this process's peak RSS is the node's).

// User + system CPU seconds process `pid` has used so far.
double ProcessCpuSecondsOf(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 2));
  std::string f;
  double ticks = 0;
  // Fields 3..: state is field 3; utime and stime are fields 14 and 15.
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i >= 14) ticks += std::atof(f.c_str());
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

void RunP3(const Args& a, Results& res) {
  const int devices = a.n > 0 ? a.n : 1000000;
  const std::string res_name = "bench.example.com/vgpu";
  const std::string dir = MakeTempDir(a.tmp, "p3");
  // The plugin's files live outside the device-plugin directory, which the
  // node's start-up cleanup empties.
  const std::string files = MakeTempDir(a.tmp, "p3-plugin");
  const std::string config = files + "/plugin.yaml";
  const std::string control = files + "/control";
  // 40-byte IDs, the length of NVIDIA GPU UUIDs ("GPU-" + 36).
  std::ofstream(config) << fmt::format(
      "resource: {}\nsocket: bench-vgpu.sock\ndevices:\n  - count: {}\n"
      "    id_prefix: GPU-6b7e2a41-7f1e-4000-8000-\n    start: 100000000000\n",
      res_name, devices);
  std::printf(
      "P3 scale: %d devices over the real socket (receive limit 512 MiB), plugin in its "
      "own process, fsync off, dir on %s\n",
      devices, FsType(a.tmp).c_str());
  res.Num("p3_devices", devices);

  Notifications notes;
  devmgr::node::NodeOptions o;
  o.plugin_dir = dir;
  o.profile = devmgr::DefaultProfile();
  o.fsync = false;
  o.max_recv_msg_size = 512 * 1024 * 1024;
  auto node = std::make_unique<devmgr::node::Node>(o);
  node->manager().SetChangeCallback([&] { notes.Notify(); });
  absl::Mutex active_mu;
  std::vector<std::string> active;
  devmgr::manager::StartOptions so;
  so.active_pod_uids = [&] {
    absl::MutexLock l(&active_mu);
    return active;
  };
  if (!node->Start(so).ok()) Die("node start failed");
  auto allocatable = [&] {
    auto cap = node->manager().GetCapacity();
    auto it = cap.allocatable.find(res_name);
    return it == cap.allocatable.end() ? int64_t{-1} : it->second;
  };

  // First registration: plugin start-up, its list, the transfer, the
  // update and the checkpoint write (connected + first update notified).
  const int64_t before = notes.count();
  auto t = Clock::now();
  devmgr::node::PluginProcessOptions po;
  po.command = SamplePluginCommand(a.devmgr, config, dir) + " --control " + ShellQuote(control);
  auto plugin = std::make_unique<devmgr::node::PluginProcess>(po);
  if (absl::Status s = plugin->Start(); !s.ok()) Die(s.ToString());
  if (!notes.WaitFor([&] { return notes.count() >= before + 2 && allocatable() == devices; },
                     absl::Seconds(300))) {
    Die(fmt::format("the plugin did not register; its last output: {}",
                    fmt::join(plugin->OutputTail(5), " | ")));
  }
  const double first = SecondsSince(t);
  std::printf("  first registration (plugin start, list, transfer, apply, write): %.2f s\n", first);
  res.Num("p3_first_registration_s", first);

  // The update: one device turns unhealthy; the plugin re-sends all of
  // them; devmgr applies the list and rewrites the checkpoint (1M IDs).
  std::vector<double> updates, update_cpu, plugin_cpu;
  for (int i = 0; i < 3; ++i) {
    const int64_t n0 = notes.count();
    const int64_t want = devices - 1 + (i % 2);
    const double c0 = ProcessCpuSeconds();
    const double pc0 = ProcessCpuSecondsOf(plugin->pid());
    t = Clock::now();
    std::ofstream(control, std::ios::app) << "health GPU-6b7e2a41-7f1e-4000-8000-100000000000 "
                                          << (i % 2 == 0 ? "Unhealthy" : "Healthy") << "\n";
    if (!notes.WaitFor([&] { return notes.count() > n0 && allocatable() == want; },
                       absl::Seconds(120))) {
      Die("the update did not arrive");
    }
    updates.push_back(SecondsSince(t));
    update_cpu.push_back(ProcessCpuSeconds() - c0);
    plugin_cpu.push_back(ProcessCpuSecondsOf(plugin->pid()) - pc0);
  }
  const Stats su = Summarize(updates);
  std::printf("  update CPU time of the node process (all threads): p50 %.3f s\n",
              Summarize(update_cpu).p50);
  res.Num("p3_update_cpu_s", Summarize(update_cpu).p50);
  std::printf(
      "  update CPU time of the plugin process (building and sending the list): p50 %.3f s\n",
      Summarize(plugin_cpu).p50);
  res.Num("p3_update_plugin_cpu_s", Summarize(plugin_cpu).p50);
  std::printf(
      "  update (control -> plugin re-send -> receive -> apply -> checkpoint written): "
      "p50 %.3f s of %zu (target < 2 s)\n",
      su.p50, su.n);
  res.Num("p3_update_s", su.p50);

  // Allocation of one device from the pool (no GetPreferredAllocation: with
  // it the kubelet would send the plugin all 1M available IDs).
  const int allocs = 15;
  std::vector<double> alloc_s;
  const double alloc_c0 = ProcessCpuSeconds();
  for (int i = 0; i < allocs; ++i) {
    const std::string uid = fmt::format("p3-{}", i);
    {
      absl::MutexLock l(&active_mu);
      active = {uid};
    }
    t = Clock::now();
    const auto r = node->AdmitPod(OneDevicePod(uid, res_name));
    alloc_s.push_back(SecondsSince(t));
    if (!r.admitted) Die("P3 admission failed: " + r.message);
  }
  const Stats sa = Summarize(alloc_s);
  const double alloc_cpu = (ProcessCpuSeconds() - alloc_c0) / allocs;
  const double rss = PeakRssMib();
  res.Num("p3_alloc_cpu_mean_ms", alloc_cpu * 1e3);
  std::printf("  allocation of 1 device: p50 %.1f ms (of %d)\n", sa.p50 * 1e3, allocs);
  std::printf("  peak RSS of the node process: %.0f MiB (target < 1024)\n", rss);
  res.Num("p3_alloc_p50_ms", sa.p50 * 1e3);
  res.Num("p3_peak_rss_mib", rss);

  // Floors: the bytes of that checkpoint hashed (FNV-1a over its go-spew
  // text) and written (the same store, fsync off).
  devmgr::checkpoint::FileStore store(dir, false);
  const std::string file = *store.Read(kCheckpointName);
  auto cp = devmgr::checkpoint::DecodeV2(file);
  if (!cp.ok() || !devmgr::checkpoint::ChecksumMatches(*cp)) Die("P3 checkpoint does not verify");
  const std::string spew = devmgr::checkpoint::SpewV2(cp->data);
  std::vector<double> hash_s, write_s;
  uint32_t sink = 0;
  for (int i = 0; i < allocs; ++i) {
    t = Clock::now();
    sink ^= devmgr::checkpoint::Fnv1a32(spew);
    hash_s.push_back(SecondsSince(t));
    t = Clock::now();
    if (!store.Write("floor", file).ok()) Die("floor write failed");
    write_s.push_back(SecondsSince(t));
  }
  if (sink == 0x12345678) std::printf(" ");
  const double floor = Summarize(hash_s).p50 + Summarize(write_s).p50;
  std::printf("  floor: hash %.1f ms (%.1f MB spew) + write %.1f ms (%.1f MB) = %.1f ms\n",
              Summarize(hash_s).p50 * 1e3, spew.size() / 1e6, Summarize(write_s).p50 * 1e3,
              file.size() / 1e6, floor * 1e3);
  std::printf("  allocation / floor: %.2fx (target <= 1.5x)\n", sa.p50 / floor);
  res.Num("p3_floor_hash_ms", Summarize(hash_s).p50 * 1e3);
  res.Num("p3_floor_write_ms", Summarize(write_s).p50 * 1e3);
  res.Num("p3_floor_ms", floor * 1e3);
  res.Num("p3_alloc_floor_ratio", sa.p50 / floor);
  res.Num("p3_checkpoint_mb", file.size() / 1e6);
  // What rendering from scratch costs (the old way, and the kubelet's).
  t = Clock::now();
  const std::string scratch = devmgr::checkpoint::Encode(devmgr::checkpoint::MakeV2(cp->data));
  const double scratch_s = SecondsSince(t);
  if (scratch != file) Die("from-scratch rendering differs from the written checkpoint");
  std::printf("  from-scratch render+hash of the same checkpoint: %.1f ms\n", scratch_s * 1e3);
  res.Num("p3_scratch_render_ms", scratch_s * 1e3);

  plugin.reset();
  node->Stop();
  node.reset();
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(files);
}

// ---------------------------------------------------------------------------
// P4: admit/delete churn through the pod manager, reference plugin, real
// sockets.

void RunP4(const Args& a, Results& res) {
  const int cycles = a.n > 0 ? a.n : 10000;
  if (a.devmgr.empty()) {
    Die("p4 needs --devmgr BIN: the reference plugin runs in a process of its own");
  }
  std::printf(
      "P4 churn: %d admit/delete cycles (pod manager: admission + container start; "
      "delete), reference plugin in its own process with GetPreferredAllocation, fsync off, "
      "dir on %s\n",
      cycles, FsType(a.tmp).c_str());
  EnvOptions eo;
  eo.preferred = true;
  eo.devmgr = a.devmgr;
  NodeEnv env(a.tmp, eo);
  const auto t = Clock::now();
  for (int i = 0; i < cycles; ++i) {
    const std::string uid = fmt::format("p4-{}", i);
    auto r = env.pods().AddPod(OneDevicePod(uid, kResource));
    if (!r.ok() || r->phase == devmgr::pod::Phase::kFailed) {
      Die("P4 admission failed: " + (r.ok() ? r->message : std::string(r.status().message())));
    }
    if (!env.pods().DeletePod(uid).ok()) Die("P4 delete failed");
  }
  const double s = SecondsSince(t);
  std::printf("  %d cycles: %.2f s (%.0f us/cycle; target < 10 s)\n", cycles, s, s / cycles * 1e6);
  res.Num("p4_cycles", cycles);
  res.Str("p4_fs", FsType(a.tmp));
  res.Num("p4_cycles_s", s);
}

// ---------------------------------------------------------------------------
// Scaling: in-process (fake plugin client), how update, allocation and its
// floor grow with devices and with entries.

v1beta1::ListAndWatchResponse MakeList(int n) {
  v1beta1::ListAndWatchResponse resp;
  resp.mutable_devices()->Reserve(n);
  for (int i = 0; i < n; ++i) {
    v1beta1::Device* d = resp.add_devices();
    d->set_id(fmt::format("GPU-6b7e2a41-7f1e-4000-8000-{:012}", 100000000000LL + i));
    d->set_health("Healthy");
  }
  return resp;
}

struct ScalePoint {
  double update_ms, alloc_ms, floor_ms, scratch_ms;
};

ScalePoint MeasureScale(const std::string& tmp, int devices, int entries) {
  const std::string dir = MakeTempDir(tmp, "scale");
  devmgr::FakeClock clock;
  devmgr::manager::ManagerOptions o;
  o.plugin_dir = dir;
  o.fsync = false;
  o.clock = &clock;
  ScalePoint p{};
  {
    devmgr::manager::ManagerImpl m(o);
    std::vector<std::string> active;
    devmgr::manager::StartOptions so;
    so.active_pod_uids = [&active] { return active; };
    if (!m.Start(so).ok()) Die("manager start");
    auto client = std::make_shared<devmgr::manager::FakePluginClient>();
    if (!m.PluginConnected("vendor.com/gpu", client).ok()) Die("connect");
    const auto list = MakeList(devices);
    m.PluginListAndWatchReceiver("vendor.com/gpu", client.get(), list);  // first
    auto t = Clock::now();
    m.PluginListAndWatchReceiver("vendor.com/gpu", client.get(), list);  // re-sent
    // Pods are admitted through the topology manager (policy none), as on a node.
    auto tm = devmgr::topology::TopologyManager::Create({}, {});
    if (!tm.ok()) Die("topology manager");
    (*tm)->AddHintProvider(&m);
    p.update_ms = SecondsSince(t) * 1e3;
    // Random-looking UIDs, as the kubelet's: a new pod's entry lands at a
    // random place in the (sorted) entries.
    for (int i = 0; i < entries; ++i) {
      active.push_back(Uuid(i));
      if (!(*tm)->Admit(OneDevicePod(active.back(), "vendor.com/gpu")).admitted) Die("fill");
    }
    std::vector<double> a;
    for (int i = 0; i < 7; ++i) {
      active.push_back(Uuid(5000000 + i));
      t = Clock::now();
      if (!(*tm)->Admit(OneDevicePod(active.back(), "vendor.com/gpu")).admitted) Die("alloc");
      a.push_back(SecondsSince(t) * 1e3);
    }
    p.alloc_ms = Summarize(a).p50;
  }
  devmgr::checkpoint::FileStore store(dir, false);
  const std::string file = *store.Read(kCheckpointName);
  auto cp = devmgr::checkpoint::DecodeV2(file);
  const std::string spew = devmgr::checkpoint::SpewV2(cp->data);
  std::vector<double> f;
  for (int i = 0; i < 5; ++i) {
    auto t = Clock::now();
    volatile uint32_t h = devmgr::checkpoint::Fnv1a32(spew);
    (void)h;
    if (!store.Write("floor", file).ok()) Die("floor write");
    f.push_back(SecondsSince(t) * 1e3);
  }
  p.floor_ms = Summarize(f).p50;
  auto t = Clock::now();
  volatile size_t sz = devmgr::checkpoint::Encode(devmgr::checkpoint::MakeV2(cp->data)).size();
  (void)sz;
  p.scratch_ms = SecondsSince(t) * 1e3;
  std::filesystem::remove_all(dir);
  return p;
}

void RunScaling(const Args& a, Results& res) {
  std::printf("Scaling (in-process manager, fake plugin client, fsync off)\n");
  std::printf("  %9s %8s %11s %10s %10s %13s\n", "devices", "entries", "update ms", "alloc ms",
              "floor ms", "scratch ms");
  auto row = [&](int devices, int entries, const std::string& key) {
    const ScalePoint p = MeasureScale(a.tmp, devices, entries);
    std::printf("  %9d %8d %11.2f %10.3f %10.3f %13.3f\n", devices, entries, p.update_ms,
                p.alloc_ms, p.floor_ms, p.scratch_ms);
    res.Num(key + "_update_ms", p.update_ms);
    res.Num(key + "_alloc_ms", p.alloc_ms);
    res.Num(key + "_floor_ms", p.floor_ms);
    res.Num(key + "_scratch_ms", p.scratch_ms);
  };
  for (int d : {1000, 10000, 100000, 1000000}) row(d, 10, fmt::format("scale_devices_{}", d));
  for (int e : {100, 1000, 3000}) row(20000, e, fmt::format("scale_entries_{}", e));
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: perf_bench p1|p2|p3|p4|scaling [--tmp DIR] [--disk DIR] [--json FILE] [--n N]\n"
        "                  [--devmgr BIN] [--oracle BIN] [--peer BIN] [--kubelet-oracle BIN]\n"
        "Measures devmgr beside its floors; see docs/performance.md.\n");
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  a.part = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) Die("missing value for " + k);
    const std::string v = argv[++i];
    if (k == "--tmp")
      a.tmp = v;
    else if (k == "--disk")
      a.disk = v;
    else if (k == "--json")
      a.json = v;
    else if (k == "--n")
      a.n = std::atoi(v.c_str());
    else if (k == "--devmgr")
      a.devmgr = v;
    else if (k == "--oracle")
      a.oracle = v;
    else if (k == "--peer")
      a.peer = v;
    else if (k == "--kubelet-oracle")
      a.kubelet_oracle = v;
    else
      Die("unknown flag " + k);
  }
  // As devmgr's main: absl's deadlock detection off unless asked for.
  if (const char* m = std::getenv("DEVMGR_MUTEX_DEADLOCK_DETECTION"); m == nullptr || *m != '1') {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
  Results res;
  res.Num(a.part + "_load_avg_1m", LoadAverage());
  if (a.part == "p1")
    RunP1(a, res);
  else if (a.part == "p2")
    RunP2(a, res);
  else if (a.part == "p3")
    RunP3(a, res);
  else if (a.part == "p4")
    RunP4(a, res);
  else if (a.part == "scaling")
    RunScaling(a, res);
  else
    Die("unknown part " + a.part);
  if (!a.json.empty()) std::ofstream(a.json) << res.Json();
  return 0;
}
