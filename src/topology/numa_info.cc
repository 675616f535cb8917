#include "topology/numa_info.h"

#include <algorithm>
#include <set>

#include "fmt/format.h"

namespace devmgr::topology {

BitMask NumaInfo::DefaultAffinityMask() const {
  BitMask m;
  for (int n : nodes) {
    if (n >= 0 && n < 64) m.Or(BitMask(uint64_t{1} << n));
  }
  return m;
}

BitMask NumaInfo::Narrowest(const BitMask& m1, const BitMask& m2) const {
  return m1.IsNarrowerThan(m2) ? m1 : m2;
}

BitMask NumaInfo::Closest(const BitMask& m1, const BitMask& m2) const {
  if (m1.Count() != m2.Count()) return Narrowest(m1, m2);
  const double d1 = AverageDistance(m1);
  const double d2 = AverageDistance(m2);
  if (d1 == d2) return m1.IsLessThan(m2) ? m1 : m2;
  return d1 < d2 ? m1 : m2;
}

double NumaInfo::AverageDistance(const BitMask& m) const {
  if (m.Count() == 0) return 0;
  double sum = 0;
  double count = 0;
  const std::vector<int> bits = m.GetBits();
  for (int a : bits) {
    auto row = distances.find(a);
    for (int b : bits) {
      if (row != distances.end() && b < static_cast<int>(row->second.size())) {
        sum += static_cast<double>(row->second[b]);
      }
      count += 1;
    }
  }
  return sum / count;
}

absl::StatusOr<NumaInfo> NewNumaInfo(const std::vector<NumaNode>& topology,
                                     const PolicyOptions& opts) {
  NumaInfo info;
  std::set<int> seen;
  int max_id = -1;
  for (const NumaNode& n : topology) {
    if (n.id < 0 || n.id > 63) {
      return absl::InvalidArgumentError(
          fmt::format("NUMA node id {} is out of range (0..63)", n.id));
    }
    if (!seen.insert(n.id).second) {
      return absl::InvalidArgumentError(fmt::format("NUMA node id {} is listed twice", n.id));
    }
    max_id = std::max(max_id, n.id);
  }
  for (const NumaNode& n : topology) {
    info.nodes.push_back(n.id);
    std::vector<uint64_t> row;
    if (opts.prefer_closest_numa) {
      if (!n.distances.has_value()) {
        return absl::FailedPreconditionError("error getting NUMA distances from cadvisor");
      }
      row = *n.distances;
      if (static_cast<int>(row.size()) <= max_id) {
        return absl::InvalidArgumentError(fmt::format(
            "NUMA node {} has {} distances; the row is indexed by node id and needs {} entries",
            n.id, row.size(), max_id + 1));
      }
    }
    info.distances[n.id] = std::move(row);
  }
  return info;
}

}  // namespace devmgr::topology
