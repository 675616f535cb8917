#include "node/node_options.h"

#include <utility>

#include "fmt/format.h"
#include "topology/config_text.h"
#include "topology/topology_manager.h"

namespace devmgr::node {
namespace {

absl::Status Flag(const char* flag, const absl::Status& s) {
  return absl::Status(s.code(), fmt::format("{}: {}", flag, std::string(s.message())));
}

}  // namespace

NodeOptionsBuilder::NodeOptionsBuilder(std::string plugin_dir, const Profile& profile) {
  opts_.plugin_dir = std::move(plugin_dir);
  opts_.profile = profile;
}

NodeOptionsBuilder& NodeOptionsBuilder::RegistryDir(std::string dir) {
  opts_.registry_dir = std::move(dir);
  return *this;
}

NodeOptionsBuilder& NodeOptionsBuilder::WithClock(Clock* clock) {
  opts_.clock = clock;
  return *this;
}

NodeOptionsBuilder& NodeOptionsBuilder::Fsync(bool fsync) {
  opts_.fsync = fsync;
  return *this;
}

NodeOptionsBuilder& NodeOptionsBuilder::MaxRecvMsgSize(int bytes) {
  opts_.max_recv_msg_size = bytes;
  return *this;
}

NodeOptionsBuilder& NodeOptionsBuilder::DialTimeout(absl::Duration timeout) {
  opts_.dial_timeout = timeout;
  return *this;
}

NodeOptionsBuilder& NodeOptionsBuilder::Numa(std::vector<int> nodes,
                                             std::vector<std::vector<uint64_t>> distances) {
  opts_.numa_nodes = std::move(nodes);
  opts_.numa_distances = std::move(distances);
  return *this;
}

NodeOptionsBuilder& NodeOptionsBuilder::Topology(
    std::string policy, std::string scope, std::map<std::string, std::string> policy_options) {
  opts_.topology.policy = std::move(policy);
  opts_.topology.scope = std::move(scope);
  opts_.topology.policy_options = std::move(policy_options);
  return *this;
}

NodeOptionsBuilder& NodeOptionsBuilder::AddHintProvider(topology::StaticProviderSpec spec) {
  opts_.topology_hint_providers.push_back(std::move(spec));
  return *this;
}

absl::Status NodeOptionsBuilder::ParseNumaFlags(const std::string& nodes,
                                                const std::string& distances) {
  auto ids = topology::ParseNumaNodeList(nodes);
  if (!ids.ok()) return Flag("--numa-nodes", ids.status());
  auto rows = topology::ParseNumaDistances(distances);
  if (!rows.ok()) return Flag("--numa-distances", rows.status());
  Numa(std::move(*ids), std::move(*rows));
  return absl::OkStatus();
}

absl::Status NodeOptionsBuilder::ParsePolicyOptionsFlag(const std::string& options) {
  auto parsed = topology::ParsePolicyOptions(options);
  if (!parsed.ok()) return Flag("--topology-manager-policy-options", parsed.status());
  opts_.topology.policy_options = std::move(*parsed);
  return absl::OkStatus();
}

absl::Status NodeOptionsBuilder::ValidateTopology() const {
  auto numa = topology::MakeNumaTopology(opts_.numa_nodes, opts_.numa_distances);
  if (!numa.ok()) return numa.status();
  return topology::TopologyManager::Create(opts_.topology, *numa, opts_.profile).status();
}

}  // namespace devmgr::node
