// StepwiseComparison: what the device-plugin and the DRA differential runs
// (compare_kubelet.cc, compare_kubelet_dra.cc) share: the run's frame (the
// header, the oracle's set-up as step 0, every step devmgr took replayed on
// the oracle until the comparison ends, the verdict line) and the report of
// each step. What is observed and compared is the subclass's.
#ifndef DEVMGR_SCENARIO_COMPARE_STEPWISE_COMPARISON_H_
#define DEVMGR_SCENARIO_COMPARE_STEPWISE_COMPARISON_H_

#include <string>

#include "absl/status/status.h"
#include "scenario/compare/compare_kubelet.h"
#include "scenario/format/scenario.h"
#include "scenario/report/result.h"

namespace devmgr::scenario {

class StepwiseComparison {
 public:
  StepwiseComparison(const Scenario& sc, const CompareOptions& opts, const ScenarioResult& devmgr)
      : sc_(sc), opts_(opts), devmgr_(devmgr) {}
  virtual ~StepwiseComparison() = default;
  StepwiseComparison(const StepwiseComparison&) = delete;
  StepwiseComparison& operator=(const StepwiseComparison&) = delete;

  // The comparison of the scenario devmgr ran as `display`: "<display> vs
  // kubelet <release>", failed on a difference, passed otherwise (with where
  // the comparison ended, when it ended early).
  ScenarioResult Go(const std::string& display);

 protected:
  // "=== COMPARE <display> with the real kubelet <version><suffix>".
  virtual std::string HeaderSuffix() const { return ""; }
  // Step 0's description.
  virtual std::string SetupDescription() const = 0;
  // Starts the oracle's side and compares the set-up into `setup`.
  virtual absl::Status Setup(StepResult* setup) = 0;
  // The oracle's kubernetes release ("" before it answered).
  virtual std::string Release() const = 0;
  // Replays step `index` on the oracle and compares; sets `*ended` when the
  // comparison cannot go on.
  virtual void RunStep(const Step& st, int index, StepResult* r, std::string* ended) = 0;
  virtual void Teardown() = 0;

  void Print(const std::string& s) const;
  // devmgr's result of step `index`, or null.
  const StepResult* DevmgrStep(int index) const;
  // Prints the step's line, its notes and differences, and records it.
  void Finish(StepResult* r);

  const Scenario& sc_;
  const CompareOptions& opts_;
  const ScenarioResult& devmgr_;
  ScenarioResult result_;
};

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_COMPARE_STEPWISE_COMPARISON_H_
