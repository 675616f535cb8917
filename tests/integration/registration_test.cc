// Issue 2 end to end: the emulated kubelet (node::Node) against the
// reference plugin, in-process, over real unix sockets in temp dirs.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/test_env.h"

namespace devmgr::testutil {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kFourGpus[] = R"(
resource: example.com/gpu
devices:
  - {id: gpu-0, numa: [0]}
  - {id: gpu-1, numa: [0]}
  - {id: gpu-2, numa: [1]}
  - {id: gpu-3, numa: [1]}
)";

// The RPCs the plugin served (its own Register call left out), in order.
std::vector<std::string> ServedCalls(const plugin::SamplePlugin& p) {
  std::vector<std::string> methods;
  for (const auto& c : p.CallLog()) {
    if (c.method != "Register") methods.push_back(c.method);
  }
  return methods;
}

class RegistrationTest : public ::testing::Test {
 protected:
  void StartNode(const std::string& version = "1.32", const std::string& registry = "",
                 int max_recv = 4 * 1024 * 1024) {
    node_ = MakeNode(dir_.path(), &clock_, version, &changes_, registry, max_recv);
    ASSERT_OK(node_->Start());
  }
  std::unique_ptr<plugin::SamplePlugin> StartPlugin(const std::string& yaml,
                                                    const std::string& registry = "") {
    auto p = MakePlugin(yaml, dir_.path(), registry);
    EXPECT_OK(p->Start());
    return p;
  }
  bool WaitAllocatable(const std::string& r, int64_t capacity, std::optional<int64_t> alloc) {
    return changes_.WaitFor([&] {
      auto s = Find(*node_, r);
      return s.resource_name == r && s.capacity == capacity && s.allocatable == alloc;
    });
  }
  bool WaitRegistrationError(plugin::SamplePlugin& p) {
    return changes_.WaitFor([&] { return !p.last_registration_error().empty(); });
  }

  TempDir dir_;
  FakeClock clock_;
  ChangeSignal changes_;
  std::unique_ptr<node::Node> node_;
};

TEST_F(RegistrationTest, PluginRegistersAndItsDevicesAreTracked) {
  StartNode();
  auto p = StartPlugin(kFourGpus);
  ASSERT_TRUE(p->WaitForRegistered(absl::Seconds(10)));
  ASSERT_TRUE(WaitAllocatable("example.com/gpu", 4, 4));
  auto s = Find(*node_, "example.com/gpu");
  EXPECT_THAT(s.healthy, ElementsAre("gpu-0", "gpu-1", "gpu-2", "gpu-3"));
  EXPECT_EQ(s.endpoint_socket, dir_.path() + "/example.com-gpu.sock");
  EXPECT_FALSE(s.stopped);
  ASSERT_EQ(s.devices.size(), 4u);
  EXPECT_EQ(s.devices[2].numa_nodes, std::vector<int64_t>{1});
  // The kubelet calls exactly GetDevicePluginOptions (inside Register), then
  // ListAndWatch.
  ASSERT_TRUE(p->WaitForCalls("ListAndWatch", 1, absl::Seconds(5)));
  EXPECT_THAT(ServedCalls(*p), ElementsAre("GetDevicePluginOptions", "ListAndWatch"));
  auto res = node_->UpdateNodeStatus();
  EXPECT_EQ(res.capacity["example.com/gpu"], 4);
  EXPECT_EQ(res.allocatable["example.com/gpu"], 4);
  EXPECT_EQ(node_->server()->RegistrationCount("example.com/gpu"), 1);
}

TEST_F(RegistrationTest, UnsupportedVersionIsRejectedWithTheKubeletsText) {
  StartNode();
  auto p = StartPlugin(std::string(kFourGpus) + "faults:\n  register: {version: v1alpha}\n");
  ASSERT_TRUE(WaitRegistrationError(*p));
  EXPECT_EQ(p->last_registration_error(),
            "requested API version \"v1alpha\" is not supported by kubelet. Supported version "
            "is [\"v1beta1\"]");
  EXPECT_FALSE(Has(*node_, "example.com/gpu"));
  // Counted before validation, as the kubelet's metric is.
  EXPECT_EQ(node_->server()->RegistrationCount("example.com/gpu"), 1);
}

TEST_F(RegistrationTest, InvalidResourceNamesAreRejectedWithTheKubeletsText) {
  StartNode();
  for (const std::string name : {"gpu", "kubernetes.io/gpu", "requests.example.com/x",
                                 "Example.com/gpu", "example.com/a/b"}) {
    SCOPED_TRACE(name);
    auto p =
        StartPlugin(std::string(kFourGpus) + "faults:\n  register: {resource: \"" + name + "\"}\n");
    ASSERT_TRUE(WaitRegistrationError(*p));
    EXPECT_EQ(p->last_registration_error(), "the ResourceName \"" + name + "\" is invalid");
    p->Stop();
  }
  EXPECT_THAT(node_->manager().Snapshot(), IsEmpty());
}

TEST_F(RegistrationTest, DialBackFailureFailsTheRegistration) {
  StartNode();
  // A plugin that registers before it serves (a real bug): the kubelet's
  // blocking dial back times out.
  auto p = StartPlugin(std::string(kFourGpus) +
                       "faults:\n  register: {endpoint: nobody-listens.sock}\n");
  ASSERT_TRUE(WaitRegistrationError(*p));
  EXPECT_EQ(p->last_registration_error(),
            "failed to dial device plugin: context deadline exceeded");
  EXPECT_FALSE(Has(*node_, "example.com/gpu"));
}

TEST_F(RegistrationTest, OptionsFailureMeansTheResourceNeverAppears) {
  StartNode();
  auto p = StartPlugin(std::string(kFourGpus) +
                       "faults:\n  get_device_plugin_options: {error: {code: 2, message: boom}}\n");
  ASSERT_TRUE(WaitRegistrationError(*p));
  EXPECT_EQ(p->last_registration_error(),
            "failed to get device plugin options: rpc error: code = Unknown desc = boom");
  EXPECT_FALSE(Has(*node_, "example.com/gpu"));
  EXPECT_THAT(ServedCalls(*p), ElementsAre("GetDevicePluginOptions"));
}

TEST_F(RegistrationTest, ListAndWatchFailingAtOnceLeavesTheResourceAtZeroAndIsNeverRetried) {
  StartNode();
  auto p = StartPlugin(std::string(kFourGpus) +
                       "faults:\n  list_and_watch: {error: {code: 13, message: broken}}\n");
  ASSERT_TRUE(p->WaitForRegistered(absl::Seconds(10)));
  ASSERT_TRUE(changes_.WaitFor([&] { return Find(*node_, "example.com/gpu").stopped; }));
  auto s = Find(*node_, "example.com/gpu");
  EXPECT_EQ(s.capacity, 0);
  auto res = node_->UpdateNodeStatus();
  EXPECT_EQ(res.capacity["example.com/gpu"], 0);
  EXPECT_EQ(res.allocatable["example.com/gpu"], 0);
  int list_and_watch = 0;
  for (const auto& c : p->CallLog()) list_and_watch += c.method == "ListAndWatch";
  EXPECT_EQ(list_and_watch, 1);
}

TEST_F(RegistrationTest, DisconnectKeepsCapacityUntilTheGracePeriodEnds) {
  StartNode();
  auto p = StartPlugin(kFourGpus);
  ASSERT_TRUE(WaitAllocatable("example.com/gpu", 4, 4));
  p->Stop();
  ASSERT_TRUE(WaitAllocatable("example.com/gpu", 4, 0));
  auto res = node_->UpdateNodeStatus();
  EXPECT_EQ(res.capacity["example.com/gpu"], 4);
  EXPECT_EQ(res.allocatable["example.com/gpu"], 0);
  clock_.Advance(absl::Minutes(5));
  res = node_->UpdateNodeStatus();
  EXPECT_EQ(res.capacity["example.com/gpu"], 4) << "exactly 5 min is not yet expired";
  clock_.Advance(absl::Seconds(1));
  res = node_->UpdateNodeStatus();
  // Removed: the node keeps the resource at 0.
  EXPECT_EQ(res.capacity["example.com/gpu"], 0);
  EXPECT_EQ(res.allocatable["example.com/gpu"], 0);
  EXPECT_FALSE(Find(*node_, "example.com/gpu").has_endpoint);
}

TEST_F(RegistrationTest, HealthFlipsChangeAllocatableNotCapacity) {
  StartNode();
  auto p = StartPlugin(kFourGpus);
  ASSERT_TRUE(WaitAllocatable("example.com/gpu", 4, 4));
  ASSERT_TRUE(p->SetHealth("gpu-1", "Unhealthy"));
  ASSERT_TRUE(WaitAllocatable("example.com/gpu", 4, 3));
  EXPECT_THAT(Find(*node_, "example.com/gpu").unhealthy, ElementsAre("gpu-1"));
  ASSERT_TRUE(p->SetHealth("gpu-1", "Healthy"));
  ASSERT_TRUE(WaitAllocatable("example.com/gpu", 4, 4));
}

TEST_F(RegistrationTest, OversizeListKillsTheStreamAndAHigherLimitAcceptsIt) {
  // ~120k devices with 40-byte ids: about 5.5 MiB serialized.
  const std::string big = R"(
resource: example.com/nic
devices:
  - {count: 120000, id_prefix: "a-rather-long-device-identifier-000000-"}
)";
  StartNode();
  auto p = StartPlugin(big);
  ASSERT_TRUE(p->WaitForRegistered(absl::Seconds(10)));
  ASSERT_TRUE(changes_.WaitFor([&] { return Find(*node_, "example.com/nic").stopped; }));
  EXPECT_EQ(Find(*node_, "example.com/nic").capacity, 0);
  p->Stop();
  node_->Stop();

  StartNode("1.32", "", 16 * 1024 * 1024);
  auto p2 = StartPlugin(big);
  ASSERT_TRUE(changes_.WaitFor([&] { return Find(*node_, "example.com/nic").capacity == 120000; }));
}

TEST_F(RegistrationTest, DeviceIdsAreArbitraryBytes) {
  // Real plugins send IDs with control bytes, NUL, and even invalid UTF-8,
  // which the kubelet's gogo-generated code accepts as is.
  StartNode();
  auto p = StartPlugin(kFourGpus);
  ASSERT_TRUE(WaitAllocatable("example.com/gpu", 4, 4));
  const std::string odd[] = {std::string("ctl\x01\x1f"), std::string("nul\0x", 5),
                             std::string("bad\xff\xfeutf8"), std::string("eq=sign")};
  std::vector<plugin::DeviceConfig> devices;
  for (const std::string& id : odd) devices.push_back({.id = id});
  std::vector<std::string> want(std::begin(odd), std::end(odd));
  std::sort(want.begin(), want.end());
  p->SetDevices(devices);
  EXPECT_TRUE(changes_.WaitFor([&] { return Find(*node_, "example.com/gpu").healthy == want; }))
      << ::testing::PrintToString(Find(*node_, "example.com/gpu").healthy);
  EXPECT_EQ(Find(*node_, "example.com/gpu").allocatable, 4);
}

TEST_F(RegistrationTest, PluginWatcherRegistration) {
  TempDir registry;
  StartNode("1.32", registry.path());
  auto p = StartPlugin(std::string(kFourGpus) + "registration: {mode: plugins-registry}\n",
                       registry.path());
  ASSERT_TRUE(p->WaitForRegistered(absl::Seconds(15)));
  ASSERT_TRUE(WaitAllocatable("example.com/gpu", 4, 4));
  // Not counted by the registration metric on this path.
  EXPECT_EQ(node_->server()->RegistrationCount("example.com/gpu"), 0);
}

}  // namespace
}  // namespace devmgr::testutil
