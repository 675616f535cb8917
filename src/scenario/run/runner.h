// Running one scenario: a fresh emulated node on a virtual clock, the
// scenario's plugins as processes, each step bounded by a real-time timeout
// (actions run on a worker thread, so a plugin that hangs an RPC fails the
// step instead of hanging the runner), expectations polled until they hold,
// and everything torn down afterwards (processes killed and reaped, the
// node stopped, the temp dir removed unless kept).
#ifndef DEVMGR_SCENARIO_RUN_RUNNER_H_
#define DEVMGR_SCENARIO_RUN_RUNNER_H_

#include <atomic>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "kubelet/profile.h"
#include "scenario/format/scenario.h"
#include "scenario/report/result.h"
#include "scenario/run/run_metrics.h"

namespace devmgr::scenario {

class RunContext;

struct RunnerOptions {
  // The devmgr binary (for sample plugins and $DEVMGR_BIN).
  std::string devmgr_bin;
  // The profile used when a scenario names none.
  std::string default_kubelet_version = DefaultProfile().name;
  // A kubelet --feature-gates value applied to every run (before the
  // scenario's node.feature_gates).
  std::string feature_gates;
  // Keep the temp dir (its path is printed and in the result).
  bool keep_dir = false;
  // Human output as steps run; nullptr: silent.
  std::ostream* out = nullptr;
  // Set (e.g. by a SIGINT handler) to interrupt: the current step fails
  // with "interrupted" and the scenario is torn down.
  const std::atomic<bool>* cancel = nullptr;
  // The PodResources v1 socket served while a scenario runs (and re-served
  // after each kubelet restart): "" = <work dir>/pod-resources/kubelet.sock;
  // "off" = none; else this path (scenarios run one at a time).
  std::string pod_resources_socket;
  // Accumulates the kubelet metrics over every scenario run with these
  // options; nullptr: none. Must outlive the runs.
  RunMetrics* metrics = nullptr;
  // Where those metrics are served ("" = not served): $DEVMGR_METRICS_URL.
  std::string metrics_url;
  // Called after the set-up (step nullptr) and after every step that ran,
  // with the run's state: `devmgr run --compare-kubelet` observes devmgr
  // there (compare_kubelet.h). Empty: none.
  std::function<void(RunContext& ctx, const Step* step, const StepResult& r)> after_step;
  size_t log_tail_lines = 25;
  size_t output_tail_lines = 20;
};

// The profile names (e.g. "1.31") the scenario runs under: its
// node.kubelet_versions, else the default (validated by the caller).
std::vector<std::string> ScenarioVersions(const Scenario& sc, const std::string& default_version);

// Runs `sc` under kubelet profile `version`. `display_name` names it in
// output and results (e.g. "basic [1.31]").
ScenarioResult RunScenario(const Scenario& sc, const std::string& version,
                           const std::string& display_name, const RunnerOptions& opts);

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_RUN_RUNNER_H_
