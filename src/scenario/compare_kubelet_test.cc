#include "scenario/compare_kubelet.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <regex>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenario/compare_kubelet_snapshot.h"

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
