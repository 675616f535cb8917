#include "manager/pod_devices.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::manager {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

DevicesPerNUMA Numa(std::map<int64_t, std::vector<std::string>> m) {
  DevicesPerNUMA out;
  auto& x = out.emplace();
  for (auto& [k, v] : m) x[k] = v;
  return out;
}

v1beta1::ContainerAllocateResponse Resp(const std::string& env) {
  v1beta1::ContainerAllocateResponse r;
  (*r.mutable_envs())["E"] = env;
  return r;
}

TEST(PodDevicesTest, ContainerDevicesDistinguishesNoEntryFromEmpty) {
  PodDevices pd;
  EXPECT_FALSE(pd.ContainerDevices("p", "c", "r").has_value());
  pd.Insert("p", "c", "r", std::nullopt, Resp("x"));
  ASSERT_TRUE(pd.ContainerDevices("p", "c", "r").has_value());
  EXPECT_THAT(*pd.ContainerDevices("p", "c", "r"), IsEmpty());
  EXPECT_TRUE(pd.HasPod("p"));
}

TEST(PodDevicesTest, InsertReplacesAndDevicesUnionsNumaKeys) {
  PodDevices pd;
  pd.Insert("p", "c", "r", Numa({{0, {"a"}}}), Resp("1"));
  pd.Insert("p", "c", "r", Numa({{0, {"b"}}, {1, {"b", "c"}}, {-1, {"d"}}}), Resp("2"));
  EXPECT_THAT(*pd.ContainerDevices("p", "c", "r"), UnorderedElementsAre("b", "c", "d"));
  auto topo = pd.GetContainerDevices("p", "c");
  EXPECT_THAT(topo["r"]["b"], ElementsAre(0, 1));
  EXPECT_THAT(topo["r"]["d"], IsEmpty());
}

TEST(PodDevicesTest, DevicesRebuildSkipsEntriesWithoutResponseButKeepsTheKey) {
  PodDevices pd;
  pd.Insert("p", "c", "r1", Numa({{0, {"a"}}}), Resp("1"));
  pd.Insert("p", "c", "r2", Numa({{0, {"b"}}}), std::nullopt);
  auto all = pd.Devices();
  EXPECT_THAT(all["r1"], UnorderedElementsAre("a"));
  ASSERT_EQ(all.count("r2"), 1u);
  EXPECT_THAT(all["r2"], IsEmpty());
}

TEST(PodDevicesTest, CheckpointDataSkipsMissingResponsesAndIsNullWhenEmpty) {
  PodDevices pd;
  EXPECT_FALSE(pd.ToCheckpointData().has_value());
  pd.Insert("p", "c", "r2", Numa({{0, {"b"}}}), std::nullopt);
  EXPECT_FALSE(pd.ToCheckpointData().has_value());
  pd.Insert("p", "c", "r1", Numa({{-1, {"a"}}}), v1beta1::ContainerAllocateResponse());
  auto data = pd.ToCheckpointData();
  ASSERT_TRUE(data.has_value());
  ASSERT_EQ(data->size(), 1u);
  EXPECT_EQ((*data)[0].resource_name, "r1");
  ASSERT_TRUE((*data)[0].alloc_resp.has_value());
  EXPECT_EQ(*(*data)[0].alloc_resp, "");  // empty, not null
}

TEST(PodDevicesTest, FromCheckpointDataRoundTripsAndSkipsUndecodableResponses) {
  std::vector<checkpoint::PodDevicesEntry> entries(3);
  entries[0] = {"p", "c", "r", Numa({{1, {"x"}}}), Resp("v").SerializeAsString()};
  entries[1] = {"p", "d", "r", std::nullopt, std::nullopt};  // null AllocResp decodes
  entries[2] = {"q", "c", "r", Numa({{0, {"y"}}}), std::string("\xff\xff\xff", 3)};
  PodDevices pd;
  pd.FromCheckpointData(entries);
  EXPECT_TRUE(pd.ContainerDevices("p", "c", "r").has_value());
  EXPECT_TRUE(pd.ContainerDevices("p", "d", "r").has_value());
  EXPECT_FALSE(pd.HasPod("q"));
  auto back = pd.ToCheckpointData();
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].device_ids, entries[0].device_ids);
  EXPECT_EQ((*back)[0].alloc_resp, entries[0].alloc_resp);
  EXPECT_FALSE((*back)[1].device_ids.has_value());  // null kept
}

TEST(PodDevicesTest, ReuseBookkeeping) {
  PodDevices pd;
  pd.Insert("p", "init", "r", Numa({{0, {"a", "b"}}}), Resp("1"));
  pd.Insert("p", "app", "r", Numa({{0, {"a"}}}), Resp("1"));
  std::map<std::string, DeviceSet> reuse;
  pd.AddContainerAllocatedResources("p", "init", &reuse);
  EXPECT_THAT(reuse["r"], UnorderedElementsAre("a", "b"));
  pd.RemoveContainerAllocatedResources("p", "app", &reuse);
  EXPECT_THAT(reuse["r"], UnorderedElementsAre("b"));
  EXPECT_THAT(pd.PodDeviceSet("p", "r"), UnorderedElementsAre("a", "b"));
  pd.Delete({"p"});
  EXPECT_EQ(pd.size(), 0u);
}

TEST(PodDevicesTest, RunContainerOptionsNilWithoutEntry) {
  PodDevices pd;
  EXPECT_FALSE(pd.DeviceRunContainerOptions("p", "c", true).has_value());
  pd.Insert("p", "c", "r", Numa({{0, {"a"}}}), Resp("1"));
  EXPECT_FALSE(pd.DeviceRunContainerOptions("p", "other", true).has_value());
  auto o = pd.DeviceRunContainerOptions("p", "c", true);
  ASSERT_TRUE(o.has_value());
  EXPECT_THAT(o->envs, ElementsAre(EnvVar{"E", "1"}));
}

}  // namespace
}  // namespace devmgr::manager
