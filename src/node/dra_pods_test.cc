// DraPods over a store and a DRA manager with fake drivers: a pod whose
// manifest names a ResourceClaimTemplate gets its claim (named as the
// resource claim controller names it), allocated from the node's slices,
// reserved and prepared; its container gets the driver's CDI IDs; deletion
// unprepares and releases; failures reject the pod with the kubelet's texts.
#include "node/dra_pods.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "apiserver/resource_type.h"
#include "common/clock.h"
#include "common/status_testutil.h"
#include "common/temp_dir_testutil.h"
#include "dra/driver_calls.h"
#include "gtest/gtest.h"
#include "pod/manifest_parser.h"

namespace devmgr::node {
namespace {

using nlohmann::json;

constexpr char kDriver[] = "gpu.example.com";

class FakeDrivers : public dra::DriverCalls {
 public:
  absl::StatusOr<std::map<std::string, dra::PrepareResult>> Prepare(
      const std::string& driver, const std::vector<dra::ClaimRef>& claims) override {
    absl::MutexLock l(&mu);
    if (!prepare_status.ok()) return prepare_status;
    std::map<std::string, dra::PrepareResult> out;
    for (const dra::ClaimRef& c : claims) {
      prepared.insert(c.uid);
      dra::PreparedDevice d;
      d.pool = "node-1";
      d.device = "gpu-0";
      d.cdi_device_ids = {"gpu.example.com/gpu=" + c.name};
      out[c.uid].devices.push_back(d);
    }
    return out;
  }
  absl::StatusOr<std::map<std::string, std::string>> Unprepare(
      const std::string& driver, const std::vector<dra::ClaimRef>& claims) override {
    absl::MutexLock l(&mu);
    std::map<std::string, std::string> out;
    for (const dra::ClaimRef& c : claims) {
      prepared.erase(c.uid);
      out[c.uid] = "";
    }
    return out;
  }
  bool IsRegistered(const std::string& driver) const override { return driver == kDriver; }

  mutable absl::Mutex mu;
  absl::Status prepare_status;
  std::set<std::string> prepared;
};

constexpr char kPod[] = R"(apiVersion: v1
kind: Pod
metadata:
  name: pod0
  namespace: dra-tutorial
spec:
  containers:
  - name: ctr0
    image: ubuntu:24.04
    resources:
      claims:
      - name: gpu
  - name: ctr1
    image: ubuntu:24.04
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: single-gpu
)";

class DraPodsTest : public testing::Test {
 protected:
  void SetUp() override {
    Create(
        apiserver::DeviceClasses(), "",
        {{"metadata", {{"name", "gpu.example.com"}}},
         {"spec",
          {{"selectors", {{{"cel", {{"expression", "device.driver == 'gpu.example.com'"}}}}}}}}});
    Create(
        apiserver::ResourceClaimTemplates(), "dra-tutorial",
        {{"metadata", {{"name", "single-gpu"}, {"namespace", "dra-tutorial"}}},
         {"spec",
          {{"spec",
            {{"devices",
              {{"requests",
                {{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu.example.com"}}}}}}}}}}}}});
    Create(apiserver::ResourceSlices(), "",
           {{"metadata", {{"name", "node-1-gpu"}}},
            {"spec",
             {{"driver", kDriver},
              {"nodeName", "node-1"},
              {"pool", {{"name", "node-1"}, {"generation", 0}, {"resourceSliceCount", 1}}},
              {"devices", {{{"name", "gpu-0"}}}}}}});
    ASSERT_OK(manager_.Start());
  }
  void Create(const apiserver::ResourceType& type, const std::string& ns, const json& obj) {
    apiserver::ApiOr<json> created = store_.Create(type, ns, obj);
    ASSERT_TRUE(created.ok()) << created.error->message;
  }
  std::vector<json> Claims() {
    apiserver::ApiOr<apiserver::Store::ListResult> l =
        store_.List(apiserver::ResourceClaims(), "dra-tutorial", apiserver::FieldSelector{});
    return l.ok() ? l.value.items : std::vector<json>{};
  }
  pod::Pod MakePod() {
    absl::StatusOr<pod::Pod> p = pod::ParsePodManifest(kPod, "pod0.yaml");
    EXPECT_OK(p);
    return p.ok() ? *p : pod::Pod{};
  }

  FakeClock clock_;
  apiserver::Store store_{clock_};
  FakeDrivers drivers_;
  devmgr::testutil::TempDir dir_;
  dra::Manager manager_{&drivers_, {.state_dir = dir_.path(), .kubelet_minor = 37, .fsync = false}};
  DraPods pods_{&store_, "node-1", &manager_};
};

TEST_F(DraPodsTest, TemplateClaimIsCreatedAllocatedReservedAndPrepared) {
  const pod::Pod p = MakePod();
  const topology::AdmitResult r = pods_.Prepare(p);
  ASSERT_TRUE(r.admitted) << r.reason << ": " << r.message;
  const std::vector<json> claims = Claims();
  ASSERT_EQ(claims.size(), 1u);
  const json& claim = claims[0];
  const std::string name = claim["metadata"]["name"];
  EXPECT_EQ(name.rfind("pod0-gpu-", 0), 0u) << name;
  EXPECT_EQ(claim["status"]["allocation"]["devices"]["results"][0]["device"], "gpu-0");
  EXPECT_EQ(claim["status"]["reservedFor"][0]["uid"], p.uid);
  const std::string uid = claim["metadata"]["uid"];
  EXPECT_TRUE(manager_.ClaimInfos().at(uid).prepared);
  EXPECT_EQ(pods_.ContainerCdiIds(p.uid, "ctr0"),
            std::vector<std::string>{"gpu.example.com/gpu=" + name});
  EXPECT_TRUE(pods_.ContainerCdiIds(p.uid, "ctr1").empty());
  EXPECT_EQ(pods_.PodUids(), std::vector<std::string>{p.uid});

  ASSERT_OK(pods_.Unprepare(p.uid));
  EXPECT_TRUE(manager_.ClaimInfos().empty());
  EXPECT_TRUE(drivers_.prepared.empty());
  EXPECT_TRUE(Claims().empty());  // made for the pod, deleted with it
  EXPECT_TRUE(pods_.PodUids().empty());
}

// What the PodResources API lists: the whole claim for the container that
// names it, nothing for the other one or for a pod the node does not know.
TEST_F(DraPodsTest, ContainerClaimInfosAreTheCachedClaims) {
  const pod::Pod p = MakePod();
  ASSERT_TRUE(pods_.Prepare(p).admitted);
  absl::StatusOr<std::vector<dra::ClaimInfoState>> infos = pods_.ContainerClaimInfos(p.uid, "ctr0");
  ASSERT_OK(infos);
  ASSERT_EQ(infos->size(), 1u);
  const std::string uid = Claims()[0]["metadata"]["uid"];
  EXPECT_EQ(infos->front(), manager_.ClaimInfos().at(uid).state);
  EXPECT_EQ(infos->front().namespace_, "dra-tutorial");
  EXPECT_TRUE(pods_.ContainerClaimInfos(p.uid, "ctr1")->empty());
  EXPECT_TRUE(pods_.ContainerClaimInfos("no-such-pod", "ctr0")->empty());

  ASSERT_OK(pods_.Unprepare(p.uid));
  EXPECT_TRUE(pods_.ContainerClaimInfos(p.uid, "ctr0")->empty());
}

// A pod gone while the kubelet is down: its claims are released in the API
// (the controller) but no driver is called and the cache keeps them; a
// later kubelet's reconcile (ReconcileOrphans) unprepares them from the
// cache, and leaves the claims of active pods and of pods it knows alone.
TEST_F(DraPodsTest, ReleaseCallsNoDriverAndReconcileUnpreparesTheOrphans) {
  const pod::Pod p = MakePod();
  ASSERT_TRUE(pods_.Prepare(p).admitted);
  ASSERT_OK(pods_.Release(p.uid));
  EXPECT_TRUE(Claims().empty());  // made for the pod, deleted with it
  EXPECT_TRUE(pods_.PodUids().empty());
  EXPECT_EQ(drivers_.prepared.size(), 1u);
  EXPECT_EQ(manager_.ClaimInfos().size(), 1u);
  EXPECT_OK(pods_.Release(p.uid));  // unknown now: nothing to do

  EXPECT_TRUE(pods_.ReconcileOrphans({p.uid}).empty());  // active: kept
  EXPECT_EQ(drivers_.prepared.size(), 1u);
  EXPECT_EQ(pods_.ReconcileOrphans({}), std::vector<std::string>{p.uid});
  EXPECT_TRUE(drivers_.prepared.empty());
  EXPECT_TRUE(manager_.ClaimInfos().empty());

  // A pod this object knows is Unprepare's, not the orphans' pass.
  ASSERT_TRUE(pods_.Prepare(MakePod()).admitted);
  EXPECT_TRUE(pods_.ReconcileOrphans({}).empty());
  EXPECT_EQ(drivers_.prepared.size(), 1u);
}

TEST_F(DraPodsTest, PodWithoutClaimsPassesUntouched) {
  absl::StatusOr<pod::Pod> p = pod::ParsePodManifest(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: plain}\n"
      "spec: {containers: [{name: c}]}\n",
      "plain.yaml");
  ASSERT_OK(p);
  EXPECT_TRUE(pods_.Prepare(*p).admitted);
  EXPECT_TRUE(pods_.PodUids().empty());
  EXPECT_OK(pods_.Unprepare(p->uid));
}

TEST_F(DraPodsTest, FailedPrepareRejectsWithTheKubeletsEventText) {
  drivers_.prepare_status = absl::UnavailableError("rpc error: code = Unavailable desc = gone");
  const pod::Pod p = MakePod();
  const topology::AdmitResult r = pods_.Prepare(p);
  EXPECT_FALSE(r.admitted);
  EXPECT_EQ(r.reason, kDraPrepareFailed);
  EXPECT_EQ(r.message,
            "Failed to prepare dynamic resources: prepare dynamic resources: "
            "NodePrepareResources: rpc error: code = Unavailable desc = gone");
  // Deleting the rejected pod releases its claim.
  ASSERT_OK(pods_.Unprepare(p.uid));
  EXPECT_TRUE(Claims().empty());
}

TEST_F(DraPodsTest, NoDeviceLeftIsASchedulingFailure) {
  const pod::Pod p = MakePod();
  ASSERT_TRUE(pods_.Prepare(p).admitted);
  absl::StatusOr<pod::Pod> other = pod::ParsePodManifest(
      std::string(kPod).replace(std::string(kPod).find("pod0"), 4, "pod1"), "pod1.yaml");
  ASSERT_OK(other);
  const topology::AdmitResult r = pods_.Prepare(*other);
  EXPECT_FALSE(r.admitted);
  EXPECT_EQ(r.reason, kDraSchedulingFailed);
  EXPECT_NE(r.message.find("cannot allocate all claims on node node-1"), std::string::npos)
      << r.message;
}

}  // namespace
}  // namespace devmgr::node
