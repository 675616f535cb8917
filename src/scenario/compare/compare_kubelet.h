// `devmgr run --compare-kubelet VERSION`: differential runs against the
// real kubelet device manager (docs/oracle.md, "Differential runs").
//
// Each scenario runs twice, each side with its own fresh sample-plugin
// processes of the scenario's configuration: once on devmgr (the ordinary
// runner, which also checks the scenario's expectations) and once on a
// kubelet-oracle process of the same release, step by step. After the
// set-up and after every step both sides are observed (capacity and
// allocatable, device sets with health and NUMA nodes, admission verdicts
// and messages, devices per container, runtime options, the RPCs each
// plugin received, the checkpoint with its map-ordered lists sorted and its
// checksum dropped) and compared. Devices the kubelet picks in Go map order
// are compared up to a renaming: each side's choice is paired with the
// other's (same count, same NUMA nodes, consistent over the whole run), and
// the oracle's device IDs are renamed through that pairing wherever they
// appear (envs, mounts, RPC arguments, the checkpoint).
//
// A step the real code cannot take (the virtual clock, a stopped kubelet,
// a shell command) ends the comparison of that scenario with a note; a
// scenario that needs what the oracle lacks (the plugin watcher, other
// hint providers) is not compared at all, with the reason. Differences
// listed in the explained table below are notes; any other is a failure.
#ifndef DEVMGR_SCENARIO_COMPARE_COMPARE_KUBELET_H_
#define DEVMGR_SCENARIO_COMPARE_COMPARE_KUBELET_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scenario/format/scenario.h"
#include "scenario/report/result.h"
#include "scenario/run/runner.h"

namespace devmgr::scenario {

// The oracle binary of profile `version`: `flag` (a binary, or a directory
// holding kubelet-oracle-<version>), else $DEVMGR_KUBELET_ORACLE (the
// same), else kubelet-oracle/kubelet-oracle-<version> beside the devmgr
// binary (the build tree's build/kubelet-oracle). NotFound names
// `make kubelet-oracle`.
absl::StatusOr<std::string> FindKubeletOracle(const std::string& flag, const std::string& version,
                                              const std::string& devmgr_bin);

// Why `sc` cannot be compared with the oracle at all ("" = it can).
std::string NotComparableReason(const Scenario& sc);

struct CompareOptions {
  std::string version;        // the profile, e.g. "1.37"
  std::string oracle_binary;  // from FindKubeletOracle
  RunnerOptions runner;       // the devmgr side's options (after_step is set here)
};

// Runs `sc` on devmgr (result 0, named `display`) and compares it with the
// oracle (result 1, named "<display> vs kubelet <release>"): failed on an
// unexplained difference, passed otherwise (notes: explained differences,
// where and why the comparison ended); skipped when not comparable.
std::vector<ScenarioResult> CompareScenario(const Scenario& sc, const std::string& display,
                                            const CompareOptions& opts);

// One known, reviewed difference between devmgr and the real kubelet.
struct ExplainedDifference {
  const char* scenario;  // regex (search) on the scenario name
  const char* versions;  // "" = every profile, else a list "1.33,1.34"
  const char* what;      // regex (search) on the difference's path
  const char* reason;
};

// The entry of the reviewed table that explains the difference at path
// `what` of scenario `scenario` on profile `version`; nullptr when none.
const ExplainedDifference* FindExplained(const std::string& scenario, const std::string& version,
                                         const std::string& what);

// The reviewed table (compare_kubelet_explained.cc; docs/profiles.md lists
// each entry with its reason).
const std::vector<ExplainedDifference>& ExplainedDifferences();

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_COMPARE_COMPARE_KUBELET_H_
