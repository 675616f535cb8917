// `devmgr run`'s suite: the scenario files named on the command line, loaded
// and parsed up front, then every planned (scenario, profile) run in order,
// with --focus/--skip and interruption, and the verdict of the whole run.
#ifndef DEVMGR_SCENARIO_RUN_SUITE_H_
#define DEVMGR_SCENARIO_RUN_SUITE_H_

#include <functional>
#include <optional>
#include <ostream>
#include <regex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scenario/format/scenario.h"
#include "scenario/report/result.h"
#include "scenario/report/version_matrix.h"
#include "scenario/run/runner.h"

namespace devmgr::scenario {

// The scenario files under `paths`: a file as given, a directory every
// *.yaml / *.yml below it, recursively, in sorted order. InvalidArgument
// "DIR: no *.yaml scenario files" for a directory without any.
absl::StatusOr<std::vector<std::string>> CollectScenarioFiles(
    const std::vector<std::string>& paths);

// Parses every file; a bad file stops the run before anything starts.
// InvalidArgument with one line per bad file ("file:line: ...").
absl::StatusOr<std::vector<Scenario>> LoadScenarios(const std::vector<std::string>& files);

struct SuiteOptions {
  std::vector<std::string> versions;  // --kubelet-version, expanded
  bool matrix = false;                // a version list: display names carry "[1.xx]"
  std::optional<std::regex> focus;    // only runs whose display name matches
  std::optional<std::regex> skip;     // not those
  RunnerOptions runner;               // runner.cancel also skips the remaining runs
  // Carries out one planned run instead of RunScenario (e.g. `--compare-
  // kubelet`: the devmgr run and its comparison); empty: RunScenario.
  std::function<std::vector<ScenarioResult>(const Scenario&, const PlannedRun&,
                                            const RunnerOptions&)>
      run_planned;
};

struct SuiteResult {
  std::vector<ScenarioResult> results;
  std::string matrix_report;  // matrix runs only: MatrixReport()
  int focus_matched = 0;      // runs whose name --focus matches (all without --focus)
  absl::Duration elapsed;
};

// Runs every planned run of every scenario in order (skipped runs are
// reported with their reason).
SuiteResult RunSuite(const std::vector<Scenario>& scenarios, const SuiteOptions& o);

// Whether any planned run has the PodResources Get gate on (so the run's
// metrics declare the Get counters).
bool AnyRunHasPodResourcesGet(const std::vector<Scenario>& scenarios, const SuiteOptions& o);

// The closing lines: the summary, each failure, the matrix report.
void PrintSuiteSummary(const SuiteResult& r, std::ostream& out);

enum class SuiteVerdict { kPassed, kFailed, kError };
// kError when a run could not be carried out (an environment error), else
// kFailed when one failed or the run was interrupted.
SuiteVerdict Verdict(const SuiteResult& r, bool interrupted);

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_RUN_SUITE_H_
