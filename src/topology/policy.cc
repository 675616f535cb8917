#include "topology/policy.h"

#include <optional>

#include "common/logging.h"
#include "fmt/format.h"

namespace devmgr::topology {
namespace {

// The narrowest non-nil mask of a dimension (nullptr when all are nil).
const BitMask* NarrowestMask(const std::vector<TopologyHint>& hints) {
  const BitMask* best = nullptr;
  for (const TopologyHint& h : hints) {
    if (!h.numa_node_affinity.has_value()) continue;
    if (best == nullptr || h.numa_node_affinity->IsNarrowerThan(*best)) {
      best = &*h.numa_node_affinity;
    }
  }
  return best;
}

void IterateFrom(const std::vector<std::vector<TopologyHint>>& dims, size_t i,
                 std::vector<TopologyHint>& accum,
                 const std::function<void(const std::vector<TopologyHint>&)>& fn) {
  if (i == dims.size()) {
    fn(accum);
    return;
  }
  for (const TopologyHint& h : dims[i]) {
    accum.push_back(h);
    IterateFrom(dims, i + 1, accum, fn);
    accum.pop_back();
  }
}

class MergingPolicy final : public Policy {
 public:
  MergingPolicy(std::string name, const NumaInfo* numa_info, PolicyOptions opts)
      : name_(std::move(name)), numa_info_(numa_info), opts_(opts) {}

  std::string Name() const override { return name_; }

  std::pair<TopologyHint, bool> Merge(
      const std::vector<ProviderHints>& providers_hints) const override {
    std::vector<std::vector<TopologyHint>> dims = FilterProvidersHints(providers_hints);
    const bool single = name_ == kPolicySingleNumaNode;
    if (single) dims = FilterSingleNumaHints(dims);
    HintMerger merger(numa_info_, std::move(dims), name_, opts_);
    TopologyHint best = merger.Merge();
    if (single && best.numa_node_affinity.has_value() &&
        best.numa_node_affinity->IsEqual(numa_info_->DefaultAffinityMask())) {
      // "Any node" is expressed as a nil affinity.
      best.numa_node_affinity.reset();
    }
    // best-effort admits everything; restricted and single-numa-node only
    // a preferred result.
    const bool admit = name_ == kPolicyBestEffort ? true : best.preferred;
    return {best, admit};
  }

 private:
  const std::string name_;
  const NumaInfo* const numa_info_;
  const PolicyOptions opts_;
};

}  // namespace

std::vector<std::vector<TopologyHint>> FilterProvidersHints(
    const std::vector<ProviderHints>& providers_hints) {
  std::vector<std::vector<TopologyHint>> out;
  for (const ProviderHints& hints : providers_hints) {
    if (hints.empty()) {
      DM_INFO("Hint Provider has no preference for NUMA affinity with any resource");
      out.push_back({TopologyHint{std::nullopt, true}});
      continue;
    }
    for (const auto& [resource, list] : hints) {
      if (!list.has_value()) {
        DM_INFO("Hint Provider has no preference for NUMA affinity with resource",
                {"resource", resource});
        out.push_back({TopologyHint{std::nullopt, true}});
        continue;
      }
      if (list->empty()) {
        DM_INFO("Hint Provider has no possible NUMA affinities for resource",
                {"resource", resource});
        out.push_back({TopologyHint{std::nullopt, false}});
        continue;
      }
      out.push_back(*list);
    }
  }
  return out;
}

std::vector<std::vector<TopologyHint>> FilterSingleNumaHints(
    const std::vector<std::vector<TopologyHint>>& dims) {
  std::vector<std::vector<TopologyHint>> out;
  for (const auto& dim : dims) {
    std::vector<TopologyHint> kept;
    for (const TopologyHint& h : dim) {
      if (!h.preferred) continue;
      if (!h.numa_node_affinity.has_value() || h.numa_node_affinity->Count() == 1) {
        kept.push_back(h);
      }
    }
    out.push_back(std::move(kept));
  }
  return out;
}

void IterateAllProviderTopologyHints(
    const std::vector<std::vector<TopologyHint>>& dims,
    const std::function<void(const std::vector<TopologyHint>&)>& fn) {
  std::vector<TopologyHint> accum;
  IterateFrom(dims, 0, accum, fn);
}

TopologyHint MergePermutation(const BitMask& default_affinity,
                              const std::vector<TopologyHint>& permutation) {
  bool preferred = true;
  std::optional<BitMask> first;
  BitMask merged = default_affinity;
  for (const TopologyHint& h : permutation) {
    if (h.numa_node_affinity.has_value()) {
      if (!first.has_value()) first = *h.numa_node_affinity;
      if (!h.numa_node_affinity->IsEqual(*first)) preferred = false;
      merged.And(*h.numa_node_affinity);
    }
    if (!h.preferred) preferred = false;
  }
  return TopologyHint{merged, preferred};
}

int BestNonPreferredAffinityCount(const std::vector<std::vector<TopologyHint>>& dims) {
  int best = 0;
  for (const auto& dim : dims) {
    const BitMask* narrowest = NarrowestMask(dim);
    if (narrowest != nullptr && narrowest->Count() > best) best = narrowest->Count();
  }
  return best;
}

HintMerger::HintMerger(const NumaInfo* numa_info, std::vector<std::vector<TopologyHint>> hints,
                       std::string policy_name, PolicyOptions opts)
    : numa_info_(numa_info),
      hints_(std::move(hints)),
      policy_name_(std::move(policy_name)),
      opts_(opts),
      best_non_preferred_(BestNonPreferredAffinityCount(hints_)) {}

const TopologyHint* HintMerger::CompareMasks(const TopologyHint* current,
                                             const TopologyHint* candidate) const {
  const BitMask& cur = *current->numa_node_affinity;
  const BitMask& cand = *candidate->numa_node_affinity;
  if (cand.IsEqual(cur)) return current;
  BitMask best;
  if (policy_name_ != kPolicySingleNumaNode && opts_.prefer_closest_numa) {
    best = numa_info_->Closest(cur, cand);
  } else {
    best = numa_info_->Narrowest(cur, cand);
  }
  return best.IsEqual(cur) ? current : candidate;
}

const TopologyHint* HintMerger::Compare(const TopologyHint* current,
                                        const TopologyHint* candidate) const {
  // Merged hints always carry a mask; a zero mask never wins.
  if (candidate->numa_node_affinity->Count() == 0) return current;
  if (current == nullptr) return candidate;
  if (!current->preferred && candidate->preferred) return candidate;
  if (current->preferred && !candidate->preferred) return current;
  if (current->preferred && candidate->preferred) return CompareMasks(current, candidate);

  // Both non-preferred: get as close as possible to (but not above) the
  // best non-preferred affinity count B.
  const int b = best_non_preferred_;
  const int cur = current->numa_node_affinity->Count();
  const int cand = candidate->numa_node_affinity->Count();
  if (cur > b) return CompareMasks(current, candidate);
  if (cur == b) return cand == b ? CompareMasks(current, candidate) : current;
  if (cand > b) return current;
  if (cand == b) return candidate;
  if (cand > cur) return candidate;
  if (cand < cur) return current;
  return CompareMasks(current, candidate);
}

TopologyHint HintMerger::Merge() const {
  const BitMask default_affinity = numa_info_->DefaultAffinityMask();
  std::optional<TopologyHint> best;
  IterateAllProviderTopologyHints(hints_, [&](const std::vector<TopologyHint>& permutation) {
    TopologyHint merged = MergePermutation(default_affinity, permutation);
    const TopologyHint* winner = Compare(best ? &*best : nullptr, &merged);
    if (winner == &merged) best = merged;
  });
  if (!best.has_value()) return TopologyHint{default_affinity, false};
  return *best;
}

absl::StatusOr<std::unique_ptr<Policy>> NewPolicy(const std::string& name,
                                                  const NumaInfo* numa_info,
                                                  const PolicyOptions& opts) {
  if (name == kPolicyBestEffort || name == kPolicyRestricted || name == kPolicySingleNumaNode) {
    return std::unique_ptr<Policy>(new MergingPolicy(name, numa_info, opts));
  }
  return absl::InvalidArgumentError(fmt::format("unknown policy: \"{}\"", name));
}

}  // namespace devmgr::topology
