// `devmgr run --compare-kubelet VERSION` for DRA scenarios: differential
// runs against the real kubelet DRA manager (`pkg/kubelet/cm/dra` of the
// release, behind the kubelet oracle's `dra_*` ops; docs/oracle.md,
// "Differential runs", DRA).
//
// Each side has its own driver processes of the scenario's configuration
// (the same commands, each side's own registry, plugin and CDI directories)
// and its own embedded API endpoint, to which the drivers publish their
// slices and from which they GET claims. On the oracle's side this file is
// the kubelet's plugin watcher: a registration socket that appears in its
// registry directory is asked for GetInfo, registered with `dra_register`,
// and told the outcome (NotifyRegistrationStatus); one that goes away is
// deregistered.
//
// The scheduler and the resource claim controller are not the kubelet: the
// oracle's side gets the claims as devmgr's side had them after the same
// step (same UIDs, status.allocation, status.reservedFor; template claims
// with their generated names) and the pods as devmgr's sync resolved them
// (status.resourceClaimStatuses), in its API endpoint and in the oracle's
// fake clientset. What is compared after each step: per pod the
// prepare/unprepare verdict and error, per container the CDI device IDs
// (the kubelet's order), the DRAPlugin RPCs each driver received during the
// step (from each driver's call log), and dra_manager_state decoded, its
// entries sorted, its checksum left out.
#ifndef DEVMGR_SCENARIO_COMPARE_COMPARE_KUBELET_DRA_H_
#define DEVMGR_SCENARIO_COMPARE_COMPARE_KUBELET_DRA_H_

#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "scenario/compare/compare_kubelet.h"
#include "scenario/format/scenario.h"
#include "scenario/report/result.h"

namespace devmgr::scenario {

class RunContext;

// Why the DRA scenario `sc` cannot be compared with the oracle ("" = it can).
std::string DraNotComparableReason(const Scenario& sc);

// devmgr's side after a step: `compared` (the observation both sides
// make), and what the oracle's side is given for the same step: the
// ResourceClaims in devmgr's API store ("ns/name" -> object) and the pods'
// manifests as devmgr's sync resolved them (UID -> Pod).
struct DraObservation {
  nlohmann::json compared;
  // The drivers (plugin names) the node has called that wrote no call log
  // line: their RPCs cannot be compared (the scenario is then not
  // comparable).
  std::vector<std::string> silent_drivers;
  nlohmann::json claims = nlohmann::json::object();
  nlohmann::json pods = nlohmann::json::object();
};
DraObservation ObserveDevmgrDra(RunContext& ctx);

// Why devmgr's run of a DRA scenario cannot be compared after all ("" =
// it can): a driver the node called wrote no call log.
std::string DraNotComparableAfterRun(const std::map<int, DraObservation>& observations);

// Runs the oracle's side of `sc` step by step against devmgr's `devmgr`
// result and its observations (step index -> observation, 0 = set-up).
ScenarioResult CompareDraScenario(const Scenario& sc, const std::string& display,
                                  const CompareOptions& opts, const ScenarioResult& devmgr,
                                  const std::map<int, DraObservation>& observations);

namespace compare {

// Placeholder of each side's temp directory in observations.
inline constexpr char kWorkDirPlaceholder[] = "$WORK_DIR";

// dra_manager_state's bytes, normalized: {Data decoded, with
// ClaimInfoStateList sorted by ClaimUID} (the kubelet writes the claim-info
// cache's map in Go map order), the checksum left out. null: no file;
// {unreadable: why} when it does not decode.
nlohmann::json DraCheckpointJson(const std::string& bytes, bool exists);

// A DRA driver's call-log records (draplugin/call_log.h), normalized:
// [{method, service, claims: ["ns/name uid"...], errors: {uid: error}}] in
// the order received; the claims of one call sorted (the kubelet batches a
// pod's claims per driver from a map).
nlohmann::json DraCallsJson(const std::vector<nlohmann::json>& records);

// A pod's DRA sync as devmgr's pod record has it: {prepared, error}, where
// `reason`/`message` are the record's (the kubelet's "Failed to prepare
// dynamic resources: " event prefix is dropped: the manager's error is what
// the oracle returns).
nlohmann::json DevmgrPrepareVerdict(const std::string& reason, const std::string& message);

// A container's allocatedResourcesStatus (v1.ResourceStatus list, as the
// API's JSON has it; null: Go's nil, the field absent), normalized: the
// statuses sorted by name, each one's resources by resourceID, empty
// health and message left out (omitempty).
nlohmann::json HealthStatusJson(const nlohmann::json& statuses);

// From 1.36 the kubelet's GetResources collects a container's claims in a
// map (claim name -> request names) and appends each claim's CDI IDs in Go
// map order (pkg/kubelet/cm/dra/manager.go at v1.36.3 and v1.37.2; 1.34.4
// and 1.35.4 follow pod.spec.resourceClaims). For those releases each
// container's CDI IDs of an observation are stable-sorted by the UID of
// the claim that lists them in the observation's own checkpoint: the order
// within a claim is still compared, the order of the claims is not. IDs no
// claim lists stay in front, in their order.
void GroupCdiByClaim(nlohmann::json* observation);

}  // namespace compare
}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_COMPARE_COMPARE_KUBELET_DRA_H_
