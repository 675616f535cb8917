// TopologyAffinityStore: where the device manager reads the NUMA affinity
// the topology manager chose for a container (the kubelet's
// topologymanager.Store.GetAffinity). Under the "none" policy there is never
// an affinity, which is the default here.
#ifndef DEVMGR_MANAGER_TOPOLOGY_AFFINITY_H_
#define DEVMGR_MANAGER_TOPOLOGY_AFFINITY_H_

#include <cstdint>
#include <optional>
#include <string>

namespace devmgr::manager {

// A NUMA node bitmask as the kubelet's bitmask.BitMask (bit i = node i).
using NumaMask = uint64_t;

// Implementations must be thread-safe and must not call into the manager.
class TopologyAffinityStore {
 public:
  virtual ~TopologyAffinityStore() = default;
  // The hint's NUMANodeAffinity; nullopt is a nil affinity (policy none, no
  // hint stored, or single-numa-node's "any").
  virtual std::optional<NumaMask> GetAffinity(const std::string& pod_uid,
                                              const std::string& container_name) const = 0;
};

// The "none" policy: never an affinity.
class NoAffinityStore final : public TopologyAffinityStore {
 public:
  std::optional<NumaMask> GetAffinity(const std::string&, const std::string&) const override {
    return std::nullopt;
  }
};

}  // namespace devmgr::manager

#endif  // DEVMGR_MANAGER_TOPOLOGY_AFFINITY_H_
