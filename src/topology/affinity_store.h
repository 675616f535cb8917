// TopologyAffinityStore: where a resource manager reads the NUMA affinity
// the topology manager chose for a container (the kubelet's
// topologymanager.Store.GetAffinity). The device manager reads it in
// filterByAffinity. Under the "none" policy there is never an affinity.
#ifndef DEVMGR_TOPOLOGY_AFFINITY_STORE_H_
#define DEVMGR_TOPOLOGY_AFFINITY_STORE_H_

#include <optional>
#include <string>

#include "topology/bitmask.h"

namespace devmgr::topology {

// Implementations must be thread-safe and must not call into the resource
// managers (the device manager calls GetAffinity with its own lock held).
class TopologyAffinityStore {
 public:
  virtual ~TopologyAffinityStore() = default;
  // The stored hint's NUMANodeAffinity; nullopt is a nil affinity (policy
  // none, no hint stored, or single-numa-node's "any").
  virtual std::optional<BitMask> GetAffinity(const std::string& pod_uid,
                                             const std::string& container_name) const = 0;
};

// Never an affinity: what a store under the "none" policy answers.
class NoAffinityStore final : public TopologyAffinityStore {
 public:
  std::optional<BitMask> GetAffinity(const std::string&, const std::string&) const override {
    return std::nullopt;
  }
};

}  // namespace devmgr::topology

#endif  // DEVMGR_TOPOLOGY_AFFINITY_STORE_H_
