// The device manager as a topology-manager hint provider: the types of its
// TopologyHints and the mask iteration they are generated from. The methods
// themselves (GetTopologyHints, GetPodTopologyHints) are on Manager and
// implemented in topology_hints.cc. See shared/kubelet-device-manager.md
// section 9.1.
#ifndef DEVMGR_MANAGER_TOPOLOGY_HINTS_H_
#define DEVMGR_MANAGER_TOPOLOGY_HINTS_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "manager/topology_affinity.h"

namespace devmgr::manager {

// The kubelet's topologymanager.TopologyHint as the device manager produces
// it. Device hints always carry a mask; nullopt (a nil mask) is allowed so
// that the type can describe every hint.
struct TopologyHint {
  std::optional<NumaMask> numa_node_affinity;
  bool preferred = false;
  bool operator==(const TopologyHint&) const = default;
};

// resource -> hints. A nullopt list is Go's nil ("no topology preference",
// the resource has no device with NUMA nodes); an empty list means that no
// NUMA placement can satisfy the request. The topology manager treats the
// two differently (kubernetes#112234). Ordered by resource name (one
// instance of Go's map order).
using TopologyHints = std::map<std::string, std::optional<std::vector<TopologyHint>>>;

// bitmask.IterateBitMasks: calls `fn` with every non-empty subset of
// `nodes`, by size 1..n, and within one size as the lexicographic
// combinations of the list order. Ids outside 0..63 cannot be in a mask and
// are left out of the masks they would belong to.
void IterateNumaMasks(const std::vector<int>& nodes, const std::function<void(NumaMask)>& fn);

// The number of bits set.
int MaskCount(NumaMask mask);

}  // namespace devmgr::manager

#endif  // DEVMGR_MANAGER_TOPOLOGY_HINTS_H_
