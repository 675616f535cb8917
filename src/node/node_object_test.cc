// The Node object's extended resources across kubelet restarts: the Node
// outlives the kubelet, a restarting kubelet zeroes its extended resources
// only when the device manager finds no checkpoint at all
// (ShouldResetExtendedResourceCapacity), and node-status passes merge
// GetCapacity into what the Node already has.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "checkpoint/checkpoint.h"
#include "gtest/gtest.h"
#include "node/node.h"
#include "node/status_file.h"

namespace devmgr::node {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/dmnodeobj-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  void Write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path_ + "/" + name, std::ios::binary) << bytes;
  }

 private:
  std::string path_;
};

using Counts = std::map<std::string, int64_t>;

void ExpectNode(const NodeResources& n, const Counts& capacity, const Counts& allocatable) {
  EXPECT_EQ(n.capacity, capacity);
  EXPECT_EQ(n.allocatable, allocatable);
}

TEST(ShouldResetExtendedResourcesTest, OnlyAnEmptyDirectory) {
  TempDir t;
  EXPECT_TRUE(ShouldResetExtendedResources(t.path()));
  // The checkpoint store's temporary files do not count.
  t.Write(".tmp123", "x");
  EXPECT_TRUE(ShouldResetExtendedResources(t.path()));
  // A checkpoint counts whatever its content (a corrupt one too).
  t.Write(checkpoint::kCheckpointName, "{not json");
  EXPECT_FALSE(ShouldResetExtendedResources(t.path()));
}

TEST(ShouldResetExtendedResourcesTest, AnyOtherEntryCounts) {
  TempDir t;
  t.Write("gpu.sock", "");  // a plugin's socket left in the directory
  EXPECT_FALSE(ShouldResetExtendedResources(t.path()));
}

TEST(ShouldResetExtendedResourcesTest, MissingDirectoryDoesNotReset) {
  // ListCheckpoints fails, and the kubelet then keeps the Node's values.
  EXPECT_FALSE(ShouldResetExtendedResources("/nonexistent/devmgr-node-object-test"));
}

TEST(NodeResourcesTest, ApplyKeepsWhatNoPluginReports) {
  NodeResources n;
  n.capacity = {{"example.com/gpu", 2}, {"example.com/fpga", 1}};
  n.allocatable = {{"example.com/gpu", 2}, {"example.com/fpga", 0}};
  manager::CapacityResult r;
  r.capacity = {{"example.com/gpu", 3}};
  r.allocatable = {{"example.com/gpu", 3}};
  n.Apply(r);
  // A resource left on the Node keeps its capacity, and its allocatable
  // follows that capacity (no plugin value).
  ExpectNode(n, {{"example.com/fpga", 1}, {"example.com/gpu", 3}},
             {{"example.com/fpga", 1}, {"example.com/gpu", 3}});
}

TEST(NodeResourcesTest, ZeroExtendedKeepsTheEntries) {
  NodeResources n;
  n.capacity = {{"example.com/gpu", 2}};
  n.allocatable = {{"example.com/gpu", 1}};
  n.ZeroExtended();
  ExpectNode(n, {{"example.com/gpu", 0}}, {{"example.com/gpu", 0}});
}

NodeResources Existing() {
  NodeResources n;
  n.capacity = {{"example.com/gpu", 2}, {"example.com/gone", 0}};
  n.allocatable = {{"example.com/gpu", 2}, {"example.com/gone", 0}};
  return n;
}

// A node started over `dir` with the Node object `existing`, its status
// after one pass (no plugin registers).
NodeResources StatusAfterStart(const std::string& dir, std::optional<NodeResources> existing) {
  NodeOptions o;
  o.plugin_dir = dir;
  o.fsync = false;
  o.existing_node = std::move(existing);
  Node n(o);
  EXPECT_TRUE(n.Start().ok());
  NodeResources r = n.UpdateNodeStatus();
  n.Stop();
  return r;
}

TEST(NodeObjectTest, RestartOnACorruptCheckpointKeepsTheNodesValues) {
  TempDir t;
  t.Write(checkpoint::kCheckpointName, "{\"Data\":\"x\",\"Checksum\":1}");
  ExpectNode(StatusAfterStart(t.path(), Existing()), Existing().capacity, Existing().allocatable);
}

TEST(NodeObjectTest, RestartWithNoCheckpointAtAllZeroesThem) {
  TempDir t;
  ExpectNode(StatusAfterStart(t.path(), Existing()),
             {{"example.com/gone", 0}, {"example.com/gpu", 0}},
             {{"example.com/gone", 0}, {"example.com/gpu", 0}});
}

TEST(NodeObjectTest, ANewNodeStartsEmpty) {
  TempDir t;
  t.Write(checkpoint::kCheckpointName, "{}");
  ExpectNode(StatusAfterStart(t.path(), std::nullopt), {}, {});
}

TEST(StatusFileNodeTest, ARestartedServeTakesTheNodeOver) {
  TempDir t;
  StatusInput in;
  in.node = Existing();
  t.Write("status.json", BuildStatus(in).dump(2));
  std::optional<NodeResources> n = ReadStatusFileNode(t.path() + "/status.json");
  ASSERT_TRUE(n.has_value());
  ExpectNode(*n, Existing().capacity, Existing().allocatable);
  EXPECT_FALSE(ReadStatusFileNode(t.path() + "/missing.json").has_value());
  t.Write("bad.json", "{\"node\": {\"capacity\": {\"example.com/gpu\": \"two\"}}}");
  EXPECT_FALSE(ReadStatusFileNode(t.path() + "/bad.json").has_value());
}

}  // namespace
}  // namespace devmgr::node
