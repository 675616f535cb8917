#include "manager/topology_filter.h"

#include <algorithm>
#include <map>
#include <vector>

namespace devmgr::manager {
namespace {

bool InMask(const topology::BitMask& mask, int64_t node) {
  return node >= 0 && node < 64 && mask.IsSet(static_cast<int>(node));
}

}  // namespace

AffinityBuckets FilterByAffinity(std::optional<topology::BitMask> affinity, bool has_alignment,
                                 const DeviceMap* devices, const DeviceSet& available) {
  AffinityBuckets out;
  if (!has_alignment || !affinity.has_value()) {
    out.no_affinity = available;
    return out;
  }
  const topology::BitMask mask = *affinity;
  auto nodes_of = [&](const std::string& id) -> const NumaNodes* {
    if (devices == nullptr) return nullptr;
    auto it = devices->find(id);
    if (it == devices->end() || it->second.numa_nodes.empty()) return nullptr;
    return &it->second.numa_nodes;
  };

  // NUMA node -> devices on it (-1: no topology).
  std::map<int64_t, DeviceSet> per_node;
  for (const std::string& d : available) {
    const NumaNodes* nodes = nodes_of(d);
    if (nodes == nullptr) {
      per_node[kNodeWithoutTopology].insert(d);
      continue;
    }
    for (int64_t n : *nodes) per_node[n].insert(d);
  }

  std::vector<int64_t> order;
  for (const auto& [n, set] : per_node) order.push_back(n);
  auto rank = [&](int64_t n) {
    if (InMask(mask, n)) return 0;
    if (n == kNodeWithoutTopology) return 2;
    return 1;
  };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    int ra = rank(a);
    int rb = rank(b);
    if (ra != rb) return ra < rb;
    return per_node[a].size() < per_node[b].size();
  });

  for (const std::string& d : available) {
    for (int64_t n : order) {
      if (!per_node[n].contains(d)) continue;
      if (n == kNodeWithoutTopology) {
        out.no_affinity.insert(d);
      } else if (InMask(mask, n)) {
        out.aligned.insert(d);
      } else {
        out.unaligned.insert(d);
      }
      break;
    }
  }
  return out;
}

}  // namespace devmgr::manager
