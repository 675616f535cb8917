// Checking a step's expectations against what the runner observed. Pure
// functions over plain data (Observed), so every matcher is unit-tested
// without a node. Each kind of expectation is checked in the file of its
// kind (expect_kind.h); this header holds what the runner sees and what the
// kinds share.
#ifndef DEVMGR_SCENARIO_EXPECT_EXPECTATIONS_H_
#define DEVMGR_SCENARIO_EXPECT_EXPECTATIONS_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "apiserver/server.h"
#include "dra/driver_calls.h"
#include "dra/manager.h"
#include "manager/manager.h"
#include "nlohmann/json.hpp"
#include "node/pod_manager.h"
#include "node/status_file.h"
#include "scenario/expect/pod_resources_check.h"
#include "scenario/format/scenario.h"
#include "scenario/report/result.h"

namespace devmgr::scenario {

// One merge of the topology manager's last admission of a pod.
struct MergeObs {
  std::string container;  // empty: the pod scope's merge
  std::map<std::string, ResourceHints> providers;
};

// A snapshot of everything expectations can look at.
struct Observed {
  node::NodeResources node;                        // after a node-status pass
  std::vector<manager::ResourceStatus> resources;  // manager Snapshot()
  std::vector<node::PodRecord> pods;               // admission order
  std::vector<std::string> active_pod_uids;
  std::vector<manager::PodAllocation> allocations;
  std::optional<std::string> checkpoint_bytes;  // nullopt: no file
  // Per plugin: the call-log records since the step started and since the
  // plugin first started (the reference plugin's JSON lines, parsed).
  std::map<std::string, std::vector<nlohmann::json>> calls_since_step;
  std::map<std::string, std::vector<nlohmann::json>> calls_since_start;
  std::vector<std::string> log_lines;  // recent devmgr log
  // Topology: pod UID -> the merges of its last admission; (pod UID,
  // container) -> the stored NUMA affinity (absent or nullopt: none).
  std::map<std::string, std::vector<MergeObs>> merges;
  std::map<std::pair<std::string, std::string>, std::optional<std::vector<int>>> numa_affinity;
  // pod UID -> its containers' allocatedResourcesStatus (health_check.h).
  std::map<std::string, std::vector<manager::ContainerResourceStatus>> pod_statuses;
  // What the PodResources API answered (only when expected).
  std::optional<PodResourcesObs> pod_resources;
  // DRA, gathered only when expected: the API store's ResourceClaims, the
  // DRA manager's claim-info cache (by claim UID), the node's driver calls
  // (since its first start, and since the step began), dra_manager_state
  // (nullopt: no file) and the kubelet minor whose layout it is read with.
  std::vector<nlohmann::json> dra_claims;
  std::map<std::string, dra::ClaimInfo> dra_claim_infos;
  std::vector<dra::DriverCallRecord> dra_calls_since_start;
  std::vector<dra::DriverCallRecord> dra_calls_since_step;
  std::optional<std::string> dra_checkpoint_bytes;
  // Every ResourceSlice in the API store (gathered only when expected).
  std::vector<nlohmann::json> dra_slices;
  // The requests to the API endpoint since it started and since the step
  // began, oldest first (gathered only when expected).
  std::vector<apiserver::RequestRecord> api_requests_since_start;
  std::vector<apiserver::RequestRecord> api_requests_since_step;
  int kubelet_minor = 0;
  // The values captured by earlier steps (name -> device ids, sorted).
  std::map<std::string, std::vector<std::string>> captures;
};

// "[{[0 1] true} {<nil> false}]", or "<nil>" for a nil list
// (expect_topology.cc).
std::string HintListString(const HintList& hints);

// Finds a pod by UID, namespace/name or (unique) name.
const node::PodRecord* FindPod(const std::vector<node::PodRecord>& pods, const std::string& ref);

// Every failed expectation (empty: all hold), kind by kind in the order of
// ExpectKinds().
std::vector<Failure> CheckExpectations(const Expectations& e, const Observed& o);

// One SetExpect against a set of ids (`got`, any order; nullopt: the set is
// not there at all), with `captures` for `$name` references. `where` names
// it in failures.
void CheckSet(const SetExpect& e, const Location& loc, const std::string& where,
              const std::optional<std::vector<std::string>>& got,
              const std::map<std::string, std::vector<std::string>>& captures,
              std::vector<Failure>* out);

// One DeviceExpect against the devices a container holds (`ids`, any
// order) and the NUMA nodes of their topology. `where` names it in failures.
void CheckDevices(const DeviceExpect& d, const std::string& where, std::vector<std::string> ids,
                  const std::set<int64_t>& numa,
                  const std::map<std::string, std::vector<std::string>>& captures,
                  std::vector<Failure>* out);

// Matches `want` one-to-one against `got` in any order (`match(w, g)`):
// the assignment of wanted items to distinct actual items, or nullopt when
// none exists. Bipartite matching, so patterns that overlap still pair up.
template <typename Want, typename Got, typename Match>
std::optional<std::vector<size_t>> MatchUnordered(const std::vector<Want>& want,
                                                  const std::vector<Got>& got, Match match);

// JSON subset matching for call arguments: objects match when every
// expected key matches; arrays when they have the same length and match
// element-wise; {"regex": RE} matches a string by regex; numbers, strings,
// booleans and null by equality (a string "2" also matches the number 2).
// (expect_calls.cc)
bool JsonMatches(const nlohmann::json& expected, const nlohmann::json& actual);

// The pod status message the kubelet writes when admission rejects a pod
// (kubelet.go rejectPod: the admission message behind a fixed prefix; the
// same in every supported version, 1.30-1.37; expect_pods.cc).
std::string RejectedStatusMessage(const std::string& message);

// ["a","b"] -> "[a b]" (Go's %v of a []string), for reports.
std::string ListString(const std::vector<std::string>& v);

// ---- implementation ----

namespace internal {
bool Augment(size_t i, const std::vector<std::vector<bool>>& ok, std::vector<bool>* seen,
             std::vector<int64_t>* owner);
}  // namespace internal

template <typename Want, typename Got, typename Match>
std::optional<std::vector<size_t>> MatchUnordered(const std::vector<Want>& want,
                                                  const std::vector<Got>& got, Match match) {
  std::vector<std::vector<bool>> ok(want.size(), std::vector<bool>(got.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    for (size_t j = 0; j < got.size(); ++j) ok[i][j] = match(want[i], got[j]);
  }
  std::vector<int64_t> owner(got.size(), -1);  // got index -> want index
  for (size_t i = 0; i < want.size(); ++i) {
    std::vector<bool> seen(got.size(), false);
    if (!internal::Augment(i, ok, &seen, &owner)) return std::nullopt;
  }
  std::vector<size_t> out(want.size());
  for (size_t j = 0; j < got.size(); ++j) {
    if (owner[j] >= 0) out[static_cast<size_t>(owner[j])] = j;
  }
  return out;
}

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_EXPECT_EXPECTATIONS_H_
