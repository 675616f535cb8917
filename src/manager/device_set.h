// DeviceSet and the per-NUMA device map: the value types the manager's
// state is built from. Device IDs are arbitrary byte strings (NUL and
// control bytes included), so they are always std::string.
#ifndef DEVMGR_MANAGER_DEVICE_SET_H_
#define DEVMGR_MANAGER_DEVICE_SET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "checkpoint/checkpoint.h"

namespace devmgr::manager {

// The kubelet's sets.Set[string]. Iteration order is unspecified, like Go's.
using DeviceSet = absl::flat_hash_set<std::string>;

// The kubelet's checkpoint.DevicesPerNUMA, with Go's nil-vs-empty kept so
// that a restored checkpoint is written back byte for byte.
using DevicesPerNUMA = checkpoint::DevicesPerNUMA;

// nodeWithoutTopology: the pseudo NUMA id of devices without topology.
inline constexpr int64_t kNodeWithoutTopology = -1;

// DevicesPerNUMA.Devices(): every ID under any NUMA key, as a set.
DeviceSet DevicesOf(const DevicesPerNUMA& d);

// sets.List / UnsortedList helpers.
std::vector<std::string> SortedList(const DeviceSet& s);
std::vector<std::string> UnsortedList(const DeviceSet& s);

}  // namespace devmgr::manager

#endif  // DEVMGR_MANAGER_DEVICE_SET_H_
