// `devmgr run --kubelet-version LIST`: which (scenario, profile) runs a
// version list makes, honouring node.kubelet_versions and applies_to, and
// the per-version report (kubelet/version_matrix.h) built from the results.
#ifndef DEVMGR_SCENARIO_REPORT_VERSION_MATRIX_H_
#define DEVMGR_SCENARIO_REPORT_VERSION_MATRIX_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kubelet/profile.h"
#include "kubelet/version_matrix.h"
#include "scenario/format/scenario.h"
#include "scenario/report/result.h"

namespace devmgr::scenario {

struct PlannedRun {
  std::string version;  // profile name
  std::string display;  // the result's name: "basic", or "basic [1.37]"
  bool skip = false;    // reported skipped, with `reason`
  std::string reason;
};

// The runs of `sc` for the --kubelet-version list `versions`.
// Single version (matrix false): node.kubelet_versions when given, else
// that version. Matrix: every listed version, the ones outside the
// scenario's node.kubelet_versions skipped; the display name always names
// the version. In both, a version outside applies_to is skipped.
std::vector<PlannedRun> PlanRuns(const Scenario& sc, const std::vector<std::string>& versions,
                                 bool matrix);

// The profile of `version` with the gates of `cli_gates` (run's
// --feature-gates) and then the scenario's node.feature_gates applied.
// InvalidArgument "node.feature_gates under kubelet 1.33: unrecognized
// feature gate: X" (or "--feature-gates ...") when the version rejects one.
absl::StatusOr<Profile> ScenarioProfile(const Scenario& sc, const std::string& version,
                                        const std::string& cli_gates);

// Records a scenario's result under `version` in `scenarios` (case
// "<scenario>") and each of its steps in `steps` ("<scenario> › step N:
// <description>").
void RecordResult(VersionMatrix* scenarios, VersionMatrix* steps, const std::string& scenario_name,
                  const std::string& version, const ScenarioResult& r);

// The per-version table of scenarios and the scenarios and steps whose
// verdict differs, as `devmgr run` prints them.
std::string MatrixReport(const VersionMatrix& scenarios, const VersionMatrix& steps);

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_REPORT_VERSION_MATRIX_H_
