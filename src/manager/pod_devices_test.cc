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

// The references the checkpoint encoder takes: the same entries as
// ToCheckpointData, and a version that changes with every Insert (also of
// the same allocation again, and across instances), never with a Delete of
// another pod.
TEST(PodDevicesTest, CheckpointEntryRefsMatchTheDataAndVersionEveryInsert) {
  PodDevices pd;
  bool nil = false;
  EXPECT_THAT(pd.CheckpointEntryRefs(&nil), IsEmpty());
  EXPECT_TRUE(nil);
  pd.Insert("p", "c", "r2", Numa({{0, {"b"}}}), std::nullopt);  // not checkpointed
  pd.Insert("p", "c", "r1", Numa({{-1, {"a"}}}), Resp("1"));
  pd.Insert("q", "c", "r1", Numa({{0, {"c"}}}), Resp("2"));
  std::vector<checkpoint::IncrementalEncoder::EntryRef> refs = pd.CheckpointEntryRefs(&nil);
  EXPECT_FALSE(nil);
  const std::optional<std::vector<checkpoint::PodDevicesEntry>> data = pd.ToCheckpointData();
  ASSERT_TRUE(data.has_value());
  ASSERT_EQ(refs.size(), data->size());
  for (size_t i = 0; i < refs.size(); ++i) {
    EXPECT_EQ(refs[i].pod_uid, (*data)[i].pod_uid);
    EXPECT_EQ(refs[i].container_name, (*data)[i].container_name);
    EXPECT_EQ(refs[i].resource_name, (*data)[i].resource_name);
    EXPECT_EQ(*refs[i].device_ids, (*data)[i].device_ids);
    ASSERT_NE(refs[i].alloc_resp, nullptr);
    EXPECT_EQ(*refs[i].alloc_resp, *(*data)[i].alloc_resp);
    EXPECT_NE(refs[i].version, 0u);
  }
  EXPECT_NE(refs[0].version, refs[1].version);
  const uint64_t p_version = refs[0].version;
  const uint64_t q_version = refs[1].version;

  pd.Insert("p", "c", "r1", Numa({{-1, {"a"}}}), Resp("1"));  // the same again
  pd.Delete({"nobody"});
  refs = pd.CheckpointEntryRefs(&nil);
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_GT(refs[0].version, q_version);
  EXPECT_NE(refs[0].version, p_version);
  EXPECT_EQ(refs[1].version, q_version);

  PodDevices other;  // a second instance does not reuse versions
  other.Insert("p", "c", "r1", Numa({{-1, {"a"}}}), Resp("1"));
  const std::vector<checkpoint::IncrementalEncoder::EntryRef> other_refs =
      other.CheckpointEntryRefs(&nil);
  ASSERT_EQ(other_refs.size(), 1u);
  EXPECT_GT(other_refs[0].version, refs[0].version);
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
