#include "topology/bitmask.h"

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/config_text.h"
#include "topology/topology_hint.h"

namespace devmgr::topology {
namespace {

using ::testing::ElementsAre;

TEST(BitMaskTest, FromBitsAndErrors) {
  auto m = BitMask::FromBits({0, 2});
  ASSERT_OK(m);
  EXPECT_EQ(m->bits(), 0b101u);
  EXPECT_EQ(m->Count(), 2);
  EXPECT_THAT(m->GetBits(), ElementsAre(0, 2));
  EXPECT_EQ(BitMask::FromBits({64}).status().message(), "bit number must be less than 64");
  EXPECT_EQ(BitMask::FromBits({-1}).status().message(), "bit number must be less than 64");
  BitMask x(0b1);
  EXPECT_FALSE(x.Add({1, 70}).ok());
  EXPECT_EQ(x.bits(), 0b1u);  // unchanged
  ASSERT_OK(x.Remove({0}));
  EXPECT_TRUE(x.IsEmpty());
}

TEST(BitMaskTest, SetQueries) {
  BitMask m(0b1010);
  EXPECT_TRUE(m.IsSet(1));
  EXPECT_FALSE(m.IsSet(0));
  EXPECT_FALSE(m.IsSet(64));
  EXPECT_FALSE(m.IsSet(-1));
  EXPECT_TRUE(m.AnySet({0, 3}));
  EXPECT_FALSE(m.AnySet({0, 2, 99}));
  EXPECT_FALSE(m.AnySet({}));
}

TEST(BitMaskTest, NarrowerMeansFewerBitsThenNumericallySmaller) {
  EXPECT_TRUE(BitMask(0b100).IsNarrowerThan(BitMask(0b011)));
  EXPECT_FALSE(BitMask(0b011).IsNarrowerThan(BitMask(0b100)));
  EXPECT_TRUE(BitMask(0b011).IsNarrowerThan(BitMask(0b101)));
  EXPECT_FALSE(BitMask(0b101).IsNarrowerThan(BitMask(0b011)));
  EXPECT_FALSE(BitMask(0b01).IsNarrowerThan(BitMask(0b01)));
  EXPECT_TRUE(BitMask(0b01).IsLessThan(BitMask(0b10)));
  EXPECT_TRUE(BitMask(0b10).IsGreaterThan(BitMask(0b01)));
}

TEST(BitMaskTest, AndOr) {
  EXPECT_EQ(And(BitMask(0b111), {BitMask(0b110), BitMask(0b011)}), BitMask(0b010));
  EXPECT_EQ(And(BitMask(0b111), {}), BitMask(0b111));
  EXPECT_EQ(Or(BitMask(0b001), {BitMask(0b100)}), BitMask(0b101));
}

TEST(BitMaskTest, StringAsGoPrintsIt) {
  EXPECT_EQ(BitMask(0).String(), "00");
  EXPECT_EQ(BitMask(0b1).String(), "01");
  EXPECT_EQ(BitMask(0b10).String(), "10");
  EXPECT_EQ(BitMask(0b11).String(), "11");
  EXPECT_EQ(BitMask(0b100).String(), "100");  // not > 1<<2
  EXPECT_EQ(BitMask(0b101).String(), "0101");
  EXPECT_EQ(BitMask(0xff).String(), "11111111");
}

TEST(BitMaskTest, IterateBitMasksOrder) {
  std::vector<uint64_t> got;
  IterateBitMasks({0, 1, 2}, [&](BitMask m) { got.push_back(m.bits()); });
  EXPECT_THAT(got, ElementsAre(0b001, 0b010, 0b100, 0b011, 0b101, 0b110, 0b111));
  got.clear();
  IterateBitMasks({2, 0}, [&](BitMask m) { got.push_back(m.bits()); });
  EXPECT_THAT(got, ElementsAre(0b100, 0b001, 0b101));
  got.clear();
  // The list order, not the numeric order, decides within a size.
  IterateBitMasks({3, 1}, [&](BitMask m) { got.push_back(m.bits()); });
  EXPECT_THAT(got, ElementsAre(0b1000, 0b0010, 0b1010));
  got.clear();
  IterateBitMasks({}, [&](BitMask m) { got.push_back(m.bits()); });
  EXPECT_TRUE(got.empty());
}

TEST(TopologyHintTest, Strings) {
  EXPECT_EQ((TopologyHint{BitMask(0b01), true}).String(), "{01 true}");
  EXPECT_EQ((TopologyHint{std::nullopt, false}).String(), "{<nil> false}");
  EXPECT_EQ(HintListString(std::nullopt), "<nil>");
  EXPECT_EQ(HintListString(std::vector<TopologyHint>{}), "[]");
  EXPECT_EQ(HintListString(std::vector<TopologyHint>{{BitMask(1), true}, {BitMask(3), false}}),
            "[{01 true} {11 false}]");
}

TEST(ConfigTextTest, NodeLists) {
  EXPECT_THAT(*ParseNumaNodeList("0,2"), ElementsAre(0, 2));
  EXPECT_THAT(*ParseNumaNodeList(" 1 , 0"), ElementsAre(1, 0));
  EXPECT_EQ(ParseNumaNodeList("0,64").status().message(),
            "invalid NUMA node id \"64\" in \"0,64\": ids are integers 0..63");
  EXPECT_EQ(ParseNumaNodeList("0,0").status().message(), "NUMA node id 0 is listed twice");
  EXPECT_FALSE(ParseNumaNodeList("").ok());
  EXPECT_FALSE(ParseNumaNodeList("a").ok());
}

TEST(ConfigTextTest, DistancesAndOptions) {
  auto d = ParseNumaDistances("10,20;20,10");
  ASSERT_OK(d);
  ASSERT_EQ(d->size(), 2u);
  EXPECT_THAT((*d)[1], ElementsAre(20, 10));
  EXPECT_TRUE(ParseNumaDistances("")->empty());
  EXPECT_FALSE(ParseNumaDistances("10,x").ok());
  auto o = ParsePolicyOptions("prefer-closest-numa-nodes=true, max-allowable-numa-nodes=9");
  ASSERT_OK(o);
  EXPECT_EQ(o->at("prefer-closest-numa-nodes"), "true");
  EXPECT_EQ(o->at("max-allowable-numa-nodes"), "9");
  EXPECT_FALSE(ParsePolicyOptions("novalue").ok());
  EXPECT_EQ(MakeNumaTopology({0, 1}, {{10}}).status().message(),
            "1 NUMA distance rows for 2 NUMA nodes: give one row per node");
  auto t = MakeNumaTopology({0, 1}, {});
  ASSERT_OK(t);
  EXPECT_FALSE((*t)[0].distances.has_value());
}

}  // namespace
}  // namespace devmgr::topology
