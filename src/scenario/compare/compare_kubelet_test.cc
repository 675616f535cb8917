#include "scenario/compare/compare_kubelet.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <regex>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenario/compare/compare_kubelet_snapshot.h"

namespace devmgr::scenario {
namespace {

using compare::DeviceMap;
using compare::Json;
using ::testing::HasSubstr;

// Signatures of devices all held by one container: "c".
std::map<std::string, std::string> Held(const std::vector<std::string>& ids,
                                        const std::string& by = "c") {
  std::map<std::string, std::string> out;
  for (const std::string& id : ids) out[id] = by;
  return out;
}

TEST(DeviceMapTest, PairsTheSameIdWithItselfAndTheRestInSortedOrder) {
  DeviceMap m;
  m.Extend("r", Held({"b", "c"}), Held({"a", "b"}));
  // b is on both sides: itself; the oracle's c is devmgr's a.
  EXPECT_EQ(m.Rename("c"), "a");
  EXPECT_EQ(m.Rename("b"), "b");
}

TEST(DeviceMapTest, RenamesWholeTokensOnly) {
  DeviceMap m;
  m.Extend("r", Held({"gpu-1"}), Held({"gpu-0"}));
  EXPECT_EQ(m.Rename("gpu-1,gpu-10 /dev/gpu-1"), "gpu-0,gpu-10 /dev/gpu-0");
}

TEST(DeviceMapTest, KeepsEarlierPairings) {
  DeviceMap m;
  m.Extend("r", Held({"d2", "d3"}, "p1"), Held({"d0", "d1"}, "p1"));
  std::map<std::string, std::string> o = Held({"d2", "d3"}, "p1"), d = Held({"d0", "d1"}, "p1");
  o.merge(Held({"d0", "d1"}, "p2"));
  d.merge(Held({"d2", "d3"}, "p2"));
  m.Extend("r", o, d);
  EXPECT_EQ(m.Rename("d2 d3 d0 d1"), "d0 d1 d2 d3");
}

TEST(DeviceMapTest, PairsByHolders) {
  // An init container's device reused by the app container: held by both.
  DeviceMap m;
  m.Extend("r", {{"d0", "app"}, {"d1", "app,init"}}, {{"d1", "app"}, {"d2", "app,init"}});
  EXPECT_EQ(m.Rename("d1"), "d2");
  EXPECT_EQ(m.Rename("d0"), "d1");
}

TEST(DeviceMapTest, GroupsOfDifferentSizesPairNothing) {
  DeviceMap m;
  m.Extend("r", {{"a", "c|[0]"}, {"b", "c|[0]"}}, {{"a", "c|[0]"}, {"b", "c|[1]"}});
  EXPECT_TRUE(m.empty());
}

TEST(DeviceMapTest, RenameJsonSortsStringArrays) {
  DeviceMap m;
  m.Extend("r", Held({"x", "y"}), Held({"b", "a"}));
  Json j = {{"ids", {"y", "x"}}, {"env", "x,y"}};
  m.RenameJson(&j);
  EXPECT_EQ(j["ids"], Json({"a", "b"}));
  EXPECT_EQ(j["env"], "a,b");
}

// A snapshot with devices {id: numa node}, allocations and affinities.
Json Snap(const std::map<std::string, int>& devices, Json allocations,
          Json affinity = Json::object()) {
  Json devs = Json::object();
  for (const auto& [id, numa] : devices) devs["r"][id] = {{"numa", Json::array({numa})}};
  return {{"devices", devs}, {"allocations", std::move(allocations)}, {"affinity", affinity}};
}

// The oracle's allocations renamed through the pairing of one step.
Json RenamedAllocations(compare::Pairing* p, const Json* o_before, const Json& o,
                        const Json* d_before, const Json& d,
                        const std::vector<compare::PodOrder>& order, bool* crossed = nullptr) {
  compare::PairStep(o_before, o, d_before, d, order, /*numa_blind=*/false, p);
  return compare::RenameOracle(*p, o, d, crossed)["allocations"];
}

const std::map<std::string, int> kTwoByTwo = {{"a0", 0}, {"b0", 0}, {"c1", 1}, {"d1", 1}};
const std::vector<compare::PodOrder> kApps = {{"p", {{"app", false}}}, {"q", {{"app", false}}}};

TEST(GoSetPickTest, AlignedSetSpanningNumaNodesAnySplit) {
  // Best effort, 3 of 4 devices, the affinity {0,1}: the kubelet takes 3
  // from the aligned set in map order, 2+1 or 1+2 over the NUMA nodes.
  const Json aff = {{"p", {{"app", {0, 1}}}}};
  Json o = Snap(kTwoByTwo, {{"p", {{"app", {{"r", {"a0", "b0", "c1"}}}}}}}, aff);
  Json d = Snap(kTwoByTwo, {{"p", {{"app", {{"r", {"a0", "c1", "d1"}}}}}}}, aff);
  o["checkpoint"] = {
      {"entries",
       {{{"pod", "p"}, {"container", "app"}, {"devices", {{"0", {"a0", "b0"}}, {"1", {"c1"}}}}}}}};
  const Json before = Snap(kTwoByTwo, Json::object());
  compare::Pairing p;
  bool crossed = false;
  EXPECT_EQ(RenamedAllocations(&p, &before, o, &before, d, kApps, &crossed), d["allocations"]);
  EXPECT_TRUE(crossed);
  // The checkpoint's per-NUMA lists follow devmgr's partners.
  EXPECT_EQ(compare::RenameOracle(p, o, d, nullptr)["checkpoint"]["entries"][0]["devices"],
            Json({{"0", {"a0"}}, {"1", {"c1", "d1"}}}));
  // The next pod gets the free device, on NUMA node 1 on the oracle's
  // side and on node 0 on devmgr's, each inside its own affinity.
  Json o2 = o, d2 = d;
  o2["allocations"]["q"] = {{"app", {{"r", {"d1"}}}}};
  o2["affinity"]["q"] = {{"app", {1}}};
  d2["allocations"]["q"] = {{"app", {{"r", {"b0"}}}}};
  d2["affinity"]["q"] = {{"app", {0}}};
  EXPECT_EQ(RenamedAllocations(&p, &o, o2, &d, d2, kApps), d2["allocations"]);
}

TEST(GoSetPickTest, APickOutsideTheAffinityStillDiffers) {
  // Single NUMA node affinity {0}: 2 devices must both come from node 0.
  const Json aff = {{"p", {{"app", {0}}}}};
  const Json o = Snap(kTwoByTwo, {{"p", {{"app", {{"r", {"a0", "b0"}}}}}}}, aff);
  const Json d = Snap(kTwoByTwo, {{"p", {{"app", {{"r", {"a0", "c1"}}}}}}}, aff);
  const Json before = Snap(kTwoByTwo, Json::object());
  compare::Pairing p;
  EXPECT_NE(RenamedAllocations(&p, &before, o, &before, d, kApps), d["allocations"]);
}

const std::map<std::string, int> kFive = {{"a", 0}, {"b", 0}, {"c", 0}, {"d", 0}, {"e", 0}};
// init1 takes 1, init2 2 (init1's and another), app1 and app2 1 each from
// those two: TestInitContainerDeviceAllocation's pod.
const std::vector<compare::PodOrder> kInitPod = {
    {"p0", {{"app", false}}},
    {"p", {{"init1", true}, {"init2", true}, {"app1", false}, {"app2", false}}}};

Json InitPod(const std::vector<std::string>& init1, const std::vector<std::string>& init2,
             const std::vector<std::string>& app1, const std::vector<std::string>& app2) {
  return Snap(kFive, {{"p",
                       {{"init1", {{"r", init1}}},
                        {"init2", {{"r", init2}}},
                        {"app1", {{"r", app1}}},
                        {"app2", {{"r", app2}}}}}});
}

TEST(GoSetPickTest, InitContainerReuseAnyOfItsDevicesAfterEarlierPairs) {
  // An earlier pod held a, b, c on both sides (paired with themselves).
  const Json first = Snap(kFive, {{"p0", {{"app", {{"r", {"a", "b", "c"}}}}}}});
  const Json empty = Snap(kFive, Json::object());
  compare::Pairing p;
  EXPECT_EQ(RenamedAllocations(&p, nullptr, first, nullptr, first, kInitPod), first["allocations"]);
  RenamedAllocations(&p, &first, empty, &first, empty, kInitPod);
  // Whether app1 gets init1's device or the other one is map order; init1's
  // device is map order too.
  const Json o = InitPod({"a"}, {"a", "b"}, {"a"}, {"b"});
  for (const Json& d :
       {InitPod({"a"}, {"a", "b"}, {"b"}, {"a"}), InitPod({"c"}, {"c", "d"}, {"d"}, {"c"})}) {
    compare::Pairing q = p;
    EXPECT_EQ(RenamedAllocations(&q, &empty, o, &empty, d, kInitPod), d["allocations"]);
  }
}

TEST(GoSetPickTest, NoReuseOfTheInitContainersDevicesStillDiffers) {
  const Json empty = Snap(kFive, Json::object());
  const Json o = InitPod({"a"}, {"a", "b"}, {"a"}, {"b"});
  for (const Json& d : {InitPod({"a"}, {"a", "b"}, {"c"}, {"d"}),     // fresh devices
                        InitPod({"a"}, {"b", "c"}, {"b"}, {"c"}),     // init2 not reusing
                        InitPod({"a"}, {"a", "b"}, {"a"}, {"a"})}) {  // one device twice
    compare::Pairing p;
    EXPECT_NE(RenamedAllocations(&p, &empty, o, &empty, d, kInitPod), d["allocations"]);
  }
}

TEST(GoSetPickTest, ARunningContainerKeepsItsDevices) {
  // After the pick, devmgr's container must not swap to other devices.
  const Json empty = Snap(kFive, Json::object());
  const Json o = Snap(kFive, {{"p", {{"app", {{"r", {"a"}}}}}}});
  compare::Pairing p;
  EXPECT_EQ(RenamedAllocations(&p, &empty, o, &empty, o, kApps), o["allocations"]);
  const Json d = Snap(kFive, {{"p", {{"app", {{"r", {"b"}}}}}}});
  EXPECT_NE(RenamedAllocations(&p, &o, o, &o, d, kApps), d["allocations"]);
}

TEST(SortIdListsTest, SortsListsOfKnownDeviceIdsOnly) {
  Json j = {{"a", "gpu-2,gpu-0"}, {"b", "x,gpu-0"}, {"c", "gpu-1 gpu-0"}, {"d", "gpu-2"}};
  compare::SortIdLists(&j, {"gpu-0", "gpu-1", "gpu-2"});
  EXPECT_EQ(j["a"], "gpu-0,gpu-2");
  EXPECT_EQ(j["b"], "x,gpu-0");
  EXPECT_EQ(j["c"], "gpu-0 gpu-1");
  EXPECT_EQ(j["d"], "gpu-2");
}

TEST(CompareDiffTest, ReportsPathsWithBothSides) {
  const Json k = {{"node", {{"capacity", {{"example.com/gpu", 2}}}}},
                  {"calls", {{"p", Json::array()}}}};
  const Json d = {{"node", {{"capacity", {{"example.com/gpu", 3}}}}},
                  {"calls", {{"p", Json::array()}}}};
  std::vector<Failure> f = compare::Diff(k, d, Location{"s.yaml", 1, 1});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].what, "node['capacity']['example.com/gpu']");
  EXPECT_EQ(f[0].expected, "2");
  EXPECT_EQ(f[0].actual, "3");
}

TEST(CompareDiffTest, AbsentOnOneSide) {
  const Json k = {{"allocations", {{"u1", {{"c", {{"r", {"a"}}}}}}}}};
  const Json d = {{"allocations", Json::object()}};
  std::vector<Failure> f = compare::Diff(k, d, Location{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].what, "allocations['u1']");
  EXPECT_EQ(f[0].actual, "(none)");
}

TEST(CompareOptionsTest, OracleAndDevmgrOptionsNormalizeAlike) {
  manager::RunContainerOptions o;
  o.envs = {{"A", "1"}};
  o.mounts = {{"/c", "/c", "/h", true, false}};
  o.devices = {{"/dev/x", "/dev/y", "rw"}};
  o.annotations = {{"k", "v"}};
  o.cdi_devices = {"vendor.com/class=x"};
  const Json go = {
      {"Envs", {{{"Name", "A"}, {"Value", "1"}}}},
      {"Mounts",
       {{{"Name", "/c"}, {"ContainerPath", "/c"}, {"HostPath", "/h"}, {"ReadOnly", true}}}},
      {"Devices",
       {{{"PathOnHost", "/dev/x"}, {"PathInContainer", "/dev/y"}, {"Permissions", "rw"}}}},
      {"Annotations", {{{"Name", "k"}, {"Value", "v"}}}},
      {"CDIDevices", {{{"Name", "vendor.com/class=x"}}}}};
  EXPECT_EQ(compare::OptionsJson(o), compare::OracleOptionsJson(go));
}

TEST(FindKubeletOracleTest, MissingBinaryNamesMakeTarget) {
  unsetenv("DEVMGR_KUBELET_ORACLE");
  absl::StatusOr<std::string> r = FindKubeletOracle("", "1.37", "/nonexistent/devmgr");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("make kubelet-oracle"));
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("/nonexistent/kubelet-oracle/kubelet-oracle-1.37"));
}

TEST(FindKubeletOracleTest, DirectoryFlagFindsTheVersionsBinary) {
  char tmpl[] = "/tmp/oracle-find-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string bin = dir + "/kubelet-oracle-1.33";
  { std::ofstream(bin) << "#!/bin/sh\n"; }
  ASSERT_EQ(chmod(bin.c_str(), 0755), 0);
  absl::StatusOr<std::string> r = FindKubeletOracle(dir, "1.33", "/x/devmgr");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, bin);
  EXPECT_FALSE(FindKubeletOracle(dir, "1.37", "/x/devmgr").ok());
  unlink(bin.c_str());
  rmdir(dir.c_str());
}

TEST(NotComparableTest, PluginWatcherScenarios) {
  Scenario sc;
  EXPECT_EQ(NotComparableReason(sc), "");
  sc.node.plugins_registry = true;
  EXPECT_THAT(NotComparableReason(sc), HasSubstr("plugin watcher"));
}

TEST(ExplainedDifferencesTest, EveryEntryHasAReasonAndValidRegexes) {
  for (const ExplainedDifference& e : ExplainedDifferences()) {
    EXPECT_NE(std::string(e.reason), "");
    EXPECT_NO_THROW(std::regex(e.scenario));
    EXPECT_NO_THROW(std::regex(e.what));
  }
}

}  // namespace
}  // namespace devmgr::scenario
