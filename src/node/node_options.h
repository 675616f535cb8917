// NodeOptionsBuilder: the one place where a node description becomes
// NodeOptions, for `devmgr serve` (its flags, some in text form) and
// `devmgr run` (a scenario's node: block). `devmgr conformance` runs its
// own minimal kubelet (conformance/test_kubelet.h) and builds no Node.
#ifndef DEVMGR_NODE_NODE_OPTIONS_H_
#define DEVMGR_NODE_NODE_OPTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "kubelet/profile.h"
#include "node/node.h"
#include "topology/hint_provider.h"

namespace devmgr::node {

class NodeOptionsBuilder {
 public:
  NodeOptionsBuilder(std::string plugin_dir, const Profile& profile);

  NodeOptionsBuilder& RegistryDir(std::string dir);
  NodeOptionsBuilder& WithClock(Clock* clock);
  NodeOptionsBuilder& Fsync(bool fsync);
  NodeOptionsBuilder& MaxRecvMsgSize(int bytes);
  NodeOptionsBuilder& DialTimeout(absl::Duration timeout);
  // cAdvisor's NUMA node ids and (optionally) their distances.
  NodeOptionsBuilder& Numa(std::vector<int> nodes, std::vector<std::vector<uint64_t>> distances);
  NodeOptionsBuilder& Topology(std::string policy, std::string scope,
                               std::map<std::string, std::string> policy_options);
  // A static hint provider after the device manager (in call order).
  NodeOptionsBuilder& AddHintProvider(topology::StaticProviderSpec spec);

  // The text forms of serve's flags; errors name the flag
  // ("--numa-nodes: ...") and leave the builder unchanged.
  absl::Status ParseNumaFlags(const std::string& nodes, const std::string& distances);
  absl::Status ParsePolicyOptionsFlag(const std::string& options);

  // The kubelet's start-up check of the topology manager's configuration
  // (NUMA layout, policy, scope, options), which Node::Start also makes.
  absl::Status ValidateTopology() const;

  const NodeOptions& options() const { return opts_; }

 private:
  NodeOptions opts_;
};

}  // namespace devmgr::node

#endif  // DEVMGR_NODE_NODE_OPTIONS_H_
