// The node's DRA wiring: at Start the node's ResourceSlices are deleted (not
// other nodes'), the "DRAPlugin" handler and the DRA manager exist and the
// checkpoint is written; a driver whose last instance goes has its slices
// deleted after the wiping delay; kubelets before 1.34 get no DRA.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "apiserver/field_selector.h"
#include "apiserver/resource_type.h"
#include "apiserver/store.h"
#include "common/clock.h"
#include "common/status_testutil.h"
#include "common/temp_dir_testutil.h"
#include "dra/dra_plugin_handler.h"
#include "dra/timers_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node/node.h"
#include "node/pod_manager.h"
#include "node/pod_sync_loop.h"
#include "pod/manifest_parser.h"

namespace devmgr::node {
namespace {

using nlohmann::json;

class NodeDraTest : public testing::Test {
 protected:
  void AddSlice(const std::string& node, const std::string& driver) {
    apiserver::ApiOr<json> made = store_.Create(
        apiserver::ResourceSlices(), "",
        {{"metadata", {{"generateName", node + "-" + driver + "-"}}},
         {"spec",
          {{"driver", driver},
           {"nodeName", node},
           {"pool", {{"name", node}, {"generation", 0}, {"resourceSliceCount", 1}}}}}});
    ASSERT_TRUE(made.ok()) << made.error->message;
  }
  // (node, driver) of every slice, in name order.
  std::vector<std::pair<std::string, std::string>> Slices() {
    std::vector<std::pair<std::string, std::string>> out;
    apiserver::ApiOr<apiserver::Store::ListResult> l =
        store_.List(apiserver::ResourceSlices(), "", apiserver::FieldSelector{});
    for (const json& s : l.value.items)
      out.emplace_back(s["spec"]["nodeName"], s["spec"]["driver"]);
    std::sort(out.begin(), out.end());
    return out;
  }
  NodeOptions Options(int minor) {
    std::filesystem::create_directories(dir_.Join("device-plugins"));
    NodeOptions o;
    o.plugin_dir = dir_.Join("device-plugins");
    o.registry_dir = dir_.Join("plugins_registry");
    o.profile = ProfileForMinor(minor);
    o.fsync = false;
    o.dra.store = &store_;
    o.dra.node_name = "node-1";
    o.dra.state_dir = dir_.path();
    o.dra.wiping_delay = absl::Milliseconds(10);
    return o;
  }

  devmgr::testutil::TempDir dir_;
  FakeClock clock_;
  apiserver::Store store_{clock_};
};

TEST_F(NodeDraTest, StartWipesTheNodesSlicesAndStartsTheDraManager) {
  AddSlice("node-1", "a.example.com");
  AddSlice("node-1", "b.example.com");
  AddSlice("node-2", "a.example.com");
  Node n(Options(37));
  ASSERT_OK(n.Start());
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(Slices(), (Pairs{{"node-2", "a.example.com"}}));
  ASSERT_NE(n.dra_handler(), nullptr);
  ASSERT_NE(n.dra_manager(), nullptr);
  EXPECT_TRUE(std::filesystem::exists(dir_.Join("dra_manager_state")));

  // A driver's last instance goes: its slices on this node go after the
  // wiping delay; other drivers' and nodes' stay.
  AddSlice("node-1", "a.example.com");
  AddSlice("node-1", "b.example.com");
  ASSERT_OK(
      n.dra_handler()->RegisterPlugin("a.example.com", dir_.Join("a.sock"), {"v1.DRAPlugin"}));
  n.dra_handler()->DeRegisterPlugin("a.example.com", dir_.Join("a.sock"));
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (Slices().size() == 3 && absl::Now() < deadline) {
    (void)store_.EventsAfter(store_.ResourceVersion(), absl::Now() + absl::Milliseconds(100));
  }
  EXPECT_EQ(Slices(), (Pairs{{"node-1", "b.example.com"}, {"node-2", "a.example.com"}}));
  n.Stop();
}

// The kubelet's start fails on a dra_manager_state it cannot read, with
// NewManager's error (docs/profiles.md, the DRA facts: "create ResourceClaim
// cache: GetOrCreate() on checkpoint state: failed to get checkpoint
// dra_manager_state: ..."): nothing listens, no slice is wiped, and the file
// stays as it was.
TEST_F(NodeDraTest, StartFailsOnACorruptDraCheckpoint) {
  const std::string prefix =
      "create ResourceClaim cache: GetOrCreate() on checkpoint state: failed to get checkpoint "
      "dra_manager_state: ";
  std::string valid;
  {
    Node n(Options(37));
    ASSERT_OK(n.Start());
    n.Stop();
    std::ifstream in(dir_.Join("dra_manager_state"));
    std::getline(in, valid, '\0');
  }
  const size_t k = valid.find("\"Checksum\":");
  ASSERT_NE(k, std::string::npos) << valid;
  std::string wrong = valid;
  const size_t last = valid.find('}', k) - 1;  // the checksum's last digit
  wrong[last] = wrong[last] == '0' ? '1' : static_cast<char>(wrong[last] - 1);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {wrong, "checkpoint is corrupted"},
      {"{not json", "invalid character 'n' looking for beginning of object key string"},
      {"", "unexpected end of JSON input"},
  };
  for (const auto& [bytes, cause] : cases) {
    {
      std::ofstream out(dir_.Join("dra_manager_state"), std::ios::trunc);
      out << bytes;
    }
    AddSlice("node-1", "a.example.com");
    Node n(Options(37));
    absl::Status s = n.Start();
    EXPECT_FALSE(s.ok()) << cause;
    // devmgr's JSON errors add " (offset N)" (checkpoint_format.md).
    EXPECT_THAT(std::string(s.message()), testing::StartsWith(prefix + cause));
    EXPECT_FALSE(std::filesystem::exists(dir_.Join("device-plugins/kubelet.sock"))) << cause;
    EXPECT_EQ(Slices().size(), 1u) << cause;  // the start stopped before the wipe
    std::ifstream in(dir_.Join("dra_manager_state"));
    std::string after;
    std::getline(in, after, '\0');
    EXPECT_EQ(after, bytes) << cause;
    // A new start after the file is repaired (deleted) succeeds.
    std::filesystem::remove(dir_.Join("dra_manager_state"));
    Node again(Options(37));
    ASSERT_OK(again.Start());
    again.Stop();
  }
}

TEST_F(NodeDraTest, NoDraBefore134) {
  AddSlice("node-1", "a.example.com");
  Node n(Options(33));
  ASSERT_OK(n.Start());
  EXPECT_EQ(n.dra_handler(), nullptr);
  EXPECT_EQ(n.dra_manager(), nullptr);
  EXPECT_EQ(Slices().size(), 1u);
}

TEST_F(NodeDraTest, NoDraWithoutAStore) {
  NodeOptions o = Options(37);
  o.dra.store = nullptr;
  Node n(o);
  ASSERT_OK(n.Start());
  EXPECT_EQ(n.dra_handler(), nullptr);
}

// A pod whose sync fails stays Pending with the reason and message, and the
// loop syncs it again after the retry period; deletion releases its claim.
TEST_F(NodeDraTest, FailedSyncIsRetriedByTheLoop) {
  ASSERT_TRUE(store_
                  .Create(apiserver::DeviceClasses(), "",
                          {{"metadata", {{"name", "gpu"}}}, {"spec", json::object()}})
                  .ok());
  ASSERT_TRUE(
      store_
          .Create(apiserver::ResourceClaimTemplates(), "default",
                  {{"metadata", {{"name", "gpu"}}},
                   {"spec",
                    {{"spec",
                      {{"devices",
                        {{"requests",
                          {{{"name", "r"}, {"exactly", {{"deviceClassName", "gpu"}}}}}}}}}}}}})
          .ok());
  Node n(Options(37));
  ASSERT_OK(n.Start());
  PodManager pods(&n, {.keep_deleted = false});
  dra::ManualTimers timers;
  PodSyncLoop loop(&pods, {.retry_period = absl::Seconds(10),
                           .reconcile_period = absl::Seconds(60),
                           .timers = &timers});
  loop.Start();
  absl::StatusOr<pod::Pod> p = pod::ParsePodManifest(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
      "  containers: [{name: c, resources: {claims: [{name: g}]}}]\n"
      "  resourceClaims: [{name: g, resourceClaimTemplateName: gpu}]\n",
      "p.yaml");
  ASSERT_OK(p);
  absl::StatusOr<PodRecord> rec = pods.AddPod(*p);
  ASSERT_OK(rec);
  EXPECT_EQ(rec->phase, pod::Phase::kPending);
  EXPECT_TRUE(rec->sync_failed);
  EXPECT_EQ(rec->reason, "FailedScheduling");
  EXPECT_NE(rec->message.find("cannot allocate all claims on node node-1"), std::string::npos)
      << rec->message;

  // A device appears; the retry allocates it, and the prepare fails: no driver.
  store_.Create(apiserver::ResourceSlices(), "",
                {{"metadata", {{"name", "s"}}},
                 {"spec",
                  {{"driver", "gpu.example.com"},
                   {"nodeName", "node-1"},
                   {"pool", {{"name", "node-1"}, {"generation", 0}, {"resourceSliceCount", 1}}},
                   {"devices", {{{"name", "gpu-0"}}}}}}});
  timers.Advance(absl::Seconds(10));
  std::optional<PodRecord> now = pods.Find(p->uid);
  ASSERT_TRUE(now.has_value());
  EXPECT_EQ(now->phase, pod::Phase::kPending);
  EXPECT_EQ(now->reason, "FailedPrepareDynamicResources");
  EXPECT_EQ(now->message,
            "Failed to prepare dynamic resources: prepare dynamic resources: DRA driver "
            "gpu.example.com is not registered");
  EXPECT_EQ(timers.Pending(), 2u);  // retry and reconcile, both rescheduled
  EXPECT_EQ(n.DraPodUids(), std::vector<std::string>{p->uid});

  // Deleted: the claim made for it goes.
  ASSERT_OK(pods.DeletePod(p->uid));
  apiserver::ApiOr<apiserver::Store::ListResult> claims =
      store_.List(apiserver::ResourceClaims(), "default", apiserver::FieldSelector{});
  EXPECT_TRUE(claims.value.items.empty());
  EXPECT_TRUE(n.DraPodUids().empty());
  loop.Stop();
  EXPECT_EQ(timers.Pending(), 0u);
  n.Stop();
}

}  // namespace
}  // namespace devmgr::node
