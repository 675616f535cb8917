// The device manager's topology hints (devicemanager topology_hints.go): GetTopologyHints,
// GetPodTopologyHints and the mask order.
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/manager_testutil.h"

namespace devmgr::topology {
// Matcher output for the hints below.
void PrintTo(const TopologyHint& h, std::ostream* os) {
  *os << "{" << (h.numa_node_affinity ? std::to_string(h.numa_node_affinity->bits()) : "nil") << " "
      << (h.preferred ? "true" : "false") << "}";
}
}  // namespace devmgr::topology

namespace devmgr::manager {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace topology_hints_test {

using testing::Ctr;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::MakePod;
using topology::TopologyHint;

constexpr char kGpu[] = "vendor.com/gpu";
constexpr char kNic[] = "vendor.com/nic";

// A device as the plugin sends it: no topology at all, a topology with no
// nodes, or a topology with these nodes.
struct TDev {
  std::string id;
  std::optional<std::vector<int64_t>> numa;  // nullopt: no Topology message
  std::string health = "Healthy";
};

v1beta1::ListAndWatchResponse List(const std::vector<TDev>& devs) {
  v1beta1::ListAndWatchResponse resp;
  for (const TDev& d : devs) {
    v1beta1::Device* x = resp.add_devices();
    x->set_id(d.id);
    x->set_health(d.health);
    if (d.numa.has_value()) {
      v1beta1::TopologyInfo* t = x->mutable_topology();
      for (int64_t n : *d.numa) t->add_nodes()->set_id(n);
    }
  }
  return resp;
}

TopologyHint H(uint64_t m, bool preferred) { return TopologyHint{topology::BitMask(m), preferred}; }

class FixedAffinity final : public topology::TopologyAffinityStore {
 public:
  explicit FixedAffinity(uint64_t m) : m_(m) {}
  std::optional<topology::BitMask> GetAffinity(const std::string&,
                                               const std::string&) const override {
    return m_;
  }

 private:
  topology::BitMask m_;
};

class TopologyHintsTest : public testing::ManagerFixture {
 protected:
  void SetUpManager(std::vector<int> numa_nodes,
                    const topology::TopologyAffinityStore* store = nullptr,
                    // 1.35: hints over every NUMA node (1.36+ is DeviceNumaOnly()).
                    Profile profile = ProfileForMinor(35)) {
    ManagerOptions o;
    o.profile = profile;
    o.plugin_dir = dir_.path();
    o.clock = &clock_;
    o.fsync = false;
    o.numa_nodes = std::move(numa_nodes);
    o.affinity_store = store;
    m_ = std::make_unique<ManagerImpl>(o);
    ASSERT_OK(m_->Start(StartOpts()));
  }
  void AddResource(const std::string& r, const std::vector<TDev>& devs) {
    auto c = Connect(*m_, r);
    m_->PluginListAndWatchReceiver(r, c.get(), List(devs));
    clients_.push_back(c);
  }
  // 2 devices on node 0 (a0, a1) and 2 on node 1 (b0, b1).
  void TwoByTwo() {
    SetUpManager({0, 1});
    AddResource(kGpu, {{"a0", {{0}}}, {"a1", {{0}}}, {"b0", {{1}}}, {"b1", {{1}}}});
  }
  std::optional<std::vector<TopologyHint>> Hints(int request) {
    auto pod = MakePod("p", {Ctr("c", {{kGpu, request}})});
    topology::ProviderHints h = m_->GetTopologyHints(pod, pod.containers[0]);
    EXPECT_TRUE(h.contains(kGpu));
    return h[kGpu];
  }

  std::unique_ptr<ManagerImpl> m_;
  std::vector<std::shared_ptr<FakePluginClient>> clients_;
};

TEST_F(TopologyHintsTest, OnePerNodeIsPreferredBothNodesIsNot) {
  TwoByTwo();
  EXPECT_THAT(*Hints(1), ElementsAre(H(0b01, true), H(0b10, true), H(0b11, false)));
  EXPECT_THAT(*Hints(2), ElementsAre(H(0b01, true), H(0b10, true), H(0b11, false)));
}

TEST_F(TopologyHintsTest, ARequestSpanningTwoNodesPrefersBoth) {
  TwoByTwo();
  EXPECT_THAT(*Hints(3), ElementsAre(H(0b11, true)));
  EXPECT_THAT(*Hints(4), ElementsAre(H(0b11, true)));
}

TEST_F(TopologyHintsTest, RequestLargerThanTheNodeGivesEmptyNotNil) {
  TwoByTwo();
  auto h = Hints(5);
  ASSERT_TRUE(h.has_value());
  EXPECT_THAT(*h, IsEmpty());
}

TEST_F(TopologyHintsTest, RequestOfZeroGivesEveryMask) {
  TwoByTwo();
  EXPECT_THAT(*Hints(0), ElementsAre(H(0b01, true), H(0b10, true), H(0b11, false)));
}

// 1.36+ (kubernetes#138244, Profile::topology_hints_device_numa_only).
Profile DeviceNumaOnly() {
  Profile p = ProfileForMinor(36);
  EXPECT_TRUE(p.topology_hints_device_numa_only);
  return p;
}

TEST_F(TopologyHintsTest, BeforeDeviceNumaOnlyMasksWithDevicelessNodesAreHints) {
  SetUpManager({0, 1});
  AddResource(kGpu, {{"a0", {{0}}}, {"a1", {{0}}}});
  EXPECT_THAT(*Hints(1), ElementsAre(H(0b01, true), H(0b11, false)));
}

TEST_F(TopologyHintsTest, DeviceNumaOnlyEnumeratesTheNodesWithDevices) {
  SetUpManager({0, 1}, nullptr, DeviceNumaOnly());
  AddResource(kGpu, {{"a0", {{0}}}, {"a1", {{0}}}});
  EXPECT_THAT(*Hints(1), ElementsAre(H(0b01, true)));
  EXPECT_THAT(*Hints(2), ElementsAre(H(0b01, true)));
}

TEST_F(TopologyHintsTest, DeviceNumaOnlyKeepsMachineOrderAndSkipsNodesBetween) {
  SetUpManager({0, 1, 2, 3}, nullptr, DeviceNumaOnly());
  AddResource(kGpu, {{"b", {{1}}}, {"d", {{3}}}});
  EXPECT_THAT(*Hints(1), ElementsAre(H(0b0010, true), H(0b1000, true), H(0b1010, false)));
  EXPECT_THAT(*Hints(2), ElementsAre(H(0b1010, true)));
}

TEST_F(TopologyHintsTest, DeviceNumaOnlyCountsUnhealthyDevicesNodes) {
  // allDevices decides, whatever the health: node 1 stays a candidate.
  SetUpManager({0, 1}, nullptr, DeviceNumaOnly());
  AddResource(kGpu, {{"a0", {{0}}}, {"b0", {{1}}, "Unhealthy"}});
  EXPECT_THAT(*Hints(1), ElementsAre(H(0b01, true), H(0b11, false)));
}

TEST_F(TopologyHintsTest, DeviceNumaOnlyFallsBackToEveryNodeWithoutAKnownDeviceNode) {
  // Node 5 is not the machine's: dropped, which leaves no candidate, so
  // every machine node is enumerated again (as before 1.36).
  SetUpManager({0, 1}, nullptr, DeviceNumaOnly());
  AddResource(kGpu, {{"x", {{5}}}, {"y", std::nullopt}});
  EXPECT_THAT(*Hints(0), ElementsAre(H(0b01, true), H(0b10, true), H(0b11, false)));
  EXPECT_THAT(*Hints(1), IsEmpty());
}

TEST_F(TopologyHintsTest, DevicesWithoutTopologyGiveNil) {
  SetUpManager({0, 1});
  // An empty node list counts as no topology for alignment.
  AddResource(kGpu, {{"a", std::nullopt}, {"b", std::vector<int64_t>{}}});
  auto h = Hints(1);
  EXPECT_FALSE(h.has_value());
}

TEST_F(TopologyHintsTest, DevicesWithoutTopologyNeverCountForAMask) {
  SetUpManager({0, 1});
  AddResource(kGpu, {{"a0", {{0}}}, {"x", std::nullopt}, {"y", std::vector<int64_t>{}}});
  // 3 free devices, but only one is on a node.
  EXPECT_THAT(*Hints(1), ElementsAre(H(0b01, true), H(0b11, false)));
  EXPECT_THAT(*Hints(2), IsEmpty());
  // Available (3) >= request (3), yet no mask has 3 devices: empty.
  EXPECT_THAT(*Hints(3), IsEmpty());
}

TEST_F(TopologyHintsTest, DeviceSpanningTwoNodesCountsForBoth) {
  SetUpManager({0, 1});
  AddResource(kGpu, {{"ab", {{0, 1}}}, {"b", {{1}}}});
  EXPECT_THAT(*Hints(1), ElementsAre(H(0b01, true), H(0b10, true), H(0b11, false)));
  // Node 1 alone holds both devices.
  EXPECT_THAT(*Hints(2), ElementsAre(H(0b10, true), H(0b11, false)));
}

TEST_F(TopologyHintsTest, FragmentedFreePoolYieldsOnlyNonPreferredHints) {
  SetUpManager({0, 1});
  // Unhealthy devices count in the inventory but are not free.
  AddResource(
      kGpu, {{"a0", {{0}}}, {"a1", {{0}}, "Unhealthy"}, {"b0", {{1}}}, {"b1", {{1}}, "Unhealthy"}});
  // The preferred size is 1 (one node of the inventory holds 2), but no
  // single node has 2 free devices.
  EXPECT_THAT(*Hints(2), ElementsAre(H(0b11, false)));
}

TEST_F(TopologyHintsTest, AllocatedDevicesLeaveTheFreePool) {
  FixedAffinity node1(0b10);
  SetUpManager({0, 1}, &node1);
  AddResource(kGpu, {{"a0", {{0}}}, {"a1", {{0}}}, {"b0", {{1}}}, {"b1", {{1}}}});
  SetActive({"other", "p"});
  auto other = MakePod("other", {Ctr("c", {{kGpu, 2}})});
  ASSERT_OK(m_->Allocate(other, other.containers[0]));
  // Node 1 is taken: only node 0 (and both nodes) remain.
  EXPECT_THAT(*Hints(2), ElementsAre(H(0b01, true), H(0b11, false)));
  EXPECT_THAT(*Hints(3), IsEmpty());
}

TEST_F(TopologyHintsTest, AlreadyAllocatedContainerRegeneratesFromItsDevices) {
  FixedAffinity node1(0b10);
  SetUpManager({0, 1}, &node1);
  AddResource(kGpu, {{"a0", {{0}}}, {"a1", {{0}}}, {"b0", {{1}}}, {"b1", {{1}}}});
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 2}})});
  ASSERT_OK(m_->Allocate(pod, pod.containers[0]));
  // Regenerated from {b0, b1}: only masks containing node 1.
  topology::ProviderHints h = m_->GetTopologyHints(pod, pod.containers[0]);
  EXPECT_THAT(*h[kGpu], ElementsAre(H(0b10, true), H(0b11, false)));
  // A different request than what is allocated: empty.
  auto changed = MakePod("p", {Ctr("c", {{kGpu, 1}})});
  h = m_->GetTopologyHints(changed, changed.containers[0]);
  ASSERT_TRUE(h[kGpu].has_value());
  EXPECT_THAT(*h[kGpu], IsEmpty());
}

TEST_F(TopologyHintsTest, ReusableDevicesRestrictTheMasks) {
  FixedAffinity node1(0b10);
  SetUpManager({0, 1}, &node1);
  AddResource(kGpu, {{"a0", {{0}}}, {"a1", {{0}}}, {"b0", {{1}}}, {"b1", {{1}}}});
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("app", {{kGpu, 2}})}, {Ctr("init", {{kGpu, 2}})});
  ASSERT_OK(m_->Allocate(pod, pod.init_containers[0]));
  // The init container's {b0, b1} are reusable: every mask must include
  // node 1, and they count towards the request although they are in use.
  topology::ProviderHints h = m_->GetTopologyHints(pod, pod.containers[0]);
  EXPECT_THAT(*h[kGpu], ElementsAre(H(0b10, true), H(0b11, false)));
  // Three devices: the two reusable ones plus one free on node 0.
  auto bigger = MakePod("p", {Ctr("app", {{kGpu, 3}})}, {Ctr("init", {{kGpu, 2}})});
  h = m_->GetTopologyHints(bigger, bigger.containers[0]);
  // Three devices need both nodes of the inventory: preferred.
  EXPECT_THAT(*h[kGpu], ElementsAre(H(0b11, true)));
}

TEST_F(TopologyHintsTest, ReusableDeviceWithEmptyTopologyDiscardsEveryMask) {
  FixedAffinity node0(0b01);
  SetUpManager({0, 1}, &node0);
  AddResource(kGpu, {{"a0", {{0}}}, {"e", std::vector<int64_t>{}}, {"n", std::nullopt}});
  SetActive({"p"});
  // The init container gets a0 (aligned) and then a device without a node.
  auto pod = MakePod("p", {Ctr("app", {{kGpu, 1}})}, {Ctr("init", {{kGpu, 3}})});
  ASSERT_OK(m_->Allocate(pod, pod.init_containers[0]));
  // Reusable {a0, e, n}: e has a topology with no nodes, which intersects
  // no mask, so every mask is discarded; n (no topology) would be skipped.
  topology::ProviderHints h = m_->GetTopologyHints(pod, pod.containers[0]);
  ASSERT_TRUE(h[kGpu].has_value());
  EXPECT_THAT(*h[kGpu], IsEmpty());
}

TEST_F(TopologyHintsTest, ReusableDeviceWithoutTopologyIsSkipped) {
  FixedAffinity node0(0b01);
  SetUpManager({0, 1}, &node0);
  AddResource(kGpu, {{"a0", {{0}}}, {"a1", {{0}}}, {"n", std::nullopt}});
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("app", {{kGpu, 1}})}, {Ctr("init", {{kGpu, 3}})});
  ASSERT_OK(m_->Allocate(pod, pod.init_containers[0]));
  // Reusable {a0, a1, n}: n has no topology and is not counted; a0 and a1
  // rule out the masks without node 0.
  topology::ProviderHints h = m_->GetTopologyHints(pod, pod.containers[0]);
  EXPECT_THAT(*h[kGpu], ElementsAre(H(0b01, true), H(0b11, false)));
  // Three: n is not counted, so no mask qualifies.
  auto three = MakePod("p", {Ctr("app", {{kGpu, 3}})}, {Ctr("init", {{kGpu, 3}})});
  h = m_->GetTopologyHints(three, three.containers[0]);
  EXPECT_THAT(*h[kGpu], IsEmpty());
}

TEST_F(TopologyHintsTest, ReusableDevicesOnBothNodesNeedBoth) {
  FixedAffinity node0(0b01);
  SetUpManager({0, 1}, &node0);
  AddResource(kGpu, {{"a0", {{0}}}, {"b0", {{1}}}});
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("app", {{kGpu, 2}})}, {Ctr("init", {{kGpu, 2}})});
  ASSERT_OK(m_->Allocate(pod, pod.init_containers[0]));
  topology::ProviderHints h = m_->GetTopologyHints(pod, pod.containers[0]);
  // Only the mask with both nodes survives; it is also the narrowest that
  // the inventory allows for 2, so it is preferred.
  EXPECT_THAT(*h[kGpu], ElementsAre(H(0b11, true)));
}

TEST_F(TopologyHintsTest, NonContiguousNodeIds) {
  SetUpManager({0, 2});
  AddResource(kGpu, {{"a", {{0}}}, {"c", {{2}}}});
  EXPECT_THAT(*Hints(1), ElementsAre(H(0b001, true), H(0b100, true), H(0b101, false)));
  EXPECT_THAT(*Hints(2), ElementsAre(H(0b101, true)));
}

TEST_F(TopologyHintsTest, OnlyDevicePluginResourcesAndZeroQuantities) {
  TwoByTwo();
  AddResource(kNic, {{"n0", std::nullopt}});
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 0}, {kNic, 1}, {"cpu", 2}})});
  topology::ProviderHints h = m_->GetTopologyHints(pod, pod.containers[0]);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_THAT(*h[kGpu], ElementsAre(H(0b01, true), H(0b10, true), H(0b11, false)));
  EXPECT_FALSE(h[kNic].has_value());
  EXPECT_TRUE(m_->GetTopologyHints(pod, Ctr("none", {})).empty());
}

TEST_F(TopologyHintsTest, NoNumaNodesGivesEmptyHints) {
  SetUpManager({});
  AddResource(kGpu, {{"a", {{0}}}});
  auto h = Hints(1);
  ASSERT_TRUE(h.has_value());
  EXPECT_THAT(*h, IsEmpty());
}

TEST_F(TopologyHintsTest, PodHintsUsePodLimitsAndIgnoreReuse) {
  TwoByTwo();
  // Pod limit: max(1 + 1, init 2) = 2.
  auto pod =
      MakePod("p", {Ctr("a", {{kGpu, 1}}), Ctr("b", {{kGpu, 1}})}, {Ctr("init", {{kGpu, 2}})});
  topology::ProviderHints h = m_->GetPodTopologyHints(pod);
  EXPECT_THAT(*h[kGpu], ElementsAre(H(0b01, true), H(0b10, true), H(0b11, false)));
  // Pod limit 3: both nodes.
  auto big = MakePod("p", {Ctr("a", {{kGpu, 2}}), Ctr("b", {{kGpu, 1}})});
  h = m_->GetPodTopologyHints(big);
  EXPECT_THAT(*h[kGpu], ElementsAre(H(0b11, true)));
  auto huge = MakePod("p", {Ctr("a", {{kGpu, 4}}), Ctr("b", {{kGpu, 1}})});
  h = m_->GetPodTopologyHints(huge);
  ASSERT_TRUE(h[kGpu].has_value());
  EXPECT_THAT(*h[kGpu], IsEmpty());
}

TEST_F(TopologyHintsTest, PodHintsRegenerateFromThePodsDevices) {
  FixedAffinity node1(0b10);
  SetUpManager({0, 1}, &node1);
  AddResource(kGpu, {{"a0", {{0}}}, {"a1", {{0}}}, {"b0", {{1}}}, {"b1", {{1}}}});
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("a", {{kGpu, 1}}), Ctr("b", {{kGpu, 1}})});
  ASSERT_OK(m_->Allocate(pod, pod.containers[0]));
  ASSERT_OK(m_->Allocate(pod, pod.containers[1]));
  topology::ProviderHints h = m_->GetPodTopologyHints(pod);
  EXPECT_THAT(*h[kGpu], ElementsAre(H(0b10, true), H(0b11, false)));
  auto more = MakePod("p", {Ctr("a", {{kGpu, 2}}), Ctr("b", {{kGpu, 1}})});
  h = m_->GetPodTopologyHints(more);
  EXPECT_THAT(*h[kGpu], IsEmpty());
}

TEST_F(TopologyHintsTest, HintsRecordThePendingAdmissionPodIn131) {
  for (const char* version : {"1.31", "1.32"}) {
    SCOPED_TRACE(version);
    ManagerOptions o;
    o.plugin_dir = dir_.path();
    o.clock = &clock_;
    o.fsync = false;
    o.numa_nodes = {0, 1};
    o.profile = testing::ProfileFor(version);
    m_ = std::make_unique<ManagerImpl>(o);
    ASSERT_OK(m_->Start(StartOpts()));
    AddResource(kGpu, {{"a0", {{0}}}, {"a1", {{0}}}, {"b0", {{1}}}, {"b1", {{1}}}});
    SetActive({});
    // Pod x is allocated while being admitted (1.31: it is the pending pod
    // and survives its own garbage collection).
    auto x = MakePod("x", {Ctr("c", {{kGpu, 1}})});
    ASSERT_OK(m_->Allocate(x, x.containers[0]));
    EXPECT_EQ(m_->AllocatedDevicesForTest()[kGpu].size(), 1u);
    // Hints for another inactive pod: in 1.31 it becomes the pending pod,
    // so x (not active) is collected in both profiles and all 4 are free.
    auto h = Hints(4);
    EXPECT_THAT(*h, ElementsAre(H(0b11, true)));
    m_->Stop();
    clients_.clear();
    std::filesystem::remove(dir_.File("kubelet_internal_checkpoint"));
  }
}

TEST_F(TopologyHintsTest, EightNodesEnumerateEveryMask) {
  SetUpManager({0, 1, 2, 3, 4, 5, 6, 7});
  std::vector<TDev> devs;
  for (int n = 0; n < 8; ++n) devs.push_back({"d" + std::to_string(n), {{n}}});
  AddResource(kGpu, devs);
  auto h = Hints(1);
  ASSERT_EQ(h->size(), 255u);
  int preferred = 0;
  for (const TopologyHint& t : *h) preferred += t.preferred;
  EXPECT_EQ(preferred, 8);
  EXPECT_EQ(h->front(), H(0b1, true));
  EXPECT_EQ(h->back(), H(0xff, false));
}

}  // namespace topology_hints_test
}  // namespace devmgr::manager
