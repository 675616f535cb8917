// Issue 12: per-version behaviour over real sockets — 1.37's per-socket
// endpoints (kubernetes PR #135437) against 1.34-1.36's resource-keyed
// clients (#121994), and DRA-backed extended resources per version.
#include <string>

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node/pod_manager.h"
#include "tests/integration/test_env.h"
#include "transport/transport_testutil.h"

namespace devmgr::testutil {
namespace {

constexpr char kRes[] = "example.com/res";

std::string Plugin(const std::string& socket, int devices, const std::string& prefix = "d") {
  std::string y = std::string("resource: ") + kRes + "\nsocket: " + socket + "\ndevices:\n";
  for (int i = 0; i < devices; ++i) y += "  - {id: " + prefix + std::to_string(i) + "}\n";
  return y;
}

class VersionsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void StartNode(const std::string& version) {
    node_ = MakeNode(dir_.path(), &clock_, version, &changes_);
    pods_ = std::make_unique<node::PodManager>(node_.get());
    ASSERT_OK(node_->Start(pods_->MakeStartOptions(false)));
  }
  bool Counts(int64_t capacity, int64_t allocatable) {
    return changes_.WaitFor([&] {
      auto s = Find(*node_, kRes);
      return s.capacity == capacity && s.allocatable == allocatable;
    });
  }
  std::unique_ptr<plugin::SamplePlugin> Start(const std::string& yaml) {
    auto p = MakePlugin(yaml, dir_.path());
    EXPECT_OK(p->Start());
    EXPECT_TRUE(p->WaitForRegistered(absl::Seconds(10)));
    EXPECT_TRUE(p->WaitForCalls("ListAndWatch", 1, absl::Seconds(10)));
    return p;
  }
  grpc::Status RegisterAgain(const std::string& socket) {
    return transport::testutil::CallRegister(dir_.path() + "/kubelet.sock", "v1beta1", socket,
                                             kRes);
  }

  TempDir dir_;
  FakeClock clock_;
  ChangeSignal changes_;
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<node::PodManager> pods_;
};

// maxSurge: the new plugin registers the resource on another socket, then
// the old plugin goes away.
TEST_P(VersionsTest, MaxSurgeRollout) {
  const std::string v = GetParam();
  const bool per_socket = v == "1.37";
  StartNode(v);
  auto p1 = Start(Plugin("old.sock", 2));
  ASSERT_TRUE(Counts(2, 2));
  auto p2 = Start(Plugin("new.sock", 2));
  EXPECT_EQ(Find(*node_, kRes).endpoint_socket, dir_.path() + "/new.sock");
  EXPECT_EQ(node_->server()->TrackedClientCount(), per_socket ? 2u : 1u);
  p1->Stop();
  if (per_socket) {
    ASSERT_TRUE(changes_.WaitFor([&] { return node_->server()->RunningStreamCount() == 1; }));
    EXPECT_TRUE(Counts(2, 2));
    EXPECT_FALSE(Find(*node_, kRes).stopped);
    ASSERT_TRUE(p2->SetHealth("d0", "Unhealthy"));
    EXPECT_TRUE(Counts(2, 1));
  } else {
    // kubernetes#121994, still in 1.34-1.36.
    ASSERT_TRUE(Counts(2, 0));
    EXPECT_TRUE(Find(*node_, kRes).stopped);
  }
}

// A second Register for a (resource, socket) pair that is connected.
TEST_P(VersionsTest, SecondRegisterOnAConnectedSocket) {
  const std::string v = GetParam();
  StartNode(v);
  auto p = Start(Plugin("p.sock", 2));
  ASSERT_TRUE(Counts(2, 2));
  const grpc::Status st = RegisterAgain("p.sock");
  if (v == "1.37") {
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNKNOWN);
    EXPECT_EQ(st.error_message(), "device plugin already connected: " + dir_.path() + "/p.sock");
    // GetDevicePluginOptions was asked before the refusal.
    EXPECT_EQ(ReceivedCalls(*p, "GetDevicePluginOptions").size(), 2u);
    // The endpoint stays connected and its devices healthy.
    EXPECT_TRUE(Counts(2, 2));
    EXPECT_FALSE(Find(*node_, kRes).stopped);
  } else {
    // Before 1.37 the new client simply replaces the old one.
    EXPECT_OK(st) << st.error_message();
    EXPECT_TRUE(p->WaitForCalls("ListAndWatch", 2, absl::Seconds(10)));
    EXPECT_TRUE(Counts(2, 2));
  }
}

INSTANTIATE_TEST_SUITE_P(Profiles, VersionsTest, ::testing::Values("1.34", "1.35", "1.36", "1.37"),
                         [](const auto& info) {
                           std::string n = "v" + info.param;
                           for (char& c : n) {
                             if (c == '.') c = '_';
                           }
                           return n;
                         });

class PerSocketTest : public VersionsTest {};

TEST_F(PerSocketTest, NewestEndpointServesAllocateAndASurvivorIsPromoted) {
  StartNode("1.37");
  auto p1 = Start(Plugin("a.sock", 2));
  ASSERT_TRUE(Counts(2, 2));
  auto p2 = Start(Plugin("b.sock", 3));
  ASSERT_TRUE(Counts(3, 3));  // b's list arrived last
  // The newest (b) is the primary: Allocate goes there.
  AdmitOrFail(*pods_, MakePod("one", {"c:1"}, "default", kRes));
  EXPECT_EQ(ReceivedCalls(*p2, "Allocate").size(), 1u);
  EXPECT_EQ(ReceivedCalls(*p1, "Allocate").size(), 0u);
  // Any endpoint's list replaces the whole set (last writer wins).
  ASSERT_TRUE(p1->SetHealth("d1", "Unhealthy"));
  EXPECT_TRUE(Counts(2, 1));
  // The primary goes: a is promoted and the devices stay as they are.
  p2->Stop();
  ASSERT_TRUE(changes_.WaitFor(
      [&] { return Find(*node_, kRes).endpoint_socket == dir_.path() + "/a.sock"; }));
  EXPECT_FALSE(Find(*node_, kRes).stopped);
  EXPECT_TRUE(Counts(2, 1));
  ASSERT_TRUE(p1->SetHealth("d1", "Healthy"));
  EXPECT_TRUE(Counts(2, 2));
  AdmitOrFail(*pods_, MakePod("two", {"c:1"}, "default", kRes));
  EXPECT_EQ(ReceivedCalls(*p1, "Allocate").size(), 1u);
  // The last endpoint goes: now the devices are unhealthy.
  p1->Stop();
  EXPECT_TRUE(Counts(2, 0));
  EXPECT_TRUE(Find(*node_, kRes).stopped);
}

// DRAExtendedResource: a limit mapped to a claim in the pod's status skips
// the device manager while the gate is on (default on from 1.36).
class DraExtendedTest : public VersionsTest {
 protected:
  pod::Pod MappedPod() {
    const std::string y =
        std::string(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: dra, namespace: default}\n"
            "spec:\n  containers:\n  - name: c\n    image: busybox\n"
            "    resources:\n      limits: {") +
        kRes +
        ": 1}\nstatus:\n  extendedResourceClaimStatus:\n"
        "    resourceClaimName: dra-claim\n    requestMappings:\n"
        "    - {containerName: c, resourceName: " +
        kRes + ", requestName: container-0-request-0}\n";
    auto p = pod::ParsePodManifest(y, "dra.yaml");
    EXPECT_OK(p);
    return p.ok() ? *p : pod::Pod{};
  }
};

TEST_F(DraExtendedTest, SkippedPerVersionAndGate) {
  struct Case {
    std::string version;
    std::string gates;
    bool skipped;
  };
  for (const Case& c : std::vector<Case>{{"1.34", "", false},
                                         {"1.35", "", false},
                                         {"1.35", "DRAExtendedResource=true", true},
                                         {"1.36", "", true},
                                         {"1.36", "DRAExtendedResource=false", false},
                                         {"1.37", "", true}}) {
    SCOPED_TRACE(c.version + " " + c.gates);
    TempDir dir;
    node::NodeOptions o;
    o.plugin_dir = dir.path();
    o.profile = *ProfileForVersion(c.version);
    ASSERT_OK(o.profile.gates.Set(c.gates));
    o.clock = &clock_;
    o.fsync = false;
    auto n = std::make_unique<node::Node>(o);
    ChangeSignal changes;
    n->manager().SetChangeCallback([&changes] { changes.Notify(); });
    node::PodManager pods(n.get());
    ASSERT_OK(n->Start(pods.MakeStartOptions(false)));
    auto p = MakePlugin(Plugin("p.sock", 2), dir.path());
    ASSERT_OK(p->Start());
    ASSERT_TRUE(changes.WaitFor([&] { return Find(*n, kRes).allocatable == 2; }));
    const pod::Pod pod = MappedPod();
    node::PodRecord r = AdmitOrFail(pods, pod);
    EXPECT_EQ(ReceivedCalls(*p, "Allocate").size(), c.skipped ? 0u : 1u);
    EXPECT_EQ(ContainerDevices(*n, pod.uid, "c", kRes).size(), c.skipped ? 0u : 1u);
    p->Stop();
    n->Stop();
  }
}

TEST(FeatureGateLockTest, GaGatesAreLocked) {
  Profile p = *ProfileForVersion("1.37");
  EXPECT_EQ(p.gates.Set("DRAExtendedResource=false").message(),
            "cannot set feature gate DRAExtendedResource to false, feature is locked to true");
  Profile q = *ProfileForVersion("1.33");
  EXPECT_EQ(q.gates.Set("DRAExtendedResource=true").message(),
            "unrecognized feature gate: DRAExtendedResource");
}

}  // namespace
}  // namespace devmgr::testutil
