// Times of an AdmitLoop, in microseconds, one per admission.
// P1: admission vs bare RPCs to the same plugin on the same socket.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/file_store.h"
#include "common/status_util.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "fmt/format.h"
#include "grpcpp/client_context.h"
#include "nlohmann/json.hpp"
#include "perf/harness.h"
#include "perf/node_env.h"
#include "process/plugin_process.h"
#include "scenario/compare/compare_kubelet_oracle.h"
#include "topology/topology_manager.h"
#include "transport/grpc_plugin_client.h"

namespace perf_bench {
namespace {

using devmgr::checkpoint::kCheckpointName;

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

}  // namespace

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

}  // namespace perf_bench
