// The textual forms of the node's NUMA layout and the topology manager's
// options, shared by `devmgr serve` flags and scenario files:
//   NUMA nodes      "0,1" or "0,2" (ids 0..63, distinct)
//   distances       "10,20;20,10": one row per node, in node-list order,
//                   each row indexed by node id (sysfs "distance")
//   policy options  "prefer-closest-numa-nodes=true,max-allowable-numa-nodes=16"
#ifndef DEVMGR_TOPOLOGY_CONFIG_TEXT_H_
#define DEVMGR_TOPOLOGY_CONFIG_TEXT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "topology/numa_info.h"

namespace devmgr::topology {

absl::StatusOr<std::vector<int>> ParseNumaNodeList(const std::string& text);
absl::StatusOr<std::vector<std::vector<uint64_t>>> ParseNumaDistances(const std::string& text);
absl::StatusOr<std::map<std::string, std::string>> ParsePolicyOptions(const std::string& text);

// The cadvisor-like node list. `distances` empty: unknown; otherwise exactly
// one row per node.
absl::StatusOr<std::vector<NumaNode>> MakeNumaTopology(
    const std::vector<int>& ids, const std::vector<std::vector<uint64_t>>& distances);

}  // namespace devmgr::topology

#endif  // DEVMGR_TOPOLOGY_CONFIG_TEXT_H_
