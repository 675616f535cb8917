// The checkpoint the checkpoint benchmarks read: `entries` GPU pods, one
// NVIDIA-style device each (UUID-like IDs, a realistic AllocResp), split over
// two NUMA nodes. Shared by checkpoint_bench.cc and perf_bench.cc so that both
// measure the same bytes.
#ifndef DEVMGR_BENCH_CHECKPOINT_FIXTURE_H_
#define DEVMGR_BENCH_CHECKPOINT_FIXTURE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "fmt/format.h"

namespace devmgr_bench {

// A UUID-shaped, well-spread ID for n (pod UIDs and GPU UUIDs).
inline std::string Uuid(uint64_t n) {
  return fmt::format("{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}", n * 2654435761u & 0xffffffffu,
                     n & 0xffff, (n >> 4) & 0xfff, (n >> 8) & 0xfff,
                     n * 11400714819323198485ull & 0xffffffffffffull);
}

// A realistic GPU AllocResp: env, driver mounts, three device nodes.
inline std::string GpuAllocResp(const std::string& dev) {
  v1beta1::ContainerAllocateResponse r;
  (*r.mutable_envs())["NVIDIA_VISIBLE_DEVICES"] = dev;
  auto* m = r.add_mounts();
  m->set_container_path("/usr/local/nvidia/lib64");
  m->set_host_path("/home/kubernetes/bin/nvidia/lib64");
  m->set_read_only(true);
  for (const char* node : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0"}) {
    auto* d = r.add_devices();
    d->set_container_path(node);
    d->set_host_path(node);
    d->set_permissions("rw");
  }
  return r.SerializeAsString();
}

inline std::string EntriesFile(int entries) {
  using namespace devmgr::checkpoint;
  CheckpointData data;
  data.pod_device_entries.emplace();
  std::vector<std::string> registered;
  for (int i = 0; i < entries; ++i) {
    const std::string dev = fmt::format("GPU-{}", Uuid(1000000 + i));
    registered.push_back(dev);
    PodDevicesEntry e;
    e.pod_uid = Uuid(i);
    e.container_name = "app";
    e.resource_name = "nvidia.com/gpu";
    e.device_ids = std::map<int64_t, DeviceList>{{i % 2, std::vector<std::string>{dev}}};
    e.alloc_resp = GpuAllocResp(dev);
    data.pod_device_entries->push_back(std::move(e));
  }
  data.registered_devices = std::map<std::string, DeviceList>{{"nvidia.com/gpu", registered}};
  return Encode(MakeV2(std::move(data)));
}

}  // namespace devmgr_bench

#endif  // DEVMGR_BENCH_CHECKPOINT_FIXTURE_H_
