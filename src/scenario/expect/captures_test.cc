#include "scenario/expect/captures.h"

#include "checkpoint/checkpoint.h"
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenario/steps/step_interpreter.h"

namespace devmgr::scenario {
namespace {

using ::testing::HasSubstr;

Observed World() {
  Observed o;
  manager::ResourceStatus r;
  r.resource_name = "example.com/gpu";
  r.healthy = {"a", "b", "c"};
  r.unhealthy = {"d"};
  r.allocated = {"a"};
  for (const char* id : {"a", "b", "c", "d"}) {
    manager::DeviceInfo d;
    d.id = id;
    r.devices.push_back(d);
  }
  o.resources.push_back(r);
  node::PodRecord p;
  p.pod.uid = "uid-1";
  p.pod.name = "p";
  p.pod.namespace_ = "default";
  node::ContainerRecord c1, c2;
  c1.name = "c";
  c2.name = "idle";
  p.containers = {c1, c2};
  o.pods.push_back(p);
  manager::PodAllocation pa;
  pa.pod_uid = "uid-1";
  manager::ContainerAllocation ca;
  ca.container_name = "c";
  ca.devices["example.com/gpu"] = {"b", "a"};
  pa.containers.push_back(ca);
  o.allocations.push_back(pa);
  return o;
}

CaptureSpec Spec(std::string pod, std::string container, std::string set = "") {
  CaptureSpec c;
  c.name = "x";
  c.pod = std::move(pod);
  c.container = std::move(container);
  c.resource = "example.com/gpu";
  c.set = std::move(set);
  return c;
}

TEST(Captures, ContainerDevicesAndResourceSets) {
  const Observed o = World();
  EXPECT_EQ(*TakeCapture(Spec("p", "c"), o), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*TakeCapture(Spec("default/p", "idle"), o), std::vector<std::string>{});
  EXPECT_EQ(*TakeCapture(Spec("", "", "healthy"), o), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(*TakeCapture(Spec("", "", "unhealthy"), o), (std::vector<std::string>{"d"}));
  EXPECT_EQ(*TakeCapture(Spec("", "", "devices"), o),
            (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_THAT(std::string(TakeCapture(Spec("ghost", "c"), o).status().message()),
              HasSubstr("no pod 'ghost'"));
  EXPECT_THAT(std::string(TakeCapture(Spec("p", "nope"), o).status().message()),
              HasSubstr("pod 'p' has no container 'nope'"));
  CaptureSpec other = Spec("", "", "healthy");
  other.resource = "example.com/nic";
  EXPECT_THAT(std::string(TakeCapture(other, o).status().message()),
              HasSubstr("resource example.com/nic is unknown to the kubelet"));
}

TEST(Captures, CheckpointEntryFromAWrittenCheckpoint) {
  CheckpointSpec spec;
  spec.entries.push_back({"p", "c", "example.com/gpu", {{0, {"b"}}, {1, {"a"}}}, std::nullopt});
  spec.registered["example.com/gpu"] = {"a", "b"};
  auto uid = [](const std::string& ref) { return ref == "p" ? std::string("uid-1") : ref; };
  absl::StatusOr<std::string> bytes = EncodeCheckpointSpec(spec, uid);
  ASSERT_OK(bytes);
  Observed o = World();
  o.checkpoint_bytes = *bytes;
  CaptureSpec c = Spec("p", "c");
  c.checkpoint = true;
  EXPECT_EQ(*TakeCapture(c, o), (std::vector<std::string>{"a", "b"}));
  c.container = "idle";
  EXPECT_THAT(std::string(TakeCapture(c, o).status().message()),
              HasSubstr("the checkpoint has no entry p/idle/example.com/gpu"));
}

TEST(WriteCheckpoint, ValidV2AndV1AndDeliberatelyWrong) {
  CheckpointSpec spec;
  spec.entries.push_back({"uid-9", "c", "example.com/gpu", {{-1, {"a", "b"}}}, std::nullopt});
  spec.registered["example.com/gpu"] = {"a", "b", "c"};
  auto same = [](const std::string& ref) { return ref; };
  checkpoint::VerifyResult v = checkpoint::Verify(*EncodeCheckpointSpec(spec, same));
  EXPECT_TRUE(v.valid);
  EXPECT_EQ(v.format, checkpoint::FormatVersion::kV2);
  ASSERT_TRUE(v.checkpoint.data.pod_device_entries.has_value());
  EXPECT_EQ(v.checkpoint.data.pod_device_entries->at(0).pod_uid, "uid-9");

  spec.v1 = true;
  v = checkpoint::Verify(*EncodeCheckpointSpec(spec, same));
  EXPECT_TRUE(v.valid);
  EXPECT_EQ(v.format, checkpoint::FormatVersion::kV1);

  spec.v1 = false;
  spec.wrong_checksum = true;
  v = checkpoint::Verify(*EncodeCheckpointSpec(spec, same));
  EXPECT_TRUE(v.parsed);
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(v.stored, (v.computed + 1) & 0xffffffffu);

  spec.entries[0].alloc_resp = "not base64!";
  EXPECT_THAT(std::string(EncodeCheckpointSpec(spec, same).status().message()),
              HasSubstr("is not base64"));
}

}  // namespace
}  // namespace devmgr::scenario
