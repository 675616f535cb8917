// The merge of section 9.2 as tables: filterProvidersHints, permutations,
// mergePermutation, the comparison rules and the three merging policies.
#include "topology/policy.h"

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::topology {
namespace {

using ::testing::ElementsAre;

TopologyHint H(uint64_t m, bool preferred) { return TopologyHint{BitMask(m), preferred}; }
TopologyHint Nil(bool preferred) { return TopologyHint{std::nullopt, preferred}; }
using List = std::vector<TopologyHint>;

NumaInfo Nodes(std::vector<int> ids) {
  std::vector<NumaNode> t;
  for (int id : ids) t.push_back(NumaNode{id, std::nullopt});
  return *NewNumaInfo(t, PolicyOptions{});
}

TEST(FilterProvidersHintsTest, NilEmptyAndNoResources) {
  std::vector<ProviderHints> providers = {
      {},  // no resources
      {{"a", std::nullopt}, {"b", List{}}, {"c", List{H(1, true)}}},
  };
  auto dims = FilterProvidersHints(providers);
  ASSERT_EQ(dims.size(), 4u);
  EXPECT_THAT(dims[0], ElementsAre(Nil(true)));
  EXPECT_THAT(dims[1], ElementsAre(Nil(true)));   // nil list: don't care
  EXPECT_THAT(dims[2], ElementsAre(Nil(false)));  // empty list: impossible
  EXPECT_THAT(dims[3], ElementsAre(H(1, true)));
}

TEST(FilterSingleNumaHintsTest, KeepsPreferredNilOrSingleNode) {
  auto dims = FilterSingleNumaHints(
      {{H(0b01, true), H(0b11, true), H(0b10, false), Nil(true), Nil(false)}, {H(0b11, true)}});
  EXPECT_THAT(dims[0], ElementsAre(H(0b01, true), Nil(true)));
  EXPECT_TRUE(dims[1].empty());
}

TEST(IterateAllProviderTopologyHintsTest, FirstDimensionVariesSlowest) {
  std::vector<std::string> got;
  IterateAllProviderTopologyHints(
      {{H(1, true), H(2, true)}, {H(4, false), H(8, false)}},
      [&](const List& p) { got.push_back(p[0].String() + p[1].String()); });
  EXPECT_THAT(got, ElementsAre("{01 true}{100 false}", "{01 true}{1000 false}",
                               "{10 true}{100 false}", "{10 true}{1000 false}"));
  int calls = 0;
  IterateAllProviderTopologyHints({}, [&](const List& p) {
    EXPECT_TRUE(p.empty());
    ++calls;
  });
  EXPECT_EQ(calls, 1);
  IterateAllProviderTopologyHints({{H(1, true)}, {}}, [&](const List&) { ++calls; });
  EXPECT_EQ(calls, 1);  // an empty dimension gives no permutations
}

TEST(MergePermutationTest, AndOfMasksPreferredOnlyWhenAllEqualAndPreferred) {
  const BitMask def(0b11);
  EXPECT_EQ(MergePermutation(def, {}), H(0b11, true));
  EXPECT_EQ(MergePermutation(def, {Nil(true), H(0b01, true)}), H(0b01, true));
  EXPECT_EQ(MergePermutation(def, {H(0b01, true), H(0b01, true)}), H(0b01, true));
  EXPECT_EQ(MergePermutation(def, {H(0b11, true), H(0b01, true)}), H(0b01, false));
  EXPECT_EQ(MergePermutation(def, {H(0b01, true), H(0b10, true)}), H(0b00, false));
  EXPECT_EQ(MergePermutation(def, {Nil(false), H(0b01, true)}), H(0b01, false));
  EXPECT_EQ(MergePermutation(def, {Nil(true)}), H(0b11, true));
}

TEST(BestNonPreferredAffinityCountTest, MaxOfNarrowestPerDimension) {
  EXPECT_EQ(BestNonPreferredAffinityCount({{H(0b11, false), H(0b01, true)}, {H(0b11, true)}}), 2);
  EXPECT_EQ(BestNonPreferredAffinityCount({{Nil(true)}}), 0);
  EXPECT_EQ(BestNonPreferredAffinityCount({{H(0b111, false)}, {Nil(true), H(0b10, true)}}), 3);
}

struct MergeCase {
  std::string name;
  std::vector<int> nodes;
  std::vector<ProviderHints> providers;
  // Expected best hint and admission per policy.
  TopologyHint best_effort;
  TopologyHint restricted;
  bool restricted_admit;
  TopologyHint single;
  bool single_admit;
};

ProviderHints R(List l) { return {{"r", std::move(l)}}; }
ProviderHints RNil() { return {{"r", std::nullopt}}; }

class MergeTableTest : public ::testing::TestWithParam<MergeCase> {};

TEST_P(MergeTableTest, PoliciesAgree) {
  const MergeCase& c = GetParam();
  NumaInfo info = Nodes(c.nodes);
  auto be = *NewPolicy(kPolicyBestEffort, &info, {});
  auto re = *NewPolicy(kPolicyRestricted, &info, {});
  auto sn = *NewPolicy(kPolicySingleNumaNode, &info, {});
  auto [be_hint, be_admit] = be->Merge(c.providers);
  EXPECT_EQ(be_hint, c.best_effort) << be_hint.String();
  EXPECT_TRUE(be_admit);
  auto [re_hint, re_admit] = re->Merge(c.providers);
  EXPECT_EQ(re_hint, c.restricted) << re_hint.String();
  EXPECT_EQ(re_admit, c.restricted_admit);
  auto [sn_hint, sn_admit] = sn->Merge(c.providers);
  EXPECT_EQ(sn_hint, c.single) << sn_hint.String();
  EXPECT_EQ(sn_admit, c.single_admit);
}

const List kOneOfTwo = {H(0b01, true), H(0b10, true), H(0b11, false)};

INSTANTIATE_TEST_SUITE_P(
    Cases, MergeTableTest,
    ::testing::Values(
        MergeCase{"NoResources", {0, 1}, {{}}, H(0b11, true), H(0b11, true), true, Nil(true), true},
        MergeCase{"NoProviders", {0, 1}, {}, H(0b11, true), H(0b11, true), true, Nil(true), true},
        MergeCase{"NilHintsDontCare",
                  {0, 1},
                  {RNil()},
                  H(0b11, true),
                  H(0b11, true),
                  true,
                  Nil(true),
                  true},
        // kubernetes#112234: an empty list is "impossible", not "don't care".
        MergeCase{"EmptyHintsAreImpossible",
                  {0, 1},
                  {R({})},
                  H(0b11, false),
                  H(0b11, false),
                  false,
                  Nil(false),
                  false},
        MergeCase{"OneNodeIsEnough",
                  {0, 1},
                  {R(kOneOfTwo)},
                  H(0b01, true),
                  H(0b01, true),
                  true,
                  H(0b01, true),
                  true},
        MergeCase{"SplitRequest",
                  {0, 1},
                  {R({H(0b11, true)})},
                  H(0b11, true),
                  H(0b11, true),
                  true,
                  Nil(false),
                  false},
        MergeCase{"TwoProvidersAgreeOnNode1",
                  {0, 1},
                  {R(kOneOfTwo), R({H(0b10, true), H(0b11, false)})},
                  H(0b10, true),
                  H(0b10, true),
                  true,
                  H(0b10, true),
                  true},
        MergeCase{"TwoProvidersOnDifferentNodes",
                  {0, 1},
                  {R({H(0b01, true), H(0b11, false)}), R({H(0b10, true), H(0b11, false)})},
                  H(0b01, false),
                  H(0b01, false),
                  false,
                  Nil(false),
                  false},
        // Both non-preferred below B = 2: the merge creeps up to B.
        MergeCase{"NonPreferredCreepsUpToB",
                  {0, 1},
                  {R({H(0b11, false)}), R(kOneOfTwo)},
                  H(0b11, false),
                  H(0b11, false),
                  false,
                  Nil(false),
                  false},
        // The first candidate is above B = 1: a narrower one replaces it.
        MergeCase{"NonPreferredAboveBNarrows",
                  {0, 1},
                  {R({H(0b11, false), H(0b01, false)}), R({H(0b11, true), H(0b01, true)})},
                  H(0b01, false),
                  H(0b01, false),
                  false,
                  Nil(false),
                  false},
        MergeCase{"NilAndMask",
                  {0, 1},
                  {RNil(), R({H(0b10, true)})},
                  H(0b10, true),
                  H(0b10, true),
                  true,
                  H(0b10, true),
                  true},
        MergeCase{"ImpossibleAndMask",
                  {0, 1},
                  {R({}), R({H(0b10, true)})},
                  H(0b10, false),
                  H(0b10, false),
                  false,
                  Nil(false),
                  false},
        // One NUMA node: the single node equals the default affinity.
        MergeCase{"OneNumaNode",
                  {0},
                  {R({H(0b1, true)})},
                  H(0b1, true),
                  H(0b1, true),
                  true,
                  Nil(true),
                  true},
        // Disjoint masks only: every merged mask is 0 and ignored.
        MergeCase{"DisjointOnly",
                  {0, 1},
                  {R({H(0b01, true)}), R({H(0b10, true)})},
                  H(0b11, false),
                  H(0b11, false),
                  false,
                  Nil(false),
                  false},
        // Non-contiguous ids: the default affinity is 101.
        MergeCase{"NonContiguousIds",
                  {0, 2},
                  {R({H(0b001, true), H(0b100, true), H(0b101, false)})},
                  H(0b001, true),
                  H(0b001, true),
                  true,
                  H(0b001, true),
                  true},
        MergeCase{"PreferredTiesGoToLowerNode",
                  {0, 1, 2},
                  {R({H(0b100, true), H(0b010, true)})},
                  H(0b010, true),
                  H(0b010, true),
                  true,
                  H(0b010, true),
                  true}),
    [](const ::testing::TestParamInfo<MergeCase>& i) { return i.param.name; });

TEST(NewPolicyTest, UnknownPolicy) {
  NumaInfo info = Nodes({0});
  EXPECT_EQ(NewPolicy("static", &info, {}).status().message(), "unknown policy: \"static\"");
  EXPECT_EQ(NewPolicy("none", &info, {}).status().message(), "unknown policy: \"none\"");
}

// Distances where {0,2} and {1,3} are the close pairs.
NumaInfo FourNodesWithDistances() {
  std::vector<NumaNode> t = {{0, std::vector<uint64_t>{10, 20, 11, 30}},
                             {1, std::vector<uint64_t>{20, 10, 30, 11}},
                             {2, std::vector<uint64_t>{11, 30, 10, 20}},
                             {3, std::vector<uint64_t>{30, 11, 20, 10}}};
  PolicyOptions o;
  o.prefer_closest_numa = true;
  return *NewNumaInfo(t, o);
}

TEST(PreferClosestTest, AverageDistanceAndClosest) {
  NumaInfo info = FourNodesWithDistances();
  EXPECT_DOUBLE_EQ(info.AverageDistance(BitMask(0b0101)), 10.5);
  EXPECT_DOUBLE_EQ(info.AverageDistance(BitMask(0b0011)), 15);
  EXPECT_DOUBLE_EQ(info.AverageDistance(BitMask(0b0001)), 10);
  EXPECT_DOUBLE_EQ(info.AverageDistance(BitMask(0)), 0);
  EXPECT_EQ(info.Closest(BitMask(0b0011), BitMask(0b0101)), BitMask(0b0101));
  // A tie goes to the numerically smaller mask.
  EXPECT_EQ(info.Closest(BitMask(0b1010), BitMask(0b0101)), BitMask(0b0101));
  // Different counts: the narrowest.
  EXPECT_EQ(info.Closest(BitMask(0b0111), BitMask(0b1000)), BitMask(0b1000));
  EXPECT_EQ(info.Narrowest(BitMask(0b0011), BitMask(0b0101)), BitMask(0b0011));
}

TEST(PreferClosestTest, BestEffortAndRestrictedPickTheClosestPair) {
  NumaInfo info = FourNodesWithDistances();
  // A request that needs two nodes: every pair is preferred.
  List pairs;
  IterateBitMasks({0, 1, 2, 3}, [&](BitMask m) {
    if (m.Count() == 2) pairs.push_back(TopologyHint{m, true});
  });
  PolicyOptions closest;
  closest.prefer_closest_numa = true;
  for (const char* name : {kPolicyBestEffort, kPolicyRestricted}) {
    auto with = *NewPolicy(name, &info, closest);
    EXPECT_EQ(with->Merge({R(pairs)}).first, H(0b0101, true)) << name;
    auto without = *NewPolicy(name, &info, {});
    EXPECT_EQ(without->Merge({R(pairs)}).first, H(0b0011, true)) << name;
  }
  // single-numa-node ignores the option.
  auto single = *NewPolicy(kPolicySingleNumaNode, &info, closest);
  EXPECT_EQ(single->Merge({R({H(0b0100, true), H(0b0001, true)})}).first, H(0b0001, true));
}

TEST(PreferClosestTest, NonPreferredAtBUsesClosest) {
  NumaInfo info = FourNodesWithDistances();
  PolicyOptions closest;
  closest.prefer_closest_numa = true;
  auto p = *NewPolicy(kPolicyBestEffort, &info, closest);
  // B = 2; both candidates non-preferred with 2 bits.
  auto [hint, admit] = p->Merge({R({H(0b0011, false), H(0b0101, false)})});
  EXPECT_EQ(hint, H(0b0101, false));
  EXPECT_TRUE(admit);
}

TEST(NumaInfoTest, Errors) {
  PolicyOptions closest;
  closest.prefer_closest_numa = true;
  EXPECT_EQ(NewNumaInfo({{0, std::nullopt}}, closest).status().message(),
            "error getting NUMA distances from cadvisor");
  EXPECT_OK(NewNumaInfo({{0, std::nullopt}}, {}));
  EXPECT_EQ(
      NewNumaInfo({{0, std::vector<uint64_t>{10}}, {2, std::vector<uint64_t>{20, 10}}}, closest)
          .status()
          .message(),
      "NUMA node 0 has 1 distances; the row is indexed by node id and needs 3 entries");
  EXPECT_FALSE(NewNumaInfo({{64, std::nullopt}}, {}).ok());
  EXPECT_FALSE(NewNumaInfo({{1, std::nullopt}, {1, std::nullopt}}, {}).ok());
  EXPECT_EQ(Nodes({0, 2}).DefaultAffinityMask(), BitMask(0b101));
}

}  // namespace
}  // namespace devmgr::topology
