#include "topology/topology_hint.h"

#include "fmt/format.h"

namespace devmgr::topology {

std::string TopologyHint::String() const {
  return fmt::format("{{{} {}}}", numa_node_affinity ? numa_node_affinity->String() : "<nil>",
                     preferred ? "true" : "false");
}

std::string HintListString(const std::optional<std::vector<TopologyHint>>& hints) {
  if (!hints.has_value()) return "<nil>";
  std::string out = "[";
  for (size_t i = 0; i < hints->size(); ++i) {
    if (i > 0) out += " ";
    out += (*hints)[i].String();
  }
  return out + "]";
}

}  // namespace devmgr::topology
