#include "scenario/compare/compare_kubelet_dra.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenario/compare/compare_kubelet.h"
#include "scenario/compare/compare_kubelet_snapshot.h"

namespace devmgr::scenario {
namespace {

using compare::Json;
using ::testing::HasSubstr;

// A dra_manager_state file whose Data lists `entries` (as the kubelet's
// json.Marshal writes it, a string inside the outer object).
std::string DraStateBytes(const Json& entries, int checksum) {
  Json data = {{"kind", "DRACheckpoint"},
               {"apiVersion", "checkpoint.dra.kubelet.k8s.io/v1"},
               {"ClaimInfoStateList", entries}};
  return Json{{"Data", data.dump()}, {"Checksum", checksum}}.dump();
}

Json Entry(const std::string& uid, const std::vector<std::string>& cdi) {
  return {{"ClaimUID", uid},
          {"ClaimName", "c-" + uid},
          {"Namespace", "default"},
          {"PodUIDs", {{"pod", Json::object()}}},
          {"DriverState",
           {{"d.example.com",
             {{"Devices", {{{"PoolName", "p"}, {"DeviceName", "dev"}, {"CDIDeviceIDs", cdi}}}}}}}}};
}

TEST(DraCheckpointJsonTest, SortsEntriesByClaimUidAndDropsTheChecksum) {
  const Json a = Entry("uid-a", {"x"}), b = Entry("uid-b", {"y"});
  const Json one = compare::DraCheckpointJson(DraStateBytes({b, a}, 1), true);
  const Json two = compare::DraCheckpointJson(DraStateBytes({a, b}, 2), true);
  EXPECT_EQ(one, two);
  ASSERT_EQ(one["ClaimInfoStateList"].size(), 2u);
  EXPECT_EQ(one["ClaimInfoStateList"][0]["ClaimUID"], "uid-a");
  EXPECT_FALSE(one.contains("Checksum"));
  EXPECT_EQ(one["kind"], "DRACheckpoint");
}

TEST(DraCheckpointJsonTest, NoFileIsNullAndGarbageIsUnreadable) {
  EXPECT_TRUE(compare::DraCheckpointJson("", false).is_null());
  EXPECT_TRUE(compare::DraCheckpointJson("{", true).contains("unreadable"));
  EXPECT_TRUE(
      compare::DraCheckpointJson(R"({"Data":"[1","Checksum":1})", true).contains("unreadable"));
}

TEST(DraCheckpointJsonTest, KeepsTheDeviceOrderWithinAClaim) {
  // A claim's devices come in the driver's answer order on both sides:
  // not normalized, so a difference there shows.
  const Json e1 = Entry("u", {"x", "y"}), e2 = Entry("u", {"y", "x"});
  EXPECT_NE(compare::DraCheckpointJson(DraStateBytes({e1}, 1), true),
            compare::DraCheckpointJson(DraStateBytes({e2}, 1), true));
}

TEST(DraCallsJsonTest, SortsTheClaimsOfOneCallAndKeepsTheCallOrder) {
  const std::vector<Json> records = {
      {{"method", "NodePrepareResources"},
       {"service", "v1"},
       {"claims",
        {{{"namespace", "ns"}, {"name", "b"}, {"uid", "2"}},
         {{"namespace", "ns"}, {"name", "a"}, {"uid", "1"}}}},
       {"errors", {{"2", "boom"}}}},
      {{"method", "NodeUnprepareResources"}, {"service", "v1beta1"}, {"claims", Json::array()}}};
  const Json out = compare::DraCallsJson(records);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["claims"], Json({"ns/a 1", "ns/b 2"}));
  EXPECT_EQ(out[0]["errors"], Json({{"2", "boom"}}));
  EXPECT_EQ(out[1]["method"], "NodeUnprepareResources");
  EXPECT_EQ(out[1]["service"], "v1beta1");
  EXPECT_EQ(out[1]["errors"], Json::object());
}

TEST(DevmgrPrepareVerdictTest, DropsTheEventPrefixOfAFailedPrepare) {
  EXPECT_EQ(compare::DevmgrPrepareVerdict("", ""), Json({{"prepared", true}, {"error", ""}}));
  EXPECT_EQ(compare::DevmgrPrepareVerdict("FailedPrepareDynamicResources",
                                          "Failed to prepare dynamic resources: boom"),
            Json({{"prepared", false}, {"error", "boom"}}));
  // Another reason (e.g. a device-plugin rejection) is not a DRA verdict.
  EXPECT_EQ(compare::DevmgrPrepareVerdict("UnexpectedAdmissionError", "x")["prepared"], true);
}

TEST(GroupCdiByClaimTest, OrdersClaimsByUidAndKeepsTheOrderWithinAClaim) {
  Json obs = {
      {"checkpoint", {{"ClaimInfoStateList", {Entry("b", {"b2", "b1"}), Entry("a", {"a1"})}}}},
      {"pods",
       {{"p",
         {{"containers",
           {{"main", {"b2", "b1", "a1"}},
            {"other", {"zz", "a1"}},
            {"failed", {{"failed", "x"}}}}}}}}}};
  compare::GroupCdiByClaim(&obs);
  EXPECT_EQ(obs["pods"]["p"]["containers"]["main"], Json({"a1", "b2", "b1"}));
  // An ID no claim lists stays in front.
  EXPECT_EQ(obs["pods"]["p"]["containers"]["other"], Json({"zz", "a1"}));
  EXPECT_EQ(obs["pods"]["p"]["containers"]["failed"], Json({{"failed", "x"}}));
}

TEST(GroupCdiByClaimTest, TwoOrdersOfClaimsCompareEqualAfterwards) {
  const Json cp = {{"ClaimInfoStateList", {Entry("a", {"a1"}), Entry("b", {"b1"})}}};
  Json one = {{"checkpoint", cp}, {"pods", {{"p", {{"containers", {{"c", {"a1", "b1"}}}}}}}}};
  Json two = {{"checkpoint", cp}, {"pods", {{"p", {{"containers", {{"c", {"b1", "a1"}}}}}}}}};
  EXPECT_NE(one, two);
  compare::GroupCdiByClaim(&one);
  compare::GroupCdiByClaim(&two);
  EXPECT_EQ(one, two);
}

TEST(HealthStatusJsonTest, SortsAndDropsEmptyFieldsAndKeepsNil) {
  EXPECT_TRUE(compare::HealthStatusJson(Json()).is_null());
  const Json in = Json::parse(R"([
    {"name": "claim:b", "resources": [{"resourceID": "d/p/y", "health": "Unhealthy", "message": "ecc"},
                                      {"resourceID": "d/p/x", "health": "Healthy", "message": ""}]},
    {"name": "claim:a", "resources": [{"resourceID": "d/p/z"}]}])");
  const Json want = Json::parse(R"([
    {"name": "claim:a", "resources": [{"resourceID": "d/p/z"}]},
    {"name": "claim:b", "resources": [{"resourceID": "d/p/x", "health": "Healthy"},
                                      {"resourceID": "d/p/y", "health": "Unhealthy", "message": "ecc"}]}])");
  EXPECT_EQ(compare::HealthStatusJson(in), want);
  EXPECT_EQ(compare::HealthStatusJson(Json::array()), Json::array());
}

TEST(DraNotComparableTest, DevicePluginsAndExternalDrivers) {
  Scenario sc;
  PluginSpec driver;
  driver.name = "d";
  driver.dra_driver = "d.example.com";
  driver.command = "/usr/bin/any-driver";
  sc.plugins.push_back(driver);
  EXPECT_EQ(DraNotComparableReason(sc), "");
  sc.plugins[0].external = true;
  EXPECT_THAT(DraNotComparableReason(sc), HasSubstr("external"));
  sc.plugins[0].external = false;
  PluginSpec dp;
  dp.name = "gpu";
  sc.plugins.push_back(dp);
  EXPECT_THAT(DraNotComparableReason(sc), HasSubstr("device plugin"));
}

TEST(DraNotComparableTest, ADriverCalledWithoutACallLogLine) {
  std::map<int, DraObservation> obs;
  obs[0] = DraObservation{};
  obs[3] = DraObservation{};
  EXPECT_EQ(DraNotComparableAfterRun(obs), "");
  obs[3].silent_drivers.push_back("gpu-driver");
  EXPECT_THAT(DraNotComparableAfterRun(obs),
              HasSubstr("'gpu-driver' was called but wrote no call log"));
}

}  // namespace
}  // namespace devmgr::scenario
