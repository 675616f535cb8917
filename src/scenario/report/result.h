// The outcome of running scenarios: per scenario, per step, with every
// failed expectation (what, expected, actual) and the evidence a failure
// report shows (recent devmgr log lines, plugin output tails). Reports
// (human, JUnit, JSON) are built from these in report.h.
#ifndef DEVMGR_SCENARIO_REPORT_RESULT_H_
#define DEVMGR_SCENARIO_REPORT_RESULT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "scenario/format/scenario.h"

namespace devmgr::scenario {

// One failed expectation or step.
struct Failure {
  Location loc;
  // What was checked, e.g. "pods['gpu'].containers['cuda'].devices['example.com/gpu']".
  std::string what;
  std::string expected;
  std::string actual;
};

enum class Outcome {
  kPassed,
  kFailed,   // an expectation or a step failed
  kSkipped,  // filtered out (--focus/--skip, versions:) or after a failure
  kError,    // the environment failed (exit code 3)
};

// "passed", "failed", "skipped", "error".
const char* OutcomeName(Outcome o);

struct StepResult {
  int index = 0;  // 1-based; 0 is the set-up (node and plugins)
  std::string kind;
  std::string description;
  Location loc;
  Outcome outcome = Outcome::kPassed;
  absl::Duration duration = absl::ZeroDuration();
  // One-line summary of a failure (also of an environment error).
  std::string message;
  std::vector<Failure> failures;
  // Informational notes shown with the step (e.g. an admission verdict).
  std::vector<std::string> notes;
};

struct ScenarioResult {
  std::string name;  // scenario name, plus " [1.31]" when run per version
  std::string file;
  std::string kubelet_version;  // profile name
  Outcome outcome = Outcome::kPassed;
  std::string message;  // why it failed/errored/was skipped
  absl::Duration duration = absl::ZeroDuration();
  std::vector<StepResult> steps;
  // Evidence for failures.
  std::vector<std::string> log_tail;
  std::map<std::string, std::vector<std::string>> plugin_output;
  std::string work_dir;  // kept with --keep-dir
};

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_REPORT_RESULT_H_
