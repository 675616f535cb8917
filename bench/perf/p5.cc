// P5: DRA. A pod's claim prepared through devmgr's DRA manager against the
// bare NodePrepareResources RPC to the same driver process, beside the
// kubelet's own DRA manager doing the same in the same run; and the
// dra_manager_state rewrite for 1,000 prepared claims against its bytes'
// floor (docs/performance.md, P5).
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "apiserver/resource_type.h"
#include "apiserver/store.h"
#include "checkpoint/file_store.h"
#include "common/clock.h"
#include "common/status_util.h"
#include "dra/checkpoint.h"
#include "dra/checkpoint_encoder.h"
#include "dra/dra_plugin_handler.h"
#include "dra/state.h"
#include "dra/v1/api.grpc.pb.h"
#include "fmt/format.h"
#include "grpcpp/grpcpp.h"
#include "kubelet/profile.h"
#include "nlohmann/json.hpp"
#include "node/node.h"
#include "perf/harness.h"
#include "pod/manifest_parser.h"
#include "process/plugin_process.h"
#include "scenario/compare/compare_kubelet_oracle.h"
#include "scenario/run/plugin_host.h"
#include "transport/grpc_plugin_client.h"

namespace perf_bench {
namespace {

namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
using devmgr::scenario::ShellQuote;
using nlohmann::json;

constexpr char kDriver[] = "bench.dra.example.com";
constexpr int kWarmup = 100;

// Bare NodePrepareResources calls of one claim on a channel of its own to
// the driver's socket (as the DRA manager's client has one).
class BareDraClient {
 public:
  explicit BareDraClient(const std::string& socket)
      : stub_(
            drav1::DRAPlugin::NewStub(devmgr::transport::NewUnixChannel(socket, 4 * 1024 * 1024))) {
    drav1::Claim* c = req_.add_claims();
    c->set_namespace_("default");
    c->set_uid("bench-bare-uid");
    c->set_name("bench-bare");
  }
  double Prepare() {
    grpc::ClientContext ctx;
    drav1::NodePrepareResourcesResponse resp;
    const auto t = Clock::now();
    const grpc::Status s = stub_->NodePrepareResources(&ctx, req_, &resp);
    const double us = SecondsSince(t) * 1e6;
    if (!s.ok()) Die("bare NodePrepareResources failed: " + s.error_message());
    return us;
  }

 private:
  std::unique_ptr<drav1::DRAPlugin::Stub> stub_;
  drav1::NodePrepareResourcesRequest req_;
};

// The e2e-style test driver (tests/dra-driver): a grpc-go server of the
// kubelet's DRA API that answers from memory, needing no API server. It
// serves v1 only, so both kubelets choose the same service.
struct DriverProcess {
  std::string work;
  std::string socket;
  std::unique_ptr<devmgr::node::PluginProcess> process;

  DriverProcess(const std::string& binary, const std::string& tmp) {
    work = MakeTempDir(tmp, "bench-dra-driver");
    socket = work + "/dra.sock";
    devmgr::node::PluginProcessOptions po;
    po.command = fmt::format("exec {} --socket {} --driver {} --serve v1.DRAPlugin --log {}",
                             ShellQuote(binary), ShellQuote(socket), kDriver,
                             ShellQuote(work + "/calls.jsonl"));
    process = std::make_unique<devmgr::node::PluginProcess>(po);
    if (absl::Status s = process->Start(); !s.ok()) Die("dra-driver: " + s.ToString());
    // It creates the socket when it listens; a poll, as nothing signals it.
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (!std::filesystem::exists(socket)) {
      if (absl::Now() > deadline) Die("dra-driver did not listen on " + socket);
      absl::SleepFor(absl::Milliseconds(10));
    }
  }
  ~DriverProcess() {
    process->Stop();
    std::filesystem::remove_all(work);
  }
};

struct Pair {
  Stats prepare, bare, bare_after;
  Stats own_rpc;  // devmgr only: the prepare's own RPC
};

void PrintPair(const char* who, const Pair& p) {
  std::printf("  %s claim prepare  p50 %8.1f us   p99 %8.1f us\n", who, p.prepare.p50,
              p.prepare.p99);
  std::printf("  bare NodePrepareResources p50 %8.1f us   p99 %8.1f us   (its floor)\n", p.bare.p50,
              p.bare.p99);
  std::printf("  ratio p50 %.2fx   (the bare call right after each prepare: p50 %.1f us)\n",
              p.prepare.p50 / p.bare.p50, p.bare_after.p50);
}

// A claim allocated one device of the driver and reserved for the pod, as
// the scheduler leaves it.
void PutClaim(devmgr::apiserver::Store& store, const std::string& name, const std::string& pod,
              const std::string& pod_uid) {
  json claim = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"name", name}, {"namespace", "default"}}},
      {"spec",
       {{"devices",
         {{"requests", {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "bench"}}}}}}}}}}};
  devmgr::apiserver::ApiOr<json> made =
      store.Create(devmgr::apiserver::ResourceClaims(), "default", claim);
  if (!made.ok()) Die("claim: " + made.error->message);
  json with_status = made.value;
  with_status["status"] = {
      {"allocation",
       {{"devices",
         {{"results",
           {{{"request", "gpu"},
             {"driver", kDriver},
             {"pool", "bench-pool"},
             {"device", "dev-0"}}}}}}}},
      {"reservedFor", {{{"resource", "pods"}, {"name", pod}, {"uid", pod_uid}}}}};
  devmgr::apiserver::ApiOr<json> updated = store.Update(
      devmgr::apiserver::ResourceClaims(), "default", name, with_status, /*status_only=*/true);
  if (!updated.ok()) Die("claim status: " + updated.error->message);
}

devmgr::pod::Pod ClaimPod(const std::string& name, const std::string& uid,
                          const std::string& claim) {
  absl::StatusOr<devmgr::pod::Pod> p = devmgr::pod::ParsePodManifest(
      fmt::format("apiVersion: v1\nkind: Pod\n"
                  "metadata: {{name: {}, namespace: default, uid: {}}}\n"
                  "spec:\n"
                  "  resourceClaims: [{{name: gpu, resourceClaimName: {}}}]\n"
                  "  containers: [{{name: c, image: i, resources: {{claims: [{{name: gpu}}]}}}}]\n",
                  name, uid, claim),
      "p5-pod.yaml");
  if (!p.ok()) Die("pod: " + p.status().ToString());
  return *p;
}

// devmgr: a node of the 1.37 profile with DRA over an in-memory API store;
// the driver registered as the plugin watcher would register it; each pod
// prepared by the pod worker's sync (PrepareDynamicResources), then gone
// (untimed), its claim deleted; two bare calls after each.
Pair MeasureDevmgr(const std::string& tmp, const std::string& socket, int n) {
  const std::string dir = MakeTempDir(tmp, "bench-dra-node");
  devmgr::RealClock clock;
  devmgr::apiserver::Store store(clock);
  std::filesystem::create_directories(dir + "/device-plugins");
  devmgr::node::NodeOptions o;
  o.plugin_dir = dir + "/device-plugins";
  o.registry_dir = dir + "/plugins_registry";
  o.profile = devmgr::ProfileForMinor(37);
  o.fsync = true;  // as the kubelet's checkpoint manager; free on tmpfs
  o.dra.store = &store;
  o.dra.node_name = "bench-node";
  o.dra.state_dir = dir;
  // The prepare's own NodePrepareResources, as the manager times it.
  std::atomic<double> rpc_us{0};
  o.dra.on_rpc = [&](const std::string&, const std::string& method, const std::string&,
                     absl::Duration d) {
    if (method.find("NodePrepareResources") != std::string::npos) {
      rpc_us.store(absl::ToDoubleMicroseconds(d));
    }
  };
  Pair out;
  {
    devmgr::node::Node node(o);
    if (absl::Status s = node.Start(); !s.ok()) Die("node start: " + s.ToString());
    devmgr::dra::DraPluginHandler* h = node.dra_handler();
    if (h == nullptr) Die("the node has no DRA handler");
    const std::vector<std::string> versions = {"v1.DRAPlugin"};
    if (absl::Status s = h->ValidatePlugin(kDriver, socket, versions); !s.ok())
      Die("ValidatePlugin: " + s.ToString());
    if (absl::Status s = h->RegisterPlugin(kDriver, socket, versions); !s.ok())
      Die("RegisterPlugin: " + s.ToString());
    BareDraClient bare(socket);
    std::vector<double> prepare, bare_s, after, own_rpc;
    for (int i = 0; i < kWarmup + n; ++i) {
      const std::string name = fmt::format("bench-{}", i);
      const std::string pod_name = fmt::format("bench-pod-{}", i);
      const std::string pod_uid = pod_name + "-uid";
      PutClaim(store, name, pod_name, pod_uid);
      const devmgr::pod::Pod pod = ClaimPod(pod_name, pod_uid, name);
      const auto t = Clock::now();
      const auto r = node.PrepareDynamicResources(pod);
      const double us = SecondsSince(t) * 1e6;
      if (!r.admitted) Die(fmt::format("devmgr prepare {}: {}: {}", i, r.reason, r.message));
      if (absl::Status s = node.DraPodGone(pod_uid, /*observe=*/false); !s.ok())
        Die("devmgr unprepare: " + s.ToString());
      store.Delete(devmgr::apiserver::ResourceClaims(), "default", name, {});
      const double first = bare.Prepare();
      const double second = bare.Prepare();
      if (i >= kWarmup) {
        prepare.push_back(us);
        own_rpc.push_back(rpc_us.load());
        after.push_back(first);
        bare_s.push_back(second);
      }
    }
    node.Stop();
    out = {Summarize(prepare), Summarize(bare_s), Summarize(after), Summarize(own_rpc)};
  }
  std::filesystem::remove_all(dir);
  return out;
}

// The kubelet's own DRA manager (tests/kubelet-oracle, its dra_bench_prepare
// request) with the same driver process; its gRPC client is grpc-go.
absl::StatusOr<Pair> MeasureKubelet(const std::string& oracle_bin, const std::string& tmp,
                                    const std::string& socket, int n, std::string* kubernetes) {
  const std::string dir = MakeTempDir(tmp, "bench-dra-kubelet");
  absl::StatusOr<json> got = [&]() -> absl::StatusOr<json> {
    devmgr::scenario::OracleProcess oracle;
    DEVMGR_RETURN_IF_ERROR(
        oracle.Start(oracle_bin, dir, dir + "/oracle.stderr", absl::Seconds(30)));
    *kubernetes = oracle.kubernetes();
    auto call = [&](json req) -> absl::StatusOr<json> {
      absl::StatusOr<json> r = oracle.Call(std::move(req), absl::Seconds(300));
      if (r.ok() && !r->value("ok", false)) {
        return absl::UnavailableError(r->value("error", r->dump()));
      }
      return r;
    };
    absl::StatusOr<json> reg = call({{"op", "dra_register"},
                                     {"driver", kDriver},
                                     {"endpoint", socket},
                                     {"services", {"v1.DRAPlugin"}}});
    if (!reg.ok()) return reg.status();
    if (!reg->value("registered", false)) {
      return absl::UnavailableError("dra_register: " + reg->value("error", reg->dump()));
    }
    return call({{"op", "dra_bench_prepare"},
                 {"driver", kDriver},
                 {"endpoint", socket},
                 {"count", n},
                 {"warmup", kWarmup}});
  }();  // the oracle is stopped here
  std::filesystem::remove_all(dir);
  if (!got.ok()) return got.status();
  return Pair{Summarize((*got)["prepare_us"].get<std::vector<double>>()),
              Summarize((*got)["bare_us"].get<std::vector<double>>()),
              Summarize((*got)["bare_after_us"].get<std::vector<double>>())};
}

// 1,000 prepared claims as the kubelet's cache holds them: one device each,
// with its request name and CDI ID.
devmgr::dra::ClaimInfoStateList ThousandClaims() {
  std::vector<devmgr::dra::ClaimInfoState> list;
  for (int i = 0; i < 1000; ++i) {
    devmgr::dra::ClaimInfoState c;
    c.claim_uid = fmt::format("3f1c6a2e-0b7d-4c55-9a1e-{:012d}", i);
    c.claim_name = fmt::format("gpu-claim-{}", i);
    c.namespace_ = "default";
    c.pod_uids = std::set<std::string>{fmt::format("8d2e4f10-5a6b-4c7d-8e9f-{:012d}", i)};
    devmgr::dra::Device d;
    d.pool_name = "bench-node";
    d.device_name = fmt::format("gpu-{}", i);
    d.request_names = std::vector<std::string>{"gpu"};
    d.cdi_device_ids = std::vector<std::string>{fmt::format("{}/gpu=gpu-{}", kDriver, i)};
    devmgr::dra::DriverState ds;
    ds.devices = std::vector<devmgr::dra::Device>{d};
    c.driver_state = std::map<std::string, devmgr::dra::DriverState>{{kDriver, ds}};
    list.push_back(std::move(c));
  }
  return list;
}

// What the DRA manager's Commit does after a prepare or unprepare changed one
// claim of 1,000 (dra/manager.cc): the cache's states listed, the file
// encoded by its CheckpointEncoder (only the changed claim encoded again,
// the CRC32 over the assembled Data), written by the same FileStore (temp
// file, fsync as the kubelet, rename). The floor: the Data's CRC32 and the
// same bytes written by the same store. Encoding everything from scratch
// (the kubelet's way) is printed beside it.
void MeasureRewrite(const std::string& tmp, Results& res) {
  const std::string dir = MakeTempDir(tmp, "bench-dra-state");
  const devmgr::checkpoint::FileStore store(dir, /*fsync=*/true);
  std::map<std::string, devmgr::dra::ClaimInfoState> cache;
  devmgr::dra::ClaimInfoStateList claims = ThousandClaims();
  for (devmgr::dra::ClaimInfoState& c : *claims) cache[c.claim_uid] = std::move(c);
  const auto layout = devmgr::dra::StateLayout::k137;
  devmgr::dra::CheckpointEncoder encoder(layout);
  auto listed = [&] {
    std::vector<const devmgr::dra::ClaimInfoState*> states;
    states.reserve(cache.size());
    for (const auto& [uid, state] : cache) states.push_back(&state);
    return states;
  };
  encoder.Encode(listed());  // the cache as the manager restored it
  const int rounds = 300;
  std::vector<double> write_us, encode_us, hash_us, floor_write_us, scratch_us;
  std::string bytes, data;
  uint32_t sink = 0;
  auto it = cache.begin();
  for (int i = 0; i < rounds; ++i) {
    // One claim gains or loses a second pod, as a prepare or unprepare does.
    if (++it == cache.end()) it = cache.begin();
    std::set<std::string>& pods = *it->second.pod_uids;
    if (!pods.erase("second-pod")) pods.insert("second-pod");
    auto t = Clock::now();
    const std::string_view view = encoder.Encode(listed());
    encode_us.push_back(SecondsSince(t) * 1e6);
    if (!store.Write(devmgr::dra::kCheckpointName, view).ok()) Die("P5 checkpoint write failed");
    write_us.push_back(SecondsSince(t) * 1e6);
    bytes.assign(view);
    t = Clock::now();
    std::vector<devmgr::dra::ClaimInfoState> list;
    list.reserve(cache.size());
    for (const auto& [uid, state] : cache) list.push_back(state);
    const std::string scratch =
        devmgr::dra::EncodeFile(devmgr::dra::NewCheckpoint(std::move(list), layout));
    scratch_us.push_back(SecondsSince(t) * 1e6);
    if (scratch != bytes) Die("P5: the encoder's bytes differ from the whole encoding");
    absl::StatusOr<devmgr::dra::Checkpoint> cp = devmgr::dra::DecodeFile(bytes);
    if (!cp.ok() || !devmgr::dra::ChecksumMatches(*cp)) Die("P5 checkpoint does not verify");
    data = std::move(cp->data);
    t = Clock::now();
    sink ^= devmgr::dra::Crc32Ieee(data);
    hash_us.push_back(SecondsSince(t) * 1e6);
    t = Clock::now();
    if (!store.Write("floor", bytes).ok()) Die("P5 floor write failed");
    floor_write_us.push_back(SecondsSince(t) * 1e6);
  }
  if (sink == 0x12345678) std::printf(" ");
  const Stats w = Summarize(write_us);
  const double floor = Summarize(hash_us).p50 + Summarize(floor_write_us).p50;
  std::printf(
      "  dra_manager_state rewrite, 1,000 prepared claims, one changed (%.0f KB): p50 %.1f us   "
      "p99 %.1f us\n",
      bytes.size() / 1e3, w.p50, w.p99);
  std::printf("  of which encoding p50 %.1f us\n", Summarize(encode_us).p50);
  std::printf("  floor: CRC32 %.1f us + write %.1f us = %.1f us\n", Summarize(hash_us).p50,
              Summarize(floor_write_us).p50, floor);
  std::printf("  rewrite / floor: %.2fx (goal <= 1.5x)\n", w.p50 / floor);
  std::printf("  (encoding all 1,000 claims again instead, without the write: p50 %.1f us)\n",
              Summarize(scratch_us).p50);
  res.Num("p5_rewrite_claims", 1000);
  res.Num("p5_rewrite_kb", bytes.size() / 1e3);
  res.Num("p5_rewrite_p50_us", w.p50);
  res.Num("p5_rewrite_encode_p50_us", Summarize(encode_us).p50);
  res.Num("p5_rewrite_floor_us", floor);
  res.Num("p5_rewrite_floor_ratio", w.p50 / floor);
  res.Num("p5_rewrite_scratch_encode_p50_us", Summarize(scratch_us).p50);
  std::filesystem::remove_all(dir);
}

}  // namespace

void RunP5(const Args& a, Results& res) {
  const int n = a.n > 0 ? a.n : 2000;
  const std::string fs = FsType(a.tmp);
  std::printf(
      "P5 DRA: a pod's claim prepared (1.37 profile) vs a bare NodePrepareResources to the "
      "same driver process (tests/dra-driver), %d pods after %d warm-ups, state on %s\n",
      n, kWarmup, fs.c_str());
  res.Str("p5_fs", fs);
  MeasureRewrite(a.tmp, res);
  if (a.dra_driver.empty() || ::access(a.dra_driver.c_str(), X_OK) != 0) {
    const std::string why = a.dra_driver.empty()
                                ? "no --dra-driver binary (tests/dra-driver/build.sh builds it; "
                                  "needs Go and the module proxy)"
                                : a.dra_driver + " is not an executable";
    std::printf("  prepare not measured: %s\n", why.c_str());
    res.Str("p5_skipped", why);
    return;
  }
  DriverProcess driver(a.dra_driver, a.tmp);
  const Pair d = MeasureDevmgr(a.tmp, driver.socket, n);
  PrintPair("devmgr", d);
  std::printf("  of which its own NodePrepareResources p50 %.1f us (the rest p50 %.1f us)\n",
              d.own_rpc.p50, d.prepare.p50 - d.own_rpc.p50);
  res.Num("p5_own_rpc_p50_us", d.own_rpc.p50);
  res.Num("p5_prepare_p50_us", d.prepare.p50);
  res.Num("p5_prepare_p99_us", d.prepare.p99);
  res.Num("p5_floor_p50_us", d.bare.p50);
  res.Num("p5_ratio", d.prepare.p50 / d.bare.p50);
  const std::string why = WhyNotRunnable(
      a.kubelet_oracle,
      "no --kubelet-oracle binary (make kubelet-oracle builds it; needs Go and the module proxy)");
  if (!why.empty()) {
    std::printf("  the kubelet's figure not measured: %s\n", why.c_str());
    res.Str("p5_kubelet_skipped", why);
    return;
  }
  std::string kubernetes;
  absl::StatusOr<Pair> k = MeasureKubelet(a.kubelet_oracle, a.tmp, driver.socket, n, &kubernetes);
  if (!k.ok()) {
    std::printf("  the kubelet's figure not measured: %s\n", k.status().ToString().c_str());
    res.Str("p5_kubelet_skipped", "kubelet-oracle: " + std::string(k.status().message()));
    return;
  }
  PrintPair(("kubelet " + kubernetes).c_str(), *k);
  const double devmgr_ratio = d.prepare.p50 / d.bare.p50;
  const double kubelet_ratio = k->prepare.p50 / k->bare.p50;
  res.Str("p5_kubelet", kubernetes);
  res.Num("p5_kubelet_prepare_p50_us", k->prepare.p50);
  res.Num("p5_kubelet_floor_p50_us", k->bare.p50);
  res.Num("p5_kubelet_ratio", kubelet_ratio);
  if (fs != "tmpfs") {
    std::printf(
        "  no verdict: the state directories are not on tmpfs, where both kubelets' fsync is "
        "free\n");
    return;
  }
  std::printf(
      "  P5 verdict: devmgr's ratio to its floor %.2fx / the kubelet's %.2fx = %.2f (goal <= "
      "0.8)\n",
      devmgr_ratio, kubelet_ratio, devmgr_ratio / kubelet_ratio);
  res.Num("p5_ratio_vs_kubelet", devmgr_ratio / kubelet_ratio);
}

}  // namespace perf_bench
