// The DRA manager over a fake DriverCalls: batching per driver, shared and
// multi-driver claims, the kubelet's error texts, CDI IDs per container, and
// the checkpoint bytes against the files the kubelet's own DRA manager wrote
// (tests/testdata/dra_manager_state/oracle-*.json, docs/profiles.md "DRA").
#include "dra/manager.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "checkpoint/file_store.h"
#include "common/fs_testutil.h"
#include "common/memory_fs.h"
#include "common/source_dir_testutil.h"
#include "common/status_testutil.h"
#include "common/temp_dir_testutil.h"
#include "dra/checkpoint.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::dra {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kGpu[] = "gpu.example.com";

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Golden(const std::string& name) {
  return Slurp(devmgr::testutil::SourcePath("tests/testdata/dra_manager_state/") + name);
}

// Records every call; answers Prepare with the devices set per driver and
// claim UID (none by default), after `edit_prepare` had its say.
class FakeDrivers : public DriverCalls {
 public:
  struct Call {
    std::string op, driver;
    std::vector<std::string> claim_names;
  };

  absl::StatusOr<std::map<std::string, PrepareResult>> Prepare(
      const std::string& driver, const std::vector<ClaimRef>& claims) override {
    calls.push_back(Record("prepare", driver, claims));
    if (!prepare_status.ok()) return prepare_status;
    std::map<std::string, PrepareResult> out;
    for (const ClaimRef& c : claims) out[c.uid].devices = devices[{driver, c.uid}];
    if (edit_prepare) edit_prepare(driver, out);
    return out;
  }

  absl::StatusOr<std::map<std::string, std::string>> Unprepare(
      const std::string& driver, const std::vector<ClaimRef>& claims) override {
    calls.push_back(Record("unprepare", driver, claims));
    std::map<std::string, std::string> out;
    for (const ClaimRef& c : claims) out[c.uid] = unprepare_errors[c.uid];
    return out;
  }

  bool IsRegistered(const std::string& driver) const override {
    return registered.count(driver) > 0;
  }

  std::set<std::string> registered = {kGpu, "a.example.com", "b.example.com"};
  std::map<std::pair<std::string, std::string>, std::vector<PreparedDevice>> devices;
  std::function<void(const std::string&, std::map<std::string, PrepareResult>&)> edit_prepare;
  absl::Status prepare_status;
  std::map<std::string, std::string> unprepare_errors;
  std::vector<Call> calls;

 private:
  static Call Record(const char* op, const std::string& driver,
                     const std::vector<ClaimRef>& claims) {
    Call call{op, driver, {}};
    for (const ClaimRef& c : claims) call.claim_names.push_back(c.name);
    return call;
  }
};

// (request, driver, device) of an allocation result; the pool is pool-0.
using Result = std::tuple<std::string, std::string, std::string>;

json MakeClaim(const std::string& name, const std::vector<Result>& results,
               const std::vector<std::string>& pod_uids) {
  json claim = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}}}};
  json r = json::array();
  for (const auto& [request, driver, device] : results) {
    r.push_back({{"request", request}, {"driver", driver}, {"pool", "pool-0"}, {"device", device}});
  }
  claim["status"]["allocation"]["devices"]["results"] = r;
  json reserved = json::array();
  for (const std::string& uid : pod_uids) {
    reserved.push_back({{"resource", "pods"}, {"name", "p"}, {"uid", uid}});
  }
  claim["status"]["reservedFor"] = reserved;
  return claim;
}

// A pod `name` (uid "uid-<name>") with pod claims named as their
// ResourceClaims and containers {name, [(claim, request)]}.
using ContainerSpec = std::pair<std::string, std::vector<std::pair<std::string, std::string>>>;
json MakePod(const std::string& name, const std::vector<std::string>& claims,
             const std::vector<ContainerSpec>& containers) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}}}};
  pod["spec"]["resourceClaims"] = json::array();
  for (const std::string& c : claims) {
    pod["spec"]["resourceClaims"].push_back({{"name", c}, {"resourceClaimName", c}});
  }
  pod["spec"]["containers"] = json::array();
  for (const auto& [cname, refs] : containers) {
    json list = json::array();
    for (const auto& [claim, request] : refs) {
      json ref = {{"name", claim}};
      if (!request.empty()) ref["request"] = request;
      list.push_back(ref);
    }
    pod["spec"]["containers"].push_back(
        {{"name", cname}, {"image", "x"}, {"resources", {{"claims", list}}}});
  }
  return pod;
}

PreparedDevice Dev(const std::string& device, std::vector<std::string> requests,
                   std::vector<std::string> cdi) {
  return PreparedDevice{std::move(requests), "pool-0", device, std::move(cdi), std::nullopt};
}

class ManagerTest : public testing::Test {
 protected:
  std::unique_ptr<Manager> NewManager(int minor = 37) {
    return std::make_unique<Manager>(&drivers_, ManagerOptions{dir_.path(), minor, false, nullptr});
  }
  std::string CheckpointBytes() const { return Slurp(dir_.Join(kCheckpointName)); }
  bool CheckpointExists() const { return std::filesystem::exists(dir_.Join(kCheckpointName)); }

  // The oracle's claim: uid-claim-1 of pod uid-pod-1, two devices of kGpu.
  void SetUpOracleClaim() {
    drivers_.devices[{kGpu, "uid-claim-1"}] = {
        Dev("dev-0", {"gpu-a"}, {"gpu.example.com/gpu=dev-0"}),
        Dev("dev-1", {"gpu-b"}, {"gpu.example.com/gpu=dev-1", "gpu.example.com/gpu=common"})};
    pod_ = MakePod("pod-1", {"claim-1"}, {{"ctr", {{"claim-1", ""}}}});
    claim_ =
        MakeClaim("claim-1", {{"gpu-a", kGpu, "dev-0"}, {"gpu-b", kGpu, "dev-1"}}, {"uid-pod-1"});
  }

  devmgr::testutil::TempDir dir_;
  FakeDrivers drivers_;
  json pod_, claim_;
};

TEST_F(ManagerTest, BatchesOneCallPerDriverInPodClaimOrder) {
  auto m = NewManager();
  const json pod = MakePod("p", {"c1", "c2", "c3"}, {{"ctr", {{"c1", ""}}}});
  const std::vector<json> claims = {
      MakeClaim("c1", {{"r", "a.example.com", "d1"}}, {"uid-p"}),
      MakeClaim("c2", {{"r", "a.example.com", "d2"}}, {"uid-p"}),
      MakeClaim("c3", {{"r", "a.example.com", "d3"}, {"s", "b.example.com", "d4"}}, {"uid-p"})};
  ASSERT_OK(m->PrepareResources(pod, claims));
  ASSERT_EQ(drivers_.calls.size(), 2u);
  EXPECT_EQ(drivers_.calls[0].driver, "a.example.com");
  EXPECT_THAT(drivers_.calls[0].claim_names, ElementsAre("c1", "c2", "c3"));
  EXPECT_EQ(drivers_.calls[1].driver, "b.example.com");
  EXPECT_THAT(drivers_.calls[1].claim_names, ElementsAre("c3"));
  const auto infos = m->ClaimInfos();
  ASSERT_EQ(infos.size(), 3u);
  for (const auto& [uid, info] : infos) {
    EXPECT_TRUE(info.prepared) << uid;
    EXPECT_EQ(info.state.pod_uids, std::set<std::string>{"uid-p"});
  }
  EXPECT_EQ(infos.at("uid-c3").state.driver_state->size(), 2u);

  // Prepared: a second prepare makes no call (profiles.md).
  ASSERT_OK(m->PrepareResources(pod, claims));
  EXPECT_EQ(drivers_.calls.size(), 2u);

  ASSERT_OK(m->UnprepareResources(pod));
  ASSERT_EQ(drivers_.calls.size(), 4u);
  EXPECT_EQ(drivers_.calls[2].op, "unprepare");
  EXPECT_THAT(drivers_.calls[2].claim_names, ElementsAre("c1", "c2", "c3"));
  EXPECT_THAT(drivers_.calls[3].claim_names, ElementsAre("c3"));
  EXPECT_THAT(m->ClaimInfos(), IsEmpty());
}

TEST_F(ManagerTest, SharedClaimIsPreparedOnceAndUnpreparedAfterTheLastPod) {
  auto m = NewManager();
  SetUpOracleClaim();
  const json pod2 = MakePod("pod-2", {"claim-1"}, {{"ctr", {{"claim-1", ""}}}});
  claim_["status"]["reservedFor"].push_back({{"resource", "pods"}, {"uid", "uid-pod-2"}});
  ASSERT_OK(m->PrepareResources(pod_, {claim_}));
  ASSERT_OK(m->PrepareResources(pod2, {claim_}));
  EXPECT_EQ(drivers_.calls.size(), 1u);
  EXPECT_EQ(m->ClaimInfos().at("uid-claim-1").state.pod_uids,
            (std::set<std::string>{"uid-pod-1", "uid-pod-2"}));

  ASSERT_OK(m->UnprepareResources(pod_));
  EXPECT_EQ(drivers_.calls.size(), 1u);
  EXPECT_EQ(m->ClaimInfos().at("uid-claim-1").state.pod_uids, std::set<std::string>{"uid-pod-2"});

  ASSERT_OK(m->UnprepareResources(pod2));
  ASSERT_EQ(drivers_.calls.size(), 2u);
  EXPECT_EQ(drivers_.calls[1].op, "unprepare");
  EXPECT_THAT(drivers_.calls[1].claim_names, ElementsAre("claim-1"));
  EXPECT_THAT(m->ClaimInfos(), IsEmpty());
  EXPECT_EQ(CheckpointBytes(), Golden("oracle-1.37-empty.json"));
}

// As the kubelet (prepareResources at v1.34.4 and v1.37.2): the pod's claims
// are added to the cache and checkpointed before any driver is called, so a
// driver's error leaves them recorded, not prepared, with no devices.
TEST_F(ManagerTest, PerClaimErrorLeavesTheClaimsRecordedNotPrepared) {
  auto m = NewManager();
  const json pod = MakePod("p", {"c1", "c2"}, {{"ctr", {{"c1", ""}}}});
  const std::vector<json> claims = {MakeClaim("c1", {{"r", kGpu, "d1"}}, {"uid-p"}),
                                    MakeClaim("c2", {{"r", kGpu, "d2"}}, {"uid-p"})};
  drivers_.edit_prepare = [](const std::string&, std::map<std::string, PrepareResult>& out) {
    out["uid-c2"].error = "device busy";
  };
  absl::Status s = m->PrepareResources(pod, claims);
  EXPECT_EQ(s.message(),
            "prepare dynamic resources: NodePrepareResources failed for ResourceClaim c2: device "
            "busy");
  std::map<std::string, ClaimInfo> infos = m->ClaimInfos();
  ASSERT_EQ(infos.size(), 2u);
  for (const auto& [uid, info] : infos) {
    EXPECT_FALSE(info.prepared) << uid;
    EXPECT_EQ(*info.state.pod_uids, std::set<std::string>{"uid-p"}) << uid;
  }
  absl::StatusOr<CheckpointData> file =
      ReadAndVerify(checkpoint::FileStore(dir_.path(), false), StateLayout::k137);
  ASSERT_OK(file);
  ASSERT_EQ(file->claim_info_state_list->size(), 2u);
  for (const ClaimInfoState& c : *file->claim_info_state_list) {
    EXPECT_FALSE(c.driver_state->at(kGpu).devices.has_value()) << c.claim_name;  // null
  }

  // Not prepared: the retry asks the driver again, for both claims.
  drivers_.edit_prepare = nullptr;
  ASSERT_OK(m->PrepareResources(pod, claims));
  ASSERT_EQ(drivers_.calls.size(), 2u);
  EXPECT_THAT(drivers_.calls[1].claim_names, ElementsAre("c1", "c2"));
}

TEST_F(ManagerTest, ResponseChecksUseTheKubeletsWords) {
  auto m = NewManager();
  SetUpOracleClaim();
  drivers_.edit_prepare = [](const std::string&, std::map<std::string, PrepareResult>& out) {
    out.clear();
  };
  EXPECT_EQ(m->PrepareResources(pod_, {claim_}).message(),
            "prepare dynamic resources: NodePrepareResources skipped 1 ResourceClaims");
  drivers_.edit_prepare = [](const std::string&, std::map<std::string, PrepareResult>& out) {
    out["uid-other"] = PrepareResult{};
  };
  EXPECT_EQ(m->PrepareResources(pod_, {claim_}).message(),
            "prepare dynamic resources: NodePrepareResources returned result for unknown claim "
            "UID uid-other");
  drivers_.edit_prepare = nullptr;
  drivers_.prepare_status = absl::UnavailableError("rpc error: code = Unavailable desc = gone");
  absl::Status s = m->PrepareResources(pod_, {claim_});
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "prepare dynamic resources: NodePrepareResources: rpc error: code = Unavailable desc "
            "= gone");
  ASSERT_EQ(m->ClaimInfos().size(), 1u);  // recorded before the call, not prepared
  EXPECT_FALSE(m->ClaimInfos().begin()->second.prepared);
}

TEST_F(ManagerTest, DriverNotRegisteredFailsBeforeAnyCall) {
  auto m = NewManager();
  SetUpOracleClaim();
  drivers_.registered.erase(kGpu);
  absl::Status s = m->PrepareResources(pod_, {claim_});
  EXPECT_EQ(s.message(), "prepare dynamic resources: DRA driver gpu.example.com is not registered");
  EXPECT_THAT(drivers_.calls, IsEmpty());
  EXPECT_THAT(m->ClaimInfos(), IsEmpty());
}

TEST_F(ManagerTest, ClaimNotReservedForThePodIsRefused) {
  auto m = NewManager();
  SetUpOracleClaim();
  claim_["status"]["reservedFor"] = json::array();
  EXPECT_EQ(m->PrepareResources(pod_, {claim_}).message(),
            "prepare dynamic resources: pod pod-1 (uid-pod-1) is not allowed to use "
            "ResourceClaim claim-1 (uid-claim-1)");
}

TEST_F(ManagerTest, SameNameWithAnotherUidIsRefused) {
  auto m = NewManager();
  SetUpOracleClaim();
  ASSERT_OK(m->PrepareResources(pod_, {claim_}));
  json replaced = claim_;
  replaced["metadata"]["uid"] = "uid-claim-1b";
  EXPECT_EQ(m->PrepareResources(pod_, {replaced}).message(),
            "prepare dynamic resources: old ResourceClaim with same name claim-1 and different "
            "UID uid-claim-1 still exists (previous pod force-deleted?!)");
}

TEST_F(ManagerTest, FailedUnprepareKeepsThePodsClaims) {
  auto m = NewManager();
  SetUpOracleClaim();
  ASSERT_OK(m->PrepareResources(pod_, {claim_}));
  const std::string before = CheckpointBytes();
  drivers_.unprepare_errors["uid-claim-1"] = "still in use";
  EXPECT_EQ(m->UnprepareResources(pod_).message(),
            "unprepare dynamic resources: NodeUnprepareResources failed for ResourceClaim "
            "claim-1: still in use");
  EXPECT_EQ(m->ClaimInfos().at("uid-claim-1").state.pod_uids, std::set<std::string>{"uid-pod-1"});
  EXPECT_EQ(CheckpointBytes(), before);

  drivers_.unprepare_errors.clear();
  drivers_.registered.erase(kGpu);
  EXPECT_EQ(m->UnprepareResources(pod_).message(),
            "unprepare dynamic resources: DRA driver gpu.example.com is not registered");
  drivers_.registered.insert(kGpu);
  ASSERT_OK(m->UnprepareResources(pod_));
  EXPECT_THAT(m->ClaimInfos(), IsEmpty());
}

// reconcileLoop (manager.go at v1.34.4 and v1.37.2): the pod UIDs the
// cache holds that are not active are unprepared from the cache alone, also
// after a restart (no manifest: the pod was deleted while the kubelet was
// down); a claim an active pod shares only loses the inactive pod; a failing
// pass leaves the pod for the next.
TEST_F(ManagerTest, ReconcileUnpreparesTheClaimsOfInactivePodsFromTheCache) {
  {
    auto m = NewManager();
    SetUpOracleClaim();
    const json pod2 = MakePod("pod-2", {"shared"}, {{"ctr", {{"shared", ""}}}});
    const json pod3 = MakePod("pod-3", {"shared"}, {{"ctr", {{"shared", ""}}}});
    const json shared = MakeClaim("shared", {{"r", kGpu, "dev-2"}}, {"uid-pod-2", "uid-pod-3"});
    ASSERT_OK(m->PrepareResources(pod_, {claim_}));
    ASSERT_OK(m->PrepareResources(pod2, {shared}));
    ASSERT_OK(m->PrepareResources(pod3, {shared}));
  }
  auto m = NewManager();  // the restarted kubelet: every claim restored
  ASSERT_OK(m->Start());
  drivers_.calls.clear();
  // Nothing inactive: nothing to do.
  EXPECT_THAT(m->ReconcileInactive({"uid-pod-1", "uid-pod-2", "uid-pod-3"}), IsEmpty());
  EXPECT_THAT(drivers_.calls, IsEmpty());

  // The driver is gone: pod-1's claim needs it and stays; pod-2 only
  // leaves the claim pod-3 keeps (no call).
  drivers_.registered.erase(kGpu);
  EXPECT_THAT(m->ReconcileInactive({"uid-pod-3"}), ElementsAre("uid-pod-2"));
  EXPECT_THAT(drivers_.calls, IsEmpty());
  EXPECT_EQ(m->ClaimInfos().size(), 2u);

  drivers_.registered.insert(kGpu);
  EXPECT_THAT(m->ReconcileInactive({"uid-pod-3"}), ElementsAre("uid-pod-1"));
  ASSERT_EQ(drivers_.calls.size(), 1u);
  EXPECT_EQ(drivers_.calls[0].op, "unprepare");
  EXPECT_THAT(drivers_.calls[0].claim_names, ElementsAre("claim-1"));
  const auto infos = m->ClaimInfos();
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos.at("uid-shared").state.pod_uids, std::set<std::string>{"uid-pod-3"});

  // The checkpoint says the same to the next kubelet.
  auto again = NewManager();
  ASSERT_OK(again->Start());
  EXPECT_EQ(again->ClaimInfos().at("uid-shared").state.pod_uids,
            std::set<std::string>{"uid-pod-3"});
}

TEST_F(ManagerTest, ContainerCdiIdsFollowTheRequest) {
  auto m = NewManager();
  drivers_.devices[{kGpu, "uid-claim-1"}] = {Dev("dev-0", {"gpu-a"}, {"cdi/a0"}),
                                             Dev("dev-1", {"gpu-b"}, {"cdi/b1", "cdi/b2"}),
                                             Dev("dev-2", {}, {"cdi/any"})};
  drivers_.devices[{kGpu, "uid-claim-2"}] = {Dev("dev-3", {"x"}, {"cdi/c2"})};
  const json pod = MakePod("pod-1", {"claim-1", "claim-2"},
                           {{"a", {{"claim-1", "gpu-a"}}},
                            {"b", {{"claim-2", ""}, {"claim-1", "gpu-b"}}},
                            {"all", {{"claim-1", ""}}},
                            {"none", {}}});
  const std::vector<json> claims = {
      MakeClaim("claim-1",
                {{"gpu-a", kGpu, "dev-0"}, {"gpu-b", kGpu, "dev-1"}, {"gpu-b", kGpu, "dev-2"}},
                {"uid-pod-1"}),
      MakeClaim("claim-2", {{"x", kGpu, "dev-3"}}, {"uid-pod-1"})};
  ASSERT_OK(m->PrepareResources(pod, claims));

  EXPECT_THAT(*m->ContainerCdiIds(pod, "a"), ElementsAre("cdi/a0", "cdi/any"));
  // Pod claim order first (claim-1 before claim-2), not the container's.
  EXPECT_THAT(*m->ContainerCdiIds(pod, "b"), ElementsAre("cdi/b1", "cdi/b2", "cdi/any", "cdi/c2"));
  EXPECT_THAT(*m->ContainerCdiIds(pod, "all"),
              ElementsAre("cdi/a0", "cdi/b1", "cdi/b2", "cdi/any"));
  EXPECT_THAT(*m->ContainerCdiIds(pod, "none"), IsEmpty());

  ASSERT_OK(m->UnprepareResources(pod));
  EXPECT_EQ(m->ContainerCdiIds(pod, "a").status().message(),
            "internal error: unable to get claim info for ResourceClaim claim-1");
}

// The PodResources API's view (GetContainerClaimInfos): whole claims, in pod
// claim order, once per resources.claims entry; the request narrows nothing.
TEST_F(ManagerTest, ContainerClaimInfosListWholeClaimsPerEntry) {
  auto m = NewManager();
  drivers_.devices[{kGpu, "uid-claim-1"}] = {Dev("dev-0", {"gpu-a"}, {"cdi/a0"}),
                                             Dev("dev-1", {"gpu-b"}, {"cdi/b1"})};
  drivers_.devices[{kGpu, "uid-claim-2"}] = {Dev("dev-3", {"x"}, {"cdi/c2"})};
  const json pod = MakePod("pod-1", {"claim-1", "claim-2"},
                           {{"a", {{"claim-1", "gpu-a"}}},
                            {"b", {{"claim-2", ""}, {"claim-1", "gpu-a"}, {"claim-1", "gpu-b"}}},
                            {"none", {}}});
  const std::vector<json> claims = {
      MakeClaim("claim-1", {{"gpu-a", kGpu, "dev-0"}, {"gpu-b", kGpu, "dev-1"}}, {"uid-pod-1"}),
      MakeClaim("claim-2", {{"x", kGpu, "dev-3"}}, {"uid-pod-1"})};
  ASSERT_OK(m->PrepareResources(pod, claims));
  auto names = [&](const std::string& container) {
    std::vector<std::string> out;
    absl::StatusOr<std::vector<ClaimInfoState>> infos = m->ContainerClaimInfos(pod, container);
    EXPECT_OK(infos);
    for (const ClaimInfoState& s : infos.value_or(std::vector<ClaimInfoState>{})) {
      out.push_back(s.claim_name + "=" + std::to_string(s.driver_state->at(kGpu).devices->size()));
    }
    return out;
  };
  EXPECT_THAT(names("a"), ElementsAre("claim-1=2"));
  // Pod claim order first; claim-1 twice, once per entry.
  EXPECT_THAT(names("b"), ElementsAre("claim-1=2", "claim-1=2", "claim-2=1"));
  EXPECT_THAT(names("none"), IsEmpty());
  EXPECT_THAT(names("no-such-container"), IsEmpty());
  EXPECT_EQ(m->ContainerClaimInfos(pod, "a")->front(), m->ClaimInfos().at("uid-claim-1").state);

  ASSERT_OK(m->UnprepareResources(pod));
  EXPECT_EQ(m->ContainerClaimInfos(pod, "a").status().message(),
            "unable to get information for ResourceClaim claim-1");
  EXPECT_THAT(*m->ContainerClaimInfos(pod, "none"), IsEmpty());
}

// resourceclaim.Name: a template entry without a status entry fails every
// container; one whose status entry has no name needs no claim.
TEST_F(ManagerTest, ContainerClaimInfosOfTemplateEntries) {
  auto m = NewManager();
  json pod = MakePod("pod-1", {}, {{"a", {{"t", ""}}}, {"none", {}}});
  pod["spec"]["resourceClaims"] = {{{"name", "t"}, {"resourceClaimTemplateName", "tmpl"}}};
  EXPECT_EQ(m->ContainerClaimInfos(pod, "none").status().message(),
            "pod \"default/pod-1\": ResourceClaim not created yet");
  pod["status"]["resourceClaimStatuses"] = {{{"name", "t"}}};
  EXPECT_THAT(*m->ContainerClaimInfos(pod, "a"), IsEmpty());
}

// ENOSPC on the checkpoint write before the driver is called: the prepare
// fails with the kubelet's text for that write and calls no driver; as the
// kubelet's, the cache keeps the claim in memory (not prepared) and the file
// is not written. A failed write after a successful unprepare likewise
// leaves the claim deleted in memory and in the file.
TEST_F(ManagerTest, FailedCheckpointWriteKeepsTheChangeInMemoryOnly) {
  fs::FaultInjectingFs faults;
  Manager m(&drivers_, ManagerOptions{dir_.path(), 37, false, &faults});
  SetUpOracleClaim();
  faults.Fail(fs::FaultInjectingFs::Op::kAppend, ENOSPC);
  absl::Status s = m.PrepareResources(pod_, {claim_});
  EXPECT_THAT(std::string(s.message()),
              ::testing::StartsWith("prepare dynamic resources: checkpoint ResourceClaim cache: "));
  EXPECT_TRUE(drivers_.calls.empty());
  ASSERT_EQ(m.ClaimInfos().size(), 1u);
  EXPECT_FALSE(m.ClaimInfos().begin()->second.prepared);
  EXPECT_FALSE(CheckpointExists());

  ASSERT_OK(m.PrepareResources(pod_, {claim_}));
  EXPECT_EQ(drivers_.calls.size(), 1u);
  faults.Fail(fs::FaultInjectingFs::Op::kRename, EIO);
  absl::Status u = m.UnprepareResources(pod_);
  EXPECT_THAT(
      std::string(u.message()),
      ::testing::StartsWith("unprepare dynamic resources: checkpoint ResourceClaim state: "));
  EXPECT_THAT(m.ClaimInfos(), IsEmpty());
  EXPECT_EQ(CheckpointBytes(), Golden("oracle-1.37-two-devices.json"));
}

// The checkpoint through an in-memory filesystem (what the dra_replies fuzz target runs on):
// the kubelet's bytes, in a directory the manager makes, nothing on disk, and a manager
// restarted on the same filesystem restores the claim.
TEST_F(ManagerTest, CheckpointOnAnInMemoryFilesystem) {
  fs::MemoryFilesystem memory;
  const ManagerOptions opts{"/var/lib/kubelet-in-memory", 37, true, &memory};
  SetUpOracleClaim();
  {
    Manager m(&drivers_, opts);
    ASSERT_OK(m.Start());
    ASSERT_OK(m.PrepareResources(pod_, {claim_}));
  }
  EXPECT_EQ(*memory.ReadFile("/var/lib/kubelet-in-memory/dra_manager_state"),
            Golden("oracle-1.37-two-devices.json"));
  EXPECT_EQ(memory.ListDir("/var/lib/kubelet-in-memory")->size(), 1u);  // no temp file left
  EXPECT_FALSE(CheckpointExists());
  EXPECT_FALSE(std::filesystem::exists("/var/lib/kubelet-in-memory"));

  Manager restarted(&drivers_, opts);
  ASSERT_OK(restarted.Start());
  EXPECT_FALSE(restarted.ClaimInfos().at("uid-claim-1").prepared);
  EXPECT_EQ(restarted.ContainerCdiIds(pod_, "ctr")->size(), 3u);
  ASSERT_OK(restarted.UnprepareResources(pod_));
  EXPECT_EQ(*memory.ReadFile("/var/lib/kubelet-in-memory/dra_manager_state"),
            Golden("oracle-1.37-empty.json"));
}

class ManagerLayoutTest : public ManagerTest, public testing::WithParamInterface<int> {};

// The bytes the kubelet's DRA manager of that release wrote for the same
// state, and the codec reads them back to the cache's state.
TEST_P(ManagerLayoutTest, CheckpointBytesAreTheKubelets) {
  const int minor = GetParam();
  auto m = NewManager(minor);
  SetUpOracleClaim();
  ASSERT_OK(m->PrepareResources(pod_, {claim_}));
  const std::string file = "oracle-1." + std::to_string(minor) + "-two-devices.json";
  EXPECT_EQ(CheckpointBytes(), Golden(file));

  absl::StatusOr<CheckpointData> data =
      ReadAndVerify(checkpoint::FileStore(dir_.path(), false), LayoutForMinor(minor));
  ASSERT_OK(data);
  ASSERT_EQ(data->claim_info_state_list->size(), 1u);
  EXPECT_EQ(data->claim_info_state_list->front(), m->ClaimInfos().at("uid-claim-1").state);
  EXPECT_THAT(*m->ContainerCdiIds(pod_, "ctr"),
              ElementsAre("gpu.example.com/gpu=dev-0", "gpu.example.com/gpu=dev-1",
                          "gpu.example.com/gpu=common"));

  ASSERT_OK(m->UnprepareResources(pod_));
  EXPECT_EQ(CheckpointBytes(), Golden("oracle-1." + std::to_string(minor) + "-empty.json"));
}

TEST_P(ManagerLayoutTest, ShareIdIsDroppedBy134AndStoredBy137) {
  const int minor = GetParam();
  auto m = NewManager(minor);
  SetUpOracleClaim();
  PreparedDevice d = Dev("dev-0", {"gpu-a"}, {"gpu.example.com/gpu=dev-0"});
  d.share_id = "share-uid-0";
  drivers_.devices[{kGpu, "uid-claim-1"}] = {d};
  ASSERT_OK(m->PrepareResources(pod_, {claim_}));
  EXPECT_EQ(CheckpointBytes(), Golden("oracle-1." + std::to_string(minor) + "-share-id.json"));
}

// A new manager on the same state directory: the restored claim serves its
// CDI IDs at once, is not prepared, and the pod's prepare calls the driver
// again; 1.34 appends the devices again, 1.37 replaces them.
TEST_P(ManagerLayoutTest, RestartPreparesEveryClaimAgain) {
  const int minor = GetParam();
  SetUpOracleClaim();
  {
    auto first = NewManager(minor);
    ASSERT_OK(first->Start());
    ASSERT_OK(first->PrepareResources(pod_, {claim_}));
  }
  auto m = NewManager(minor);
  ASSERT_OK(m->Start());
  EXPECT_FALSE(m->ClaimInfos().at("uid-claim-1").prepared);
  EXPECT_EQ(m->ContainerCdiIds(pod_, "ctr")->size(), 3u);

  ASSERT_OK(m->PrepareResources(pod_, {claim_}));
  EXPECT_EQ(drivers_.calls.size(), 2u);
  EXPECT_TRUE(m->ClaimInfos().at("uid-claim-1").prepared);
  const std::string file = "oracle-1." + std::to_string(minor) + "-restart-prepare.json";
  EXPECT_EQ(CheckpointBytes(), Golden(file));
  EXPECT_EQ(m->ContainerCdiIds(pod_, "ctr")->size(), minor >= 37 ? 3u : 6u);
}

INSTANTIATE_TEST_SUITE_P(Releases, ManagerLayoutTest, testing::Values(34, 37),
                         [](const testing::TestParamInfo<int>& info) {
                           return "v1_" + std::to_string(info.param);
                         });

TEST_F(ManagerTest, StartWithoutCheckpointWritesAnEmptyOne) {
  auto m = NewManager(34);
  ASSERT_OK(m->Start());
  EXPECT_THAT(m->ClaimInfos(), IsEmpty());
  EXPECT_EQ(CheckpointBytes(), Golden("kubelet/v1.34.4-nil-list.json"));
}

TEST_F(ManagerTest, StartFailsOnACorruptCheckpoint) {
  std::string bytes = Golden("oracle-1.37-two-devices.json");
  bytes.replace(bytes.find("3762186134"), 10, "3762186135");
  std::ofstream(dir_.Join(kCheckpointName), std::ios::binary) << bytes;
  auto m = NewManager();
  absl::Status s = m->Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(s.message(),
            "create ResourceClaim cache: GetOrCreate() on checkpoint state: failed to get "
            "checkpoint dra_manager_state: checkpoint is corrupted");
  EXPECT_THAT(m->ClaimInfos(), IsEmpty());

  std::ofstream(dir_.Join(kCheckpointName), std::ios::binary | std::ios::trunc) << "{not json";
  EXPECT_EQ(m->Start().message(),
            "create ResourceClaim cache: GetOrCreate() on checkpoint state: failed to get "
            "checkpoint dra_manager_state: invalid character 'n' looking for beginning of object "
            "key string (offset 1)");
}

}  // namespace
}  // namespace devmgr::dra
