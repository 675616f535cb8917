#include "plugin/responses.h"

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plugin/response_template.h"

namespace devmgr::plugin {
namespace {

using ::testing::ElementsAre;
using Policy = PreferredAllocationConfig::Policy;

TEST(ResponseTemplateTest, ExpandsKnownFields) {
  TemplateVars v;
  v.device_ids = "a,b";
  v.device_count = 2;
  v.resource_name = "x.com/y";
  v.device_id = "b";
  v.device_index = 1;
  EXPECT_EQ(ExpandTemplate("{{.DeviceIDs}}|{{ .DeviceCount }}|{{.ResourceName}}|{{.DeviceID}}|"
                           "{{.DeviceIndex}}|{{.Other}}|{{",
                           v),
            "a,b|2|x.com/y|b|1|{{.Other}}|{{");
  EXPECT_OK(CheckTemplate("/dev/{{.DeviceID}}", true));
  EXPECT_EQ(CheckTemplate("x{{.DeviceIDs", false).message(),
            "unterminated template action '{{' (missing '}}')");
}

TEST(ResponsesTest, BuildsPerContainerAndPerDeviceContent) {
  Config c;
  c.resource = "example.com/gpu";
  c.allocate.per_container.envs["VISIBLE"] = "{{.DeviceIDs}}";
  c.allocate.per_container.annotations["n"] = "{{.DeviceCount}}";
  c.allocate.per_container.mounts.push_back({"/c", "/h", true});
  c.allocate.per_device.device_specs.push_back({"/dev/{{.DeviceID}}", "/dev/{{.DeviceID}}", "rw"});
  c.allocate.per_device.cdi_devices.push_back("example.com/gpu={{.DeviceID}}");
  c.allocate.per_device.envs["GPU_{{.DeviceIndex}}"] = "{{.DeviceID}}";
  v1beta1::ContainerAllocateResponse r = BuildContainerAllocateResponse(c, {"g1", "g0"});
  EXPECT_EQ(r.envs().at("VISIBLE"), "g1,g0");
  EXPECT_EQ(r.envs().at("GPU_0"), "g1");
  EXPECT_EQ(r.envs().at("GPU_1"), "g0");
  EXPECT_EQ(r.annotations().at("n"), "2");
  ASSERT_EQ(r.mounts_size(), 1);
  EXPECT_TRUE(r.mounts(0).read_only());
  ASSERT_EQ(r.devices_size(), 2);
  EXPECT_EQ(r.devices(1).host_path(), "/dev/g0");
  EXPECT_EQ(r.devices(1).permissions(), "rw");
  ASSERT_EQ(r.cdi_devices_size(), 2);
  EXPECT_EQ(r.cdi_devices(0).name(), "example.com/gpu=g1");
}

v1beta1::ContainerPreferredAllocationRequest Req(std::vector<std::string> avail,
                                                 std::vector<std::string> must, int size) {
  v1beta1::ContainerPreferredAllocationRequest r;
  for (auto& a : avail) r.add_available_deviceids(a);
  for (auto& m : must) r.add_must_include_deviceids(m);
  r.set_allocation_size(size);
  return r;
}

TEST(ResponsesTest, PreferredAllocationPolicies) {
  PreferredAllocationConfig p;
  const auto req = Req({"d", "b", "a", "c"}, {"c"}, 3);
  p.policy = Policy::kFirst;
  EXPECT_THAT(PreferredDevices(p, req), ElementsAre("c", "a", "b"));
  p.policy = Policy::kLast;
  EXPECT_THAT(PreferredDevices(p, req), ElementsAre("c", "d", "b"));
  p.policy = Policy::kEchoMustInclude;
  EXPECT_THAT(PreferredDevices(p, req), ElementsAre("c"));
  p.policy = Policy::kFixed;
  p.fixed = {"zz", "a"};
  EXPECT_THAT(PreferredDevices(p, req), ElementsAre("zz", "a"));
  p.policy = Policy::kFirst;
  EXPECT_THAT(PreferredDevices(p, Req({"a", "b"}, {}, 0)), ElementsAre());
}

}  // namespace
}  // namespace devmgr::plugin

namespace devmgr::plugin {
namespace {

v1beta1::ContainerPreferredAllocationRequest PreferredRequest(std::vector<std::string> avail,
                                                              std::vector<std::string> must,
                                                              int size) {
  v1beta1::ContainerPreferredAllocationRequest r;
  for (const auto& id : avail) r.add_available_deviceids(id);
  for (const auto& id : must) r.add_must_include_deviceids(id);
  r.set_allocation_size(size);
  return r;
}

TEST(ResponsesTest, PolicyAllAnswersEveryAvailableDevice) {
  PreferredAllocationConfig p;
  p.policy = Policy::kAll;
  EXPECT_THAT(PreferredDevices(p, PreferredRequest({"a", "b", "c"}, {}, 1)),
              ElementsAre("a", "b", "c"));
}

TEST(ResponsesTest, EmptyWithoutMustIncludeAnswersNothingForAFreshPodOnly) {
  PreferredAllocationConfig p;
  p.empty_without_must_include = true;
  EXPECT_THAT(PreferredDevices(p, PreferredRequest({"a", "b", "c"}, {}, 2)), ElementsAre());
  EXPECT_THAT(PreferredDevices(p, PreferredRequest({"a", "b", "c"}, {"c"}, 2)),
              ElementsAre("c", "a"));
}

}  // namespace
}  // namespace devmgr::plugin
