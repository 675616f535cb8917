// P3: a million devices, over the real socket, with the plugin in its own
// process (so that this process's peak RSS is the node's).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/checksum.h"
#include "checkpoint/file_store.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "kubelet/profile.h"
#include "node/node.h"
#include "perf/harness.h"
#include "process/plugin_process.h"
#include "scenario/run/plugin_host.h"

namespace perf_bench {
namespace {

using devmgr::checkpoint::kCheckpointName;
using devmgr::scenario::ShellQuote;

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

}  // namespace

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

}  // namespace perf_bench
