// Allocation of one container from pools of 1k, 10k and 100k healthy
// devices (no topology, no GetPreferredAllocation), through the manager's
// Allocate with an in-memory plugin, fsync off. Shows that the cost per pool
// device stays flat (linear scaling): devicesToAllocate computes
// available = healthy - in use once, and the checkpoint written after the
// Allocate RPC lists every healthy device.
//
// Usage: allocate_bench [iterations]
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/clock.h"
#include "fmt/format.h"
#include "manager/fake_plugin_client.h"
#include "manager/manager_impl.h"
#include "pod/pod.h"
#include "topology/topology_manager.h"

namespace {

using devmgr::manager::FakePluginClient;
using devmgr::manager::ManagerImpl;
using devmgr::manager::ManagerOptions;

v1beta1::ListAndWatchResponse MakeList(int n) {
  v1beta1::ListAndWatchResponse resp;
  resp.mutable_devices()->Reserve(n);
  for (int i = 0; i < n; ++i) {
    v1beta1::Device* d = resp.add_devices();
    d->set_id(fmt::format("GPU-{:08x}-7f1e-4000-8000-{:012x}", i, i * 7919));
    d->set_health("Healthy");
  }
  return resp;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double CpuMs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct Result {
  double wall_ms;
  double cpu_ms;
};

// Allocates `iterations` pods of one container asking for `request`
// devices each from a pool of `pool` devices; returns the median times.
Result Run(int pool, int request, int iterations) {
  char tmpl[] = "/tmp/devmgr-abench-XXXXXX";
  const char* dir = mkdtemp(tmpl);
  if (dir == nullptr) std::abort();
  devmgr::FakeClock clock;
  ManagerOptions o;
  o.plugin_dir = dir;
  o.fsync = false;
  o.clock = &clock;
  Result r{};
  {
    ManagerImpl m(o);
    std::vector<std::string> active;
    devmgr::manager::StartOptions so;
    so.active_pod_uids = [&active] { return active; };
    if (!m.Start(so).ok()) std::abort();
    auto client = std::make_shared<FakePluginClient>();
    if (!m.PluginConnected("vendor.com/gpu", client).ok()) std::abort();
    m.PluginListAndWatchReceiver("vendor.com/gpu", client.get(), MakeList(pool));
    // Pods are admitted through the topology manager (policy none).
    auto tm = devmgr::topology::TopologyManager::Create({}, {});
    if (!tm.ok()) std::abort();
    (*tm)->AddHintProvider(&m);
    std::vector<double> wall;
    std::vector<double> cpu;
    for (int i = 0; i < iterations; ++i) {
      devmgr::pod::Pod pod;
      pod.uid = fmt::format("pod-{}", i);
      pod.name = pod.uid;
      pod.namespace_ = "default";
      devmgr::pod::Container c;
      c.name = "main";
      c.limits["vendor.com/gpu"] = request;
      pod.containers.push_back(c);
      active.push_back(pod.uid);
      double c0 = CpuMs();
      auto start = std::chrono::steady_clock::now();
      if (!(*tm)->Admit(pod).admitted) std::abort();
      auto end = std::chrono::steady_clock::now();
      cpu.push_back(CpuMs() - c0);
      wall.push_back(std::chrono::duration<double, std::milli>(end - start).count());
    }
    r = {Median(wall), Median(cpu)};
  }
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 5;
  std::printf("allocate_bench: one container per pod, median of %d allocations, fsync off\n",
              iterations);
  std::printf("%8s %8s %12s %12s %16s\n", "pool", "request", "wall ms", "CPU ms", "CPU us/1k devs");
  std::vector<double> per_device;
  for (int pool : {1000, 10000, 100000}) {
    for (int request : {1, pool / 10}) {
      Result r = Run(pool, request, iterations);
      double us_per_k = r.cpu_ms * 1000.0 / (pool / 1000.0);
      if (request == 1) per_device.push_back(us_per_k);
      std::printf("%8d %8d %12.2f %12.2f %16.1f\n", pool, request, r.wall_ms, r.cpu_ms, us_per_k);
    }
  }
  // Linear: the per-device cost at 100k is not above that at 10k by more
  // than noise (2x allows for cache effects of larger tables).
  bool linear = per_device[2] <= 2.0 * per_device[1];
  std::printf("scaling from 10k to 100k (request 1): %.1fx cost per device: %s\n",
              per_device[2] / per_device[1], linear ? "linear" : "WORSE THAN LINEAR");
  return 0;
}
