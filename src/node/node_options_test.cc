#include "node/node_options.h"

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::node {
namespace {

using ::testing::ElementsAre;
using ::testing::StartsWith;

TEST(NodeOptionsBuilderTest, CopiesWhatItIsGiven) {
  topology::StaticProviderSpec cpu;
  cpu.name = "cpumanager";
  NodeOptionsBuilder b("/tmp/dp", DefaultProfile());
  b.RegistryDir("/tmp/reg")
      .Fsync(false)
      .MaxRecvMsgSize(2048)
      .DialTimeout(absl::Seconds(3))
      .Numa({0, 1}, {{10, 20}, {20, 10}})
      .Topology("best-effort", "pod", {{"prefer-closest-numa-nodes", "true"}})
      .AddHintProvider(cpu);
  const NodeOptions& o = b.options();
  EXPECT_EQ(o.plugin_dir, "/tmp/dp");
  EXPECT_EQ(o.registry_dir, "/tmp/reg");
  EXPECT_FALSE(o.fsync);
  EXPECT_EQ(o.max_recv_msg_size, 2048);
  EXPECT_EQ(o.dial_timeout, absl::Seconds(3));
  EXPECT_THAT(o.numa_nodes, ElementsAre(0, 1));
  EXPECT_EQ(o.topology.policy, "best-effort");
  EXPECT_EQ(o.topology.scope, "pod");
  EXPECT_EQ(o.topology.policy_options.at("prefer-closest-numa-nodes"), "true");
  ASSERT_EQ(o.topology_hint_providers.size(), 1u);
  EXPECT_EQ(o.topology_hint_providers[0].name, "cpumanager");
  EXPECT_OK(b.ValidateTopology());
}

TEST(NodeOptionsBuilderTest, TextFlagErrorsNameTheFlagAndChangeNothing) {
  NodeOptionsBuilder b("/tmp/dp", DefaultProfile());
  absl::Status s = b.ParseNumaFlags("0,x", "");
  EXPECT_THAT(std::string(s.message()), StartsWith("--numa-nodes: "));
  s = b.ParseNumaFlags("0,1", "10,x");
  EXPECT_THAT(std::string(s.message()), StartsWith("--numa-distances: "));
  EXPECT_THAT(b.options().numa_nodes, ElementsAre(0));
  s = b.ParsePolicyOptionsFlag("novalue");
  EXPECT_THAT(std::string(s.message()), StartsWith("--topology-manager-policy-options: "));
  ASSERT_OK(b.ParseNumaFlags("0,2", ""));
  EXPECT_THAT(b.options().numa_nodes, ElementsAre(0, 2));
}

TEST(NodeOptionsBuilderTest, ValidateTopologyIsTheKubeletsStartupCheck) {
  NodeOptionsBuilder b("/tmp/dp", DefaultProfile());
  b.Topology("tight", "container", {});
  EXPECT_EQ(b.ValidateTopology().message(), "unknown policy: \"tight\"");
  b.Topology("restricted", "node", {});
  EXPECT_EQ(b.ValidateTopology().message(), "unknown scope: \"node\"");
}

}  // namespace
}  // namespace devmgr::node
