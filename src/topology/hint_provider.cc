#include "topology/hint_provider.h"

namespace devmgr::topology {

ProviderHints FromManagerHints(const manager::TopologyHints& hints) {
  ProviderHints out;
  for (const auto& [resource, list] : hints) {
    if (!list.has_value()) {
      out[resource] = std::nullopt;
      continue;
    }
    std::vector<TopologyHint> converted;
    converted.reserve(list->size());
    for (const manager::TopologyHint& h : *list) {
      TopologyHint t;
      if (h.numa_node_affinity.has_value()) t.numa_node_affinity = BitMask(*h.numa_node_affinity);
      t.preferred = h.preferred;
      converted.push_back(t);
    }
    out[resource] = std::move(converted);
  }
  return out;
}

ProviderHints DeviceManagerHintProvider::GetTopologyHints(const pod::Pod& pod,
                                                          const pod::Container& container) {
  return FromManagerHints(m_->GetTopologyHints(pod, container));
}

ProviderHints DeviceManagerHintProvider::GetPodTopologyHints(const pod::Pod& pod) {
  return FromManagerHints(m_->GetPodTopologyHints(pod));
}

ProviderHints StaticHintProvider::GetTopologyHints(const pod::Pod&,
                                                   const pod::Container& container) {
  auto it = spec_.per_container.find(container.name);
  return it != spec_.per_container.end() ? it->second : spec_.hints;
}

ProviderHints StaticHintProvider::GetPodTopologyHints(const pod::Pod&) {
  return spec_.pod.has_value() ? *spec_.pod : spec_.hints;
}

}  // namespace devmgr::topology
