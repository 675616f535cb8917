#include "manager/topology_filter.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::manager {
namespace {

using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

DeviceMap Map(std::vector<std::pair<std::string, std::vector<int64_t>>> devs) {
  DeviceMap m;
  for (auto& [id, nodes] : devs) {
    StoredDevice d;
    d.health = "Healthy";
    d.healthy = true;
    d.numa_nodes.assign(nodes.begin(), nodes.end());
    m[id] = d;
  }
  return m;
}

TEST(TopologyFilterTest, NoAffinityOrNoAlignmentPutsEverythingInNoAffinity) {
  DeviceMap m = Map({{"a", {0}}, {"b", {}}});
  DeviceSet avail = {"a", "b"};
  AffinityBuckets b = FilterByAffinity(std::nullopt, true, &m, avail);
  EXPECT_THAT(b.no_affinity, UnorderedElementsAre("a", "b"));
  b = FilterByAffinity(topology::BitMask(1), false, &m, avail);
  EXPECT_THAT(b.no_affinity, UnorderedElementsAre("a", "b"));
  EXPECT_THAT(b.aligned, IsEmpty());
}

TEST(TopologyFilterTest, BucketsByMaskAndSpanningDevicesAreAligned) {
  DeviceMap m = Map({{"a", {0}}, {"b", {1}}, {"c", {0, 1}}, {"d", {}}, {"e", {2}}});
  DeviceSet avail = {"a", "b", "c", "d", "e"};
  AffinityBuckets b = FilterByAffinity(topology::BitMask(1), true, &m, avail);  // node 0
  EXPECT_THAT(b.aligned, UnorderedElementsAre("a", "c"));
  EXPECT_THAT(b.unaligned, UnorderedElementsAre("b", "e"));
  EXPECT_THAT(b.no_affinity, UnorderedElementsAre("d"));
}

TEST(TopologyFilterTest, OnlyAvailableDevicesAreConsidered) {
  DeviceMap m = Map({{"a", {0}}, {"b", {0}}});
  AffinityBuckets b = FilterByAffinity(topology::BitMask(1), true, &m, DeviceSet{"b"});
  EXPECT_THAT(b.aligned, UnorderedElementsAre("b"));
}

}  // namespace
}  // namespace devmgr::manager
