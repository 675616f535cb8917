// Scaling: in-process (fake plugin client), how update, allocation and its
// floor grow with devices and with entries.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checksum.h"
#include "checkpoint/file_store.h"
#include "checkpoint_fixture.h"
#include "common/clock.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "fmt/format.h"
#include "manager/fake_plugin_client.h"
#include "manager/manager_impl.h"
#include "perf/harness.h"
#include "topology/topology_manager.h"

namespace perf_bench {
namespace {

using devmgr::checkpoint::kCheckpointName;
using devmgr_bench::Uuid;

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

}  // namespace

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

}  // namespace perf_bench
