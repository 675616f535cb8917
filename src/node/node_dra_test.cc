// The node's DRA wiring: at Start the node's ResourceSlices are deleted (not
// other nodes'), the "DRAPlugin" handler and the DRA manager exist and the
// checkpoint is written; a driver whose last instance goes has its slices
// deleted after the wiping delay; kubelets before 1.34 get no DRA.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "apiserver/field_selector.h"
#include "apiserver/resource_type.h"
#include "apiserver/store.h"
#include "common/clock.h"
#include "common/status_testutil.h"
#include "common/temp_dir_testutil.h"
#include "dra/dra_plugin_handler.h"
#include "gtest/gtest.h"
#include "node/node.h"

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

}  // namespace
}  // namespace devmgr::node
