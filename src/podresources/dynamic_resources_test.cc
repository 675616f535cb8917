// The DRA part of the PodResources answers (dynamic_resources.h) and how the
// client prints it (json.h).
//
// What the kubelet does, as settled for devmgr (in our words; sources are
// the kubernetes tree at the release tags, the PRs named, and the docs):
//
// 1. Feature gate KubeletPodResourcesDynamicResources (pkg/features/
//    kube_features.go): alpha, default off, 1.27-1.33; beta, default on,
//    1.34 (#132940; website feature-gate page "beta 1.34, default true");
//    GA, locked on, 1.36 (#136728, "locked to default in 1.36"); so on by
//    default in every DRA profile 1.34-1.37, and off only by
//    --feature-gates in 1.34-1.35.
// 2. Where it is checked (pkg/kubelet/apis/podresources/server_v1.go, the
//    per-container helper getContainerResources used by both List and Get):
//    on, the container's DynamicResources come from the container manager's
//    GetDynamicResources; off, the field is never set, so the message has no
//    dynamic_resources entries at all. GetAllocatableResources never lists
//    DRA devices (it has no DRA field).
// 3. Containers listed (same file): restartable init containers, then the
//    regular ones; every listed container goes through the same helper, so
//    sidecars get their claims too.
// 4. GetDynamicResources (pkg/kubelet/cm/container_manager_linux.go): returns
//    nothing when DynamicResourceAllocation is off (GA since 1.34, so never
//    in 1.34-1.37) and nothing, with "Unable to get container claim info
//    state" logged, when GetContainerClaimInfos fails. Otherwise one
//    DynamicResource per claim info: claim_name, claim_namespace, and per
//    driver (a Go map: random order) one ClaimResource per device with
//    driver_name, pool_name, device_name, share_id (from the checkpointed
//    Device.ShareID), cdi_devices. The CDI list is one slice per driver that
//    grows device by device, and each ClaimResource keeps the slice as it is
//    at that device: the second device of a driver lists the first device's
//    CDI IDs before its own (kept here; test CdiDevicesRepeatEarlierDevices).
// 5. GetContainerClaimInfos (pkg/kubelet/cm/dra/manager.go): walks
//    spec.resourceClaims in order, resolves the claim name (resourceClaimName,
//    or status.resourceClaimStatuses for a template), and for every entry of
//    the container's resources.claims with that name appends a copy of the
//    whole cached claim info. The entry's request is not looked at (unlike the
//    CDI IDs given to the runtime, which follow the request), so a claim
//    named by two entries of one container appears twice. A claim not in the
//    cache fails the whole container ("unable to get information for
//    ResourceClaim <name>"), and so does a template entry the pod's status
//    does not list yet, for every container of the pod (the claim-name helper
//    of k8s.io/dynamic-resource-allocation resourceclaim: `pod "<ns>/<name>":
//    ResourceClaim not created yet`); a status entry without a name means no
//    claim is needed and the entry is skipped. With DRAExtendedResource the pod's extended
//    resource claim is appended (devmgr does not emulate it yet). The cache
//    keeps a claim from prepare to unprepare and restores it from
//    dra_manager_state after a restart; whether it is prepared is not checked.
// 6. The proto (staging/src/k8s.io/kubelet/pkg/apis/podresources/v1/
//    api.proto): ContainerResources.dynamic_resources = 5;
//    DynamicResource{claim_name = 2, claim_namespace = 3,
//    claim_resources = 4} (1, class_name, removed in 1.31);
//    ClaimResource{cdi_devices = 1, driver_name = 2, pool_name = 3,
//    device_name = 4} since 1.31 (#125488), plus optional share_id = 5 from
//    1.35 on, filled from Device.ShareID (consumable capacity): the field is
//    in k8s.io/kubelet v0.35.4's api.proto and not in v0.34.4's, and
//    k8s.io/kubernetes v1.35.4 fills it in pkg/kubelet/cm/
//    container_manager_linux.go from the share ID the DRA manager stores
//    (pkg/kubelet/cm/dra/manager.go). devmgr sets it only when the cached
//    device has one, which its DRA client reads from 1.35 on;
//    CDIDevice{name = 1}.
#include "podresources/dynamic_resources.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "podresources/json.h"

namespace devmgr::podresources {
namespace {

using ::testing::ElementsAre;

dra::Device Dev(const std::string& pool, const std::string& name, std::vector<std::string> cdi,
                std::optional<std::string> share = std::nullopt) {
  dra::Device d;
  d.pool_name = pool;
  d.device_name = name;
  d.share_id = std::move(share);
  if (!cdi.empty()) d.cdi_device_ids = std::move(cdi);
  return d;
}

dra::ClaimInfoState Claim(const std::string& name,
                          std::map<std::string, std::vector<dra::Device>> drivers) {
  dra::ClaimInfoState s;
  s.claim_uid = "uid-" + name;
  s.claim_name = name;
  s.namespace_ = "ns";
  s.pod_uids = std::set<std::string>{"pod-uid"};
  s.driver_state.emplace();
  for (auto& [driver, devices] : drivers) (*s.driver_state)[driver].devices = std::move(devices);
  return s;
}

std::vector<std::string> Names(const v1::ClaimResource& r) {
  std::vector<std::string> out;
  for (const auto& d : r.cdi_devices()) out.push_back(d.name());
  return out;
}

TEST(DynamicResourcesTest, OneEntryPerClaimInfoWithEveryDriversDevices) {
  google::protobuf::RepeatedPtrField<v1::DynamicResource> out;
  AppendDynamicResources(
      {Claim("gpus", {{"z.example.com", {Dev("p1", "z0", {"z.example.com/z=0"})}},
                      {"a.example.com", {Dev("p0", "a0", {"a.example.com/a=0"})}}}),
       Claim("nic", {{"n.example.com", {Dev("p2", "n0", {}, "share-1")}}})},
      &out);
  ASSERT_EQ(out.size(), 2);
  EXPECT_EQ(out[0].claim_name(), "gpus");
  EXPECT_EQ(out[0].claim_namespace(), "ns");
  ASSERT_EQ(out[0].claim_resources_size(), 2);
  // Drivers by name (Go map order in the kubelet).
  const v1::ClaimResource& a = out[0].claim_resources(0);
  EXPECT_EQ(a.driver_name(), "a.example.com");
  EXPECT_EQ(a.pool_name(), "p0");
  EXPECT_EQ(a.device_name(), "a0");
  EXPECT_THAT(Names(a), ElementsAre("a.example.com/a=0"));
  EXPECT_FALSE(a.has_share_id());
  EXPECT_EQ(out[0].claim_resources(1).driver_name(), "z.example.com");
  const v1::ClaimResource& n = out[1].claim_resources(0);
  EXPECT_EQ(n.device_name(), "n0");
  EXPECT_EQ(n.cdi_devices_size(), 0);
  ASSERT_TRUE(n.has_share_id());
  EXPECT_EQ(n.share_id(), "share-1");
}

// The kubelet's list per driver grows device by device; each device's
// entry holds it as it stands.
TEST(DynamicResourcesTest, CdiDevicesRepeatEarlierDevicesOfTheSameDriver) {
  google::protobuf::RepeatedPtrField<v1::DynamicResource> out;
  AppendDynamicResources(
      {Claim("c", {{"d.example.com",
                    {Dev("p", "dev-0", {"d/x=0"}), Dev("p", "dev-1", {"d/x=1a", "d/x=1b"}),
                     Dev("p", "dev-2", {})}},
                   {"e.example.com", {Dev("q", "e-0", {"e/y=0"})}}})},
      &out);
  ASSERT_EQ(out.size(), 1);
  ASSERT_EQ(out[0].claim_resources_size(), 4);
  EXPECT_THAT(Names(out[0].claim_resources(0)), ElementsAre("d/x=0"));
  EXPECT_THAT(Names(out[0].claim_resources(1)), ElementsAre("d/x=0", "d/x=1a", "d/x=1b"));
  EXPECT_THAT(Names(out[0].claim_resources(2)), ElementsAre("d/x=0", "d/x=1a", "d/x=1b"));
  // A new driver starts a new list.
  EXPECT_THAT(Names(out[0].claim_resources(3)), ElementsAre("e/y=0"));
}

TEST(DynamicResourcesTest, ClaimWithoutDevicesHasNoClaimResources) {
  google::protobuf::RepeatedPtrField<v1::DynamicResource> out;
  dra::ClaimInfoState nil_drivers = Claim("empty", {});
  nil_drivers.driver_state.reset();
  AppendDynamicResources({Claim("nodev", {{"d.example.com", {}}}), nil_drivers}, &out);
  ASSERT_EQ(out.size(), 2);
  EXPECT_EQ(out[0].claim_resources_size(), 0);
  EXPECT_EQ(out[1].claim_name(), "empty");
  EXPECT_EQ(out[1].claim_resources_size(), 0);
}

v1::ListPodResourcesResponse OnePodWithAClaim() {
  v1::ListPodResourcesResponse r;
  v1::PodResources* p = r.add_pod_resources();
  p->set_name("pod0");
  p->set_namespace_("ns");
  v1::ContainerResources* c = p->add_containers();
  c->set_name("ctr0");
  AppendDynamicResources(
      {Claim("gpu", {{"d.example.com",
                      {Dev("node-1", "gpu-0", {"d/gpu=0"}), Dev("node-1", "gpu-1", {}, "s")}}})},
      c->mutable_dynamic_resources());
  p->add_containers()->set_name("ctr1");
  return r;
}

TEST(DynamicResourcesTest, JsonUsesTheGoFieldNames) {
  const nlohmann::ordered_json j = ToJson(OnePodWithAClaim());
  EXPECT_EQ(j["pod_resources"][0]["containers"][0]["dynamic_resources"].dump(),
            R"([{"claim_name":"gpu","claim_namespace":"ns","claim_resources":[)"
            R"({"cdi_devices":[{"name":"d/gpu=0"}],"driver_name":"d.example.com",)"
            R"("pool_name":"node-1","device_name":"gpu-0"},)"
            R"({"cdi_devices":[{"name":"d/gpu=0"}],"driver_name":"d.example.com",)"
            R"("pool_name":"node-1","device_name":"gpu-1","share_id":"s"}]}])");
  EXPECT_FALSE(j["pod_resources"][0]["containers"][1].contains("dynamic_resources"));
}

TEST(DynamicResourcesTest, TableHasARowPerClaimResource) {
  EXPECT_EQ(ToTable(OnePodWithAClaim()),
            "NAMESPACE   POD    CONTAINER   RESOURCE    DEVICE                       NUMA\n"
            "ns          pod0   ctr0        claim:gpu   d.example.com/node-1/gpu-0   -\n"
            "ns          pod0   ctr0        claim:gpu   d.example.com/node-1/gpu-1   -\n"
            "ns          pod0   ctr1        -           -                            -\n");
}

}  // namespace
}  // namespace devmgr::podresources
