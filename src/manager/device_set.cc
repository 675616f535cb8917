#include "manager/device_set.h"

#include <algorithm>

namespace devmgr::manager {

DeviceSet DevicesOf(const DevicesPerNUMA& d) {
  DeviceSet out;
  if (!d.has_value()) return out;
  for (const auto& [node, ids] : *d) {
    if (!ids.has_value()) continue;
    for (const std::string& id : *ids) out.insert(id);
  }
  return out;
}

std::vector<std::string> SortedList(const DeviceSet& s) {
  std::vector<std::string> out(s.begin(), s.end());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> UnsortedList(const DeviceSet& s) {
  return std::vector<std::string>(s.begin(), s.end());
}

}  // namespace devmgr::manager
