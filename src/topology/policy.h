// The topology manager's policies and their merge of hints
// (pkg/kubelet/cm/topologymanager policy.go): filterProvidersHints, the
// permutations of one hint per dimension, mergePermutation, the HintMerger's
// comparison rules, and the best-effort / restricted / single-numa-node
// admission decisions. The "none" policy never merges (the scope allocates
// without hints), so it has no Policy here.
#ifndef DEVMGR_TOPOLOGY_POLICY_H_
#define DEVMGR_TOPOLOGY_POLICY_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "topology/numa_info.h"
#include "topology/policy_options.h"
#include "topology/topology_hint.h"

namespace devmgr::topology {

inline constexpr char kPolicyNone[] = "none";
inline constexpr char kPolicyBestEffort[] = "best-effort";
inline constexpr char kPolicyRestricted[] = "restricted";
inline constexpr char kPolicySingleNumaNode[] = "single-numa-node";

// filterProvidersHints: one dimension per (provider, resource), in provider
// order and, within a provider, resource-name order. A provider with no
// resources gives [{nil, true}]; a nil list [{nil, true}]; an empty list
// [{nil, false}]; anything else is kept as is.
std::vector<std::vector<TopologyHint>> FilterProvidersHints(
    const std::vector<ProviderHints>& providers_hints);

// filterSingleNumaHints: keeps only preferred hints whose mask is nil or has
// one bit. A dimension may become empty.
std::vector<std::vector<TopologyHint>> FilterSingleNumaHints(
    const std::vector<std::vector<TopologyHint>>& dims);

// iterateAllProviderTopologyHints: every permutation of one hint per
// dimension, the first dimension varying slowest. No dimensions: one empty
// permutation. An empty dimension: none.
void IterateAllProviderTopologyHints(
    const std::vector<std::vector<TopologyHint>>& dims,
    const std::function<void(const std::vector<TopologyHint>&)>& fn);

// mergePermutation: the AND of the default affinity and every non-nil mask;
// preferred when every hint is preferred and all non-nil masks are equal.
TopologyHint MergePermutation(const BitMask& default_affinity,
                              const std::vector<TopologyHint>& permutation);

// The maximum over dimensions of the narrowest non-nil mask's bit count.
int BestNonPreferredAffinityCount(const std::vector<std::vector<TopologyHint>>& dims);

// HintMerger: the comparison of merged permutations.
class HintMerger {
 public:
  HintMerger(const NumaInfo* numa_info, std::vector<std::vector<TopologyHint>> hints,
             std::string policy_name, PolicyOptions opts);
  // The best merged hint, or {default affinity, false} when there is none.
  TopologyHint Merge() const;
  // compare(current, candidate); `current` may be null. Returns which of the
  // two is better (a pointer to one of them).
  const TopologyHint* Compare(const TopologyHint* current, const TopologyHint* candidate) const;
  int best_non_preferred_affinity_count() const { return best_non_preferred_; }

 private:
  const TopologyHint* CompareMasks(const TopologyHint* current,
                                   const TopologyHint* candidate) const;

  const NumaInfo* numa_info_;
  std::vector<std::vector<TopologyHint>> hints_;
  std::string policy_name_;
  PolicyOptions opts_;
  int best_non_preferred_ = 0;
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string Name() const = 0;
  // The best hint and whether the pod (or container) can be admitted.
  virtual std::pair<TopologyHint, bool> Merge(
      const std::vector<ProviderHints>& providers_hints) const = 0;
};

// best-effort, restricted or single-numa-node over `numa_info` (which must
// outlive the policy). Anything else: `unknown policy: "<name>"`.
absl::StatusOr<std::unique_ptr<Policy>> NewPolicy(const std::string& name,
                                                  const NumaInfo* numa_info,
                                                  const PolicyOptions& opts);

}  // namespace devmgr::topology

#endif  // DEVMGR_TOPOLOGY_POLICY_H_
