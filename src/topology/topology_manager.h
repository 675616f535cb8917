// TopologyManager: the kubelet's topology manager as the pod admit handler
// that allocates (pkg/kubelet/cm/topologymanager):
// its policy and scope, the hint providers (the device manager first, then
// any static stand-ins for the CPU and memory managers), the merge, the
// TopologyAffinityError rejection, and the store of the affinity chosen per
// container that the device manager's filterByAffinity reads.
#ifndef DEVMGR_TOPOLOGY_TOPOLOGY_MANAGER_H_
#define DEVMGR_TOPOLOGY_TOPOLOGY_MANAGER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "kubelet/profile.h"
#include "pod/pod.h"
#include "topology/admit_result.h"
#include "topology/affinity_store.h"
#include "topology/hint_provider.h"
#include "topology/numa_info.h"
#include "topology/policy.h"
#include "topology/policy_options.h"
#include "topology/topology_hint.h"

namespace devmgr::topology {

inline constexpr char kScopeContainer[] = "container";
inline constexpr char kScopePod[] = "pod";

inline constexpr char kTopologyAffinityErrorReason[] = "TopologyAffinityError";
inline constexpr char kTopologyAffinityErrorMessage[] =
    "Resources cannot be allocated with Topology locality";

// --topology-manager-policy, --topology-manager-scope and
// --topology-manager-policy-options.
struct TopologyManagerConfig {
  std::string policy = kPolicyNone;
  std::string scope = kScopeContainer;
  std::map<std::string, std::string> policy_options;
  OptionGates gates;
};

// One merge, kept for status and scenario checks.
struct MergeRecord {
  // The container (container scope), or empty (pod scope).
  std::string container;
  // Each provider's name and hints, in provider order.
  std::vector<std::pair<std::string, ProviderHints>> provider_hints;
  TopologyHint best;
  bool admit = false;
};

struct AdmissionTrace {
  std::string pod_uid;
  std::vector<MergeRecord> merges;  // none under the "none" policy
  AdmitResult result;
};

// Counters of the kubelet's topology-manager metrics.
struct TopologyMetrics {
  int64_t admission_requests_total = 0;
  int64_t admission_errors_total = 0;
  // kubelet_container_aligned_compute_resources_count (1.32+), by scope.
  int64_t aligned_container = 0;
  int64_t aligned_pod = 0;
};

// Admissions: Admit is the one admit handler for every policy, "none"
// included. It takes no lock of its own across the providers' calls (hints,
// Allocate and the RPCs behind them): calls of Admit must be serialised by
// the caller, as the kubelet's are (it admits pods one at a time from its
// sync loop, HandlePodAdditions). node::Node::AdmitPod is that caller.
// Everything else (GetAffinity, GetHint, RemovePod, LastAdmission, metrics)
// is thread-safe and may be called at any time, from the providers during
// Admit too; mu_ guards that state and is never held across a provider call.
class TopologyManager final : public TopologyAffinityStore {
 public:
  // NewManager. "none" ignores options and scope. Otherwise, in this order:
  // the options (NewPolicyOptions texts), the NUMA info (wrapped as
  // "cannot discover NUMA topology: <err>"), "unsupported on machines with
  // more than <max> NUMA Nodes", `unknown policy: "<p>"`,
  // `unknown scope: "<s>"`.
  static absl::StatusOr<std::unique_ptr<TopologyManager>> Create(
      const TopologyManagerConfig& config, const std::vector<NumaNode>& topology,
      const Profile& profile = DefaultProfile());

  // Providers are asked in the order they were added; not owned; must
  // outlive the manager (or at least every Admit). Add them all before the
  // first Admit.
  void AddHintProvider(HintProvider* provider);

  // The admit handler, for every policy: under "none", Allocate every
  // container (kubelet order) on every provider, no hints asked; under the
  // container scope, per container: hints, merge, reject
  // (TopologyAffinityError) or store and Allocate; under the pod scope, one
  // merge for the pod, then store and Allocate per container. An Allocate
  // error rejects with UnexpectedAdmissionError / "Allocate failed due to
  // <err>, which is unexpected". Nothing is rolled back. Not reentrant:
  // callers serialise admissions (see above).
  AdmitResult Admit(const pod::Pod& pod);

  // TopologyAffinityStore: the stored hint's mask (nullopt when nil or when
  // nothing is stored).
  std::optional<BitMask> GetAffinity(const std::string& pod_uid,
                                     const std::string& container_name) const override;
  // The stored hint, or the zero hint {nil, false}.
  TopologyHint GetHint(const std::string& pod_uid, const std::string& container_name) const;
  // Whether a hint is stored for the container.
  bool HasHint(const std::string& pod_uid, const std::string& container_name) const;
  // Forgets the pod's hints (RemoveContainer for each of its containers)
  // and its last admission's trace.
  void RemovePod(const std::string& pod_uid);

  // The pod's last admission, or nullopt.
  std::optional<AdmissionTrace> LastAdmission(const std::string& pod_uid) const;
  TopologyMetrics metrics() const;

  const std::string& policy_name() const { return config_.policy; }
  const std::string& scope_name() const { return config_.scope; }
  bool is_none() const { return policy_ == nullptr; }
  const NumaInfo& numa_info() const { return numa_info_; }

 private:
  TopologyManager(TopologyManagerConfig config, NumaInfo numa_info, Profile profile);

  AdmitResult AdmitNone(const pod::Pod& pod, AdmissionTrace* trace);
  AdmitResult AdmitContainerScope(const pod::Pod& pod, AdmissionTrace* trace);
  AdmitResult AdmitPodScope(const pod::Pod& pod, AdmissionTrace* trace);
  // Allocate on every provider; the first error is returned.
  absl::Status AllocateAligned(const pod::Pod& pod, const pod::Container& container);
  void SetHint(const std::string& pod_uid, const std::string& container_name,
               const TopologyHint& hint) ABSL_LOCKS_EXCLUDED(mu_);
  void CountError() ABSL_LOCKS_EXCLUDED(mu_);

  const TopologyManagerConfig config_;
  const NumaInfo numa_info_;
  const Profile profile_;
  PolicyOptions opts_;
  std::unique_ptr<Policy> policy_;  // null under "none"
  // Written only before the first Admit (AddHintProvider).
  std::vector<HintProvider*> providers_;

  mutable absl::Mutex mu_;
  // pod UID -> container -> hint.
  std::map<std::string, std::map<std::string, TopologyHint>> hints_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, AdmissionTrace> traces_ ABSL_GUARDED_BY(mu_);
  TopologyMetrics metrics_ ABSL_GUARDED_BY(mu_);
};

// Go's %v of a provider's hints: "map[vendor.com/gpu:[{01 true} {11 false}]]".
std::string ProviderHintsString(const ProviderHints& hints);

}  // namespace devmgr::topology

#endif  // DEVMGR_TOPOLOGY_TOPOLOGY_MANAGER_H_
