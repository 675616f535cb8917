#include "scenario/compare/stepwise_comparison.h"

#include <ostream>

#include "absl/time/clock.h"
#include "fmt/format.h"
#include "scenario/steps/step_interpreter.h"

namespace devmgr::scenario {

ScenarioResult StepwiseComparison::Go(const std::string& display) {
  const absl::Time t0 = absl::Now();
  result_.file = sc_.file;
  result_.kubelet_version = opts_.version;
  Print(fmt::format("=== COMPARE {} with the real kubelet {}{}\n", display, opts_.version,
                    HeaderSuffix()));
  std::string ended;
  StepResult setup;
  setup.index = 0;
  setup.kind = "setup";
  setup.description = SetupDescription();
  setup.loc = Location{sc_.file, 0, 0};
  absl::Status s = Setup(&setup);
  result_.name = display + " vs kubelet " + (Release().empty() ? opts_.version : Release());
  if (!s.ok()) {
    setup.outcome = Outcome::kError;
    setup.message = std::string(s.message());
    ended = "the oracle's side failed: " + setup.message;
  }
  Finish(&setup);
  for (size_t i = 0; i < sc_.steps.size(); ++i) {
    const Step& st = sc_.steps[i];
    const int index = static_cast<int>(i + 1);
    StepResult r;
    r.index = index;
    r.kind = StepKindName(st.kind);
    r.loc = st.loc;
    r.description = st.name.empty() ? DescribeStep(st) : st.name;
    const StepResult* d = DevmgrStep(index);
    if (!ended.empty()) {
      r.outcome = Outcome::kSkipped;
      r.message = "not compared: " + ended;
    } else if (d == nullptr || d->outcome == Outcome::kFailed || d->outcome == Outcome::kError) {
      ended = fmt::format("devmgr's run {} at step {}", d == nullptr ? "ended" : "failed", index);
      r.outcome = Outcome::kSkipped;
      r.message = "not compared: " + ended;
    } else if (d->outcome == Outcome::kSkipped) {
      r.outcome = Outcome::kSkipped;
      r.message = d->message.empty() ? "skipped on devmgr's side" : d->message;
    } else {
      RunStep(st, index, &r, &ended);
    }
    Finish(&r);
  }
  Teardown();
  if (result_.outcome == Outcome::kPassed && !ended.empty()) {
    result_.message = "compared until: " + ended;
  }
  result_.duration = absl::Now() - t0;
  const char* verdict = result_.outcome == Outcome::kPassed  ? "SAME"
                        : result_.outcome == Outcome::kError ? "ERROR"
                                                             : "DIFFERENT";
  Print(fmt::format("--- {} {} ({:.2f}s)\n", verdict, result_.name,
                    absl::ToDoubleSeconds(result_.duration)));
  return std::move(result_);
}

void StepwiseComparison::Print(const std::string& s) const {
  if (opts_.runner.out == nullptr) return;
  *opts_.runner.out << s;
  opts_.runner.out->flush();
}

const StepResult* StepwiseComparison::DevmgrStep(int index) const {
  for (const StepResult& r : devmgr_.steps) {
    if (r.index == index) return &r;
  }
  return nullptr;
}

void StepwiseComparison::Finish(StepResult* r) {
  std::string line = fmt::format("  [{}] {} ", r->index, r->description);
  switch (r->outcome) {
    case Outcome::kPassed:
      line += "... same";
      break;
    case Outcome::kFailed:
      line += "... DIFFERENT";
      break;
    case Outcome::kSkipped:
      line += "-- " + r->message;
      break;
    case Outcome::kError:
      line += "... ERROR: " + r->message;
      break;
  }
  Print(line + "\n");
  for (const std::string& n : r->notes) {
    if (n != r->message) Print(fmt::format("        {}\n", n));
  }
  for (const Failure& f : r->failures) {
    Print(fmt::format("      {}\n        kubelet: {}\n        devmgr:  {}\n", f.what, f.expected,
                      f.actual));
  }
  if ((r->outcome == Outcome::kFailed || r->outcome == Outcome::kError) &&
      result_.outcome == Outcome::kPassed) {
    result_.outcome = r->outcome;
    result_.message = fmt::format("step {} ({}): {}", r->index, r->description, r->message);
  }
  result_.steps.push_back(std::move(*r));
}

}  // namespace devmgr::scenario
