#include "topology/hint_provider.h"

namespace devmgr::topology {

ProviderHints StaticHintProvider::GetTopologyHints(const pod::Pod&,
                                                   const pod::Container& container) {
  auto it = spec_.per_container.find(container.name);
  return it != spec_.per_container.end() ? it->second : spec_.hints;
}

ProviderHints StaticHintProvider::GetPodTopologyHints(const pod::Pod&) {
  return spec_.pod.has_value() ? *spec_.pod : spec_.hints;
}

}  // namespace devmgr::topology
