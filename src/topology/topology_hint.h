// TopologyHint and the hints a provider returns (the kubelet's
// topologymanager.TopologyHint and map[string][]TopologyHint).
#ifndef DEVMGR_TOPOLOGY_TOPOLOGY_HINT_H_
#define DEVMGR_TOPOLOGY_TOPOLOGY_HINT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topology/bitmask.h"

namespace devmgr::topology {

struct TopologyHint {
  // nullopt: a nil mask ("any NUMA node").
  std::optional<BitMask> numa_node_affinity;
  bool preferred = false;

  // Go's "{%v %v}": "{01 true}", "{<nil> false}".
  std::string String() const;
  bool operator==(const TopologyHint&) const = default;
};

// One provider's answer: resource -> hints. A nullopt list is Go's nil
// ("no preference"); an empty list is "no possible affinity". An empty map
// means the provider has no preference for any resource.
using ProviderHints = std::map<std::string, std::optional<std::vector<TopologyHint>>>;

// "[{01 true} {11 false}]", "<nil>" for a nil list ("[]" for an empty one).
std::string HintListString(const std::optional<std::vector<TopologyHint>>& hints);

}  // namespace devmgr::topology

#endif  // DEVMGR_TOPOLOGY_TOPOLOGY_HINT_H_
