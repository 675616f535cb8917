// NUMAInfo: the node's NUMA ids and distances as the topology manager sees
// them, with the default affinity and the mask comparisons its merge uses
// (Narrowest; Closest for prefer-closest-numa-nodes).
#ifndef DEVMGR_TOPOLOGY_NUMA_INFO_H_
#define DEVMGR_TOPOLOGY_NUMA_INFO_H_

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "topology/bitmask.h"
#include "topology/policy_options.h"

namespace devmgr::topology {

// One NUMA node as cadvisor describes it.
struct NumaNode {
  int id = 0;
  // Distances to every node, indexed by node id (the sysfs "distance" row).
  // nullopt: unknown.
  std::optional<std::vector<uint64_t>> distances;
};

struct NumaInfo {
  std::vector<int> nodes;
  // node id -> distance row (empty unless prefer-closest-numa-nodes).
  std::map<int, std::vector<uint64_t>> distances;

  // Every node.
  BitMask DefaultAffinityMask() const;
  // m1 when it IsNarrowerThan m2, else m2.
  BitMask Narrowest(const BitMask& m1, const BitMask& m2) const;
  // Different counts: Narrowest. Otherwise the smaller average distance
  // between the mask's nodes; on a tie, the numerically smaller mask.
  BitMask Closest(const BitMask& m1, const BitMask& m2) const;
  // The average of distances[a][b] over all ordered pairs (a, b) of the
  // mask's nodes, self-pairs included; 0 for an empty mask. A missing entry
  // counts as 0 (NewNumaInfo rejects such tables).
  double AverageDistance(const BitMask& m) const;
};

// NewNUMAInfo. With prefer-closest-numa-nodes every node needs distances:
// "error getting NUMA distances from cadvisor" otherwise. Also (devmgr's
// own checks; the kubelet cannot be given such a machine): ids must be
// 0..63 and distinct, and each distance row must cover the highest id.
absl::StatusOr<NumaInfo> NewNumaInfo(const std::vector<NumaNode>& topology,
                                     const PolicyOptions& opts);

}  // namespace devmgr::topology

#endif  // DEVMGR_TOPOLOGY_NUMA_INFO_H_
