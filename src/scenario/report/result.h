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

// One request to the API endpoint, as the report shows it.
struct ApiCall {
  std::string method;
  std::string target;  // path and query
  std::string user_agent;
  int status = 0;
  absl::Time time;  // when it arrived (real time)
};

// An injected API fault that fired (docs/api-server.md, "Fault injection")
// and what the same client (the same User-Agent) did after it: its next
// requests, up to and including its next one with the same method and path
// (at most kApiFaultFollowers of them).
struct ApiFaultFiring {
  std::string fault;  // the SPEC
  int step = 0;       // the step it fired in (0: the set-up)
  ApiCall call;
  std::vector<ApiCall> after;
  bool repeated = false;  // after ends with the same method and path
  size_t later = 0;       // the client's requests after it in all
};
inline constexpr size_t kApiFaultFollowers = 8;

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
  // Every injected API fault that fired, in order.
  std::vector<ApiFaultFiring> api_faults;
};

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_REPORT_RESULT_H_
