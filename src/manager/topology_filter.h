// filterByAffinity: splits the available devices of a resource into those
// on NUMA nodes of the container's affinity, those on other nodes, and those
// without topology (devicemanager filterByAffinity).
#ifndef DEVMGR_MANAGER_TOPOLOGY_FILTER_H_
#define DEVMGR_MANAGER_TOPOLOGY_FILTER_H_

#include <optional>
#include <string>

#include "manager/device_set.h"
#include "manager/device_sets.h"
#include "topology/bitmask.h"

namespace devmgr::manager {

struct AffinityBuckets {
  DeviceSet aligned;
  DeviceSet unaligned;
  DeviceSet no_affinity;
};

// With no affinity, or when no device of the resource has topology, every
// available device is "no affinity". Otherwise each device goes to the first
// NUMA bucket containing it, buckets ordered: in-mask nodes by ascending
// size, then out-of-mask nodes by ascending size, then -1. (The kubelet's
// sort.Slice is unstable; ties here are broken by node id.) `devices` is
// allDevices[resource] (may be null).
AffinityBuckets FilterByAffinity(std::optional<topology::BitMask> affinity, bool has_alignment,
                                 const DeviceMap* devices, const DeviceSet& available);

}  // namespace devmgr::manager

#endif  // DEVMGR_MANAGER_TOPOLOGY_FILTER_H_
