// The topology manager's policy options (--topology-manager-policy-options):
// prefer-closest-numa-nodes and max-allowable-numa-nodes, their feature
// gates and their availability per kubelet profile, with the kubelet's error
// texts (topologymanager policy_options.go).
#ifndef DEVMGR_TOPOLOGY_POLICY_OPTIONS_H_
#define DEVMGR_TOPOLOGY_POLICY_OPTIONS_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "kubelet/profile.h"

namespace devmgr::topology {

inline constexpr char kPreferClosestNumaNodes[] = "prefer-closest-numa-nodes";
inline constexpr char kMaxAllowableNumaNodes[] = "max-allowable-numa-nodes";
inline constexpr int kDefaultMaxAllowableNumaNodes = 8;

struct PolicyOptions {
  bool prefer_closest_numa = false;
  int max_allowable_numa_nodes = kDefaultMaxAllowableNumaNodes;
};

// The feature gates that guard option levels.
struct OptionGates {
  bool beta = true;    // TopologyManagerPolicyBetaOptions (default on)
  bool alpha = false;  // TopologyManagerPolicyAlphaOptions (default off)
};

// NewPolicyOptions. Options are checked in name order (Go: map order).
// Errors: `unknown Topology Manager Policy option: "x"`, the gate texts,
// `bad value for option "prefer-closest-numa-nodes": strconv.ParseBool:
// parsing "x": invalid syntax`, `unable to convert policy option to integer
// "max-allowable-numa-nodes": strconv.Atoi: parsing "x": invalid syntax`,
// `the minimum value of "max-allowable-numa-nodes" should not be less than 8`.
// max-allowable-numa-nodes exists from 1.31 (beta); prefer-closest-numa-nodes
// is beta before 1.32 and GA from 1.32.
absl::StatusOr<PolicyOptions> NewPolicyOptions(const std::map<std::string, std::string>& options,
                                               const Profile& profile,
                                               const OptionGates& gates = {});

// Go's strconv.ParseBool and strconv.Atoi (64-bit int), with their error
// texts ("strconv.ParseBool: parsing \"x\": invalid syntax",
// "strconv.Atoi: parsing \"x\": value out of range").
absl::StatusOr<bool> GoParseBool(const std::string& s);
absl::StatusOr<int64_t> GoAtoi(const std::string& s);

}  // namespace devmgr::topology

#endif  // DEVMGR_TOPOLOGY_POLICY_OPTIONS_H_
