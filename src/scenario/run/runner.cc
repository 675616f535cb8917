#include "scenario/run/runner.h"

#include <algorithm>
#include <map>

#include "fmt/format.h"
#include "scenario/expect/captures.h"
#include "scenario/expect/expectations.h"
#include "scenario/expect/health_check.h"
#include "scenario/report/api_faults.h"
#include "scenario/report/version_matrix.h"
#include "scenario/run/devmgr_backend.h"
#include "scenario/run/observe.h"
#include "scenario/run/run_context.h"
#include "scenario/steps/step_interpreter.h"

namespace devmgr::scenario {
namespace {

std::string Secs(absl::Duration d) { return fmt::format("{:.2f}s", absl::ToDoubleSeconds(d)); }

class Run {
 public:
  Run(const Scenario& sc, const std::string& version, const std::string& display,
      const RunnerOptions& opts)
      : sc_(sc),
        opts_(opts),
        gated_(ScenarioProfile(sc, version, opts.feature_gates)),
        ctx_(sc, gated_.ok() ? *gated_ : *ProfileForVersion(version), opts) {
    result_.name = display;
    result_.file = sc.file;
    result_.kubelet_version = ctx_.profile.name;
  }

  ScenarioResult Go() {
    const absl::Time t0 = absl::Now();
    Print(fmt::format("=== RUN  {}  ({})\n", result_.name, sc_.file));
    bool ok = Setup();
    for (size_t i = 0; i < sc_.steps.size(); ++i) {
      StepResult r = RunOne(sc_.steps[i], static_cast<int>(i + 1), ok);
      if (r.outcome == Outcome::kFailed || r.outcome == Outcome::kError) {
        ok = false;
        result_.outcome = r.outcome;
        result_.message = fmt::format(
            "step {} ({}) {}: {}", r.index, r.description,
            r.outcome == Outcome::kError ? "hit an environment error" : "failed", r.message);
      }
      result_.steps.push_back(std::move(r));
    }
    if (result_.outcome != Outcome::kPassed) CollectEvidence();
    CollectApiFaults();
    ctx_.Teardown();
    if (!opts_.keep_dir) result_.work_dir.clear();
    result_.duration = absl::Now() - t0;
    PrintSummary();
    return std::move(result_);
  }

 private:
  // One step: skipped after a failure or outside its versions, else run.
  StepResult RunOne(const Step& st, int index, bool ok) {
    StepResult r;
    r.index = index;
    r.kind = StepKindName(st.kind);
    r.loc = st.loc;
    r.description = st.name.empty() ? DescribeStep(st) : st.name;
    if (!ok) {
      r.outcome = Outcome::kSkipped;
      return r;
    }
    const std::string& v = ctx_.profile.name;
    if (!st.versions.empty() &&
        std::find(st.versions.begin(), st.versions.end(), v) == st.versions.end()) {
      r.outcome = Outcome::kSkipped;
      r.message = fmt::format("only for kubelet {}", ListString(st.versions));
      Print(fmt::format("  [{}] {}  -- skipped ({})\n", r.index, r.description, r.message));
      return r;
    }
    Print(fmt::format("  [{}] {} ", r.index, r.description));
    const absl::Time s0 = absl::Now();
    RunStep(st, &r);
    r.duration = absl::Now() - s0;
    if (opts_.after_step) opts_.after_step(ctx_, &st, r);
    PrintStepEnd(r);
    return r;
  }

  // ---- output ----

  void Print(const std::string& s) {
    if (opts_.out == nullptr) return;
    *opts_.out << s;
    opts_.out->flush();
  }

  void PrintStepEnd(const StepResult& r) {
    if (r.outcome == Outcome::kPassed) {
      Print(fmt::format("... ok ({})\n", Secs(r.duration)));
    } else {
      Print(fmt::format("... {} ({})\n", r.outcome == Outcome::kError ? "ERROR" : "FAIL",
                        Secs(r.duration)));
    }
    for (const std::string& n : r.notes) Print(fmt::format("        {}\n", n));
    if (r.outcome == Outcome::kPassed) return;
    if (!r.message.empty()) Print(fmt::format("      {}\n", r.message));
    for (const Failure& f : r.failures) {
      Print(fmt::format("      {}: {}\n", f.loc.ToString(), f.what));
      Print(fmt::format("        expected: {}\n", f.expected));
      Print(fmt::format("        actual:   {}\n", f.actual));
    }
  }

  void PrintSummary() {
    for (const ApiFaultFiring& f : result_.api_faults) {
      for (const std::string& l : ApiFaultLines(f)) Print(fmt::format("    {}\n", l));
    }
    if (result_.outcome != Outcome::kPassed) {
      if (!result_.log_tail.empty()) {
        Print("    recent devmgr log lines:\n");
        for (const auto& l : result_.log_tail) Print(fmt::format("      {}\n", l));
      }
      for (const auto& [name, lines] : result_.plugin_output) {
        Print(fmt::format("    plugin {} output (last {} lines):\n", name, lines.size()));
        for (const auto& l : lines) Print(fmt::format("      {}\n", l));
      }
    }
    if (opts_.keep_dir && !result_.work_dir.empty()) {
      Print(fmt::format("    kept work dir: {}\n", result_.work_dir));
    }
    const char* verdict = result_.outcome == Outcome::kPassed  ? "PASS"
                          : result_.outcome == Outcome::kError ? "ERROR"
                                                               : "FAIL";
    Print(fmt::format("--- {} {} ({})\n", verdict, result_.name, Secs(result_.duration)));
  }

  void CollectEvidence() {
    result_.log_tail = RecentLogLines(opts_.log_tail_lines);
    for (const auto& h : ctx_.hosts) {
      if (h->spec().external) continue;
      std::vector<std::string> tail = h->OutputTail(opts_.output_tail_lines);
      tail.insert(tail.begin(), fmt::format("[{}]", h->Describe()));
      result_.plugin_output[h->spec().name] = std::move(tail);
    }
  }

  // The injected API faults that fired and what their clients did next.
  void CollectApiFaults() {
    if (ctx_.api == nullptr) return;
    result_.api_faults = FindApiFaultFirings(ctx_.api->Requests(), [this](uint64_t seq) {
      int step = 0;  // the set-up
      for (const auto& [mark, index] : step_marks_) {
        if (seq > mark) step = index;
      }
      return step;
    });
  }

  // ---- set-up ----

  bool Setup() {
    StepResult r;
    r.index = 0;
    r.kind = "setup";
    r.loc = Location{sc_.file, 0, 0};
    std::vector<std::string> names;
    for (const auto& p : sc_.plugins) names.push_back(p.name);
    r.description = fmt::format("start node (kubelet {}){}", ctx_.profile.name,
                                names.empty() ? "" : " and plugins " + ListString(names));
    Print(fmt::format("  [0] {} ", r.description));
    const absl::Time s0 = absl::Now();
    // A feature gate this version rejects fails the set-up.
    absl::Status s = gated_.ok() ? ctx_.Setup() : gated_.status();
    result_.work_dir = ctx_.work_dir;
    r.duration = absl::Now() - s0;
    if (s.ok() && opts_.after_step) opts_.after_step(ctx_, nullptr, r);
    if (!s.ok()) {
      r.outcome = IsEnvError(s) ? Outcome::kError : Outcome::kFailed;
      r.message = std::string(s.message());
      result_.outcome = r.outcome;
      result_.message = "set-up: " + r.message;
    } else {
      r.notes.push_back(fmt::format("device-plugin dir {}", ctx_.env.plugin_dir));
    }
    PrintStepEnd(r);
    result_.steps.push_back(std::move(r));
    return s.ok();
  }

  // ---- steps ----

  void RunStep(const Step& st, StepResult* r) {
    for (auto& h : ctx_.hosts) h->MarkCalls();
    ctx_.dra_calls_mark = ctx_.DraCalls().size();
    if (ctx_.api != nullptr) {
      ctx_.api_requests_mark = ctx_.api->RequestsRecorded();
      step_marks_.emplace_back(ctx_.api_requests_mark, r->index);
    }
    const std::vector<std::string> last = RecentLogLines(1);
    ctx_.log_mark = last.empty() ? "" : last.back();
    DevmgrBackend backend(ctx_);
    absl::Status s = InterpretStep(st, sc_.timeouts, backend, r);
    if (s.ok() && !st.expect.empty()) s = Expect(st, r);
    if (s.ok() && st.kind == StepKind::kAdmit) s = RejectedWithoutExpectation(st);
    if (s.ok() && !st.captures.empty()) s = Capture(st, r);
    if (s.ok()) return;
    r->outcome = IsEnvError(s) ? Outcome::kError : Outcome::kFailed;
    r->message = std::string(s.message());
  }

  // An admit step whose pod was rejected fails unless its expectations
  // mention the pod.
  absl::Status RejectedWithoutExpectation(const Step& st) {
    auto rec = ctx_.pods->Find(st.pod.uid);
    if (!rec || rec->phase != pod::Phase::kFailed || rec->reason.empty()) return absl::OkStatus();
    for (const PodExpect& p : st.expect.pods) {
      const std::vector<node::PodRecord> one = {*rec};
      if (FindPod(one, p.ref) != nullptr) return absl::OkStatus();
    }
    return absl::FailedPreconditionError(
        fmt::format("pod {}/{} was rejected: {}: {} (if intended, expect it: pods: {{{}: "
                    "{{admitted: false}}}})",
                    rec->pod.namespace_, rec->pod.name, rec->reason, rec->message, rec->pod.name));
  }

  // ---- expectations ----

  Observed ObserveNow(const Expectations& e) {
    ObserveContext c;
    c.node = ctx_.node.get();
    c.pods = ctx_.pods.get();
    c.pod_resources = &ctx_.pr_opts;
    c.checkpoint_path = ctx_.CheckpointPath();
    c.host = [this](const std::string& name) { return ctx_.Host(name); };
    c.log_mark = ctx_.log_mark;
    if (ctx_.api != nullptr) {
      c.dra_store = &ctx_.api->store();
      c.dra_calls = ctx_.DraCalls();
      c.dra_calls_mark = ctx_.dra_calls_mark;
      c.dra_checkpoint_path = ctx_.DraCheckpointPath();
      c.api = ctx_.api.get();
      c.api_requests_mark = ctx_.api_requests_mark;
    }
    c.kubelet_minor = ctx_.profile.minor;
    return Observe(e, c);
  }

  absl::Status Expect(const Step& st, StepResult* r) {
    if (!ctx_.kubelet_running() && (!st.expect.resources.empty() || st.expect.pod_resources)) {
      return absl::FailedPreconditionError(
          "expect.resources and expect.pod_resources need a running kubelet (this step runs "
          "while it is stopped by stop_kubelet)");
    }
    // expect_for alone: from the start; with `within`: once it held.
    if (st.expect_for && !st.expect.within) return ExpectFor(st, *st.expect_for, r);
    const absl::Duration within = st.expect.within.value_or(sc_.timeouts.expect);
    const absl::Time deadline = absl::Now() + within;
    std::vector<Failure> failures;
    for (;;) {
      Observed observed;
      failures = Check(st.expect, &observed);
      if (failures.empty()) {
        ResourceHealthNotes(st.expect, observed, &r->notes);  // health_check.h
        return st.expect_for ? ExpectFor(st, *st.expect_for, r) : absl::OkStatus();
      }
      if (ctx_.Cancelled()) return absl::CancelledError("interrupted");
      if (absl::Now() >= deadline) break;
      ctx_.changes.WaitBriefly();
    }
    r->failures = std::move(failures);
    return absl::FailedPreconditionError(fmt::format("{} expectation(s) did not hold within {}",
                                                     r->failures.size(),
                                                     absl::FormatDuration(within)));
  }

  // The expectations hold at every check (each change, every poll) for
  // `window`, the last check at its end.
  absl::Status ExpectFor(const Step& st, absl::Duration window, StepResult* r) {
    const absl::Time start = absl::Now();
    const absl::Time end = start + window;
    for (;;) {
      const absl::Time at = absl::Now();
      std::vector<Failure> failures = Check(st.expect);
      if (!failures.empty()) {
        r->failures = std::move(failures);
        return absl::FailedPreconditionError(
            fmt::format("{} expectation(s) stopped holding {} into the {} window (expect_for)",
                        r->failures.size(), Secs(at - start), absl::FormatDuration(window)));
      }
      if (at >= end) return absl::OkStatus();
      if (ctx_.Cancelled()) return absl::CancelledError("interrupted");
      ctx_.changes.WaitBriefly();
    }
  }

  std::vector<Failure> Check(const Expectations& e, Observed* observed = nullptr) {
    Observed o = ObserveNow(e);
    o.captures = captures_;
    std::vector<Failure> f = CheckExpectations(e, o);
    if (observed != nullptr) *observed = std::move(o);
    return f;
  }

  // Takes the step's captures (after its action and expectations).
  absl::Status Capture(const Step& st, StepResult* r) {
    const Observed o = ObserveNow(CaptureNeeds(st.captures));
    for (const CaptureSpec& c : st.captures) {
      absl::StatusOr<std::vector<std::string>> ids = TakeCapture(c, o);
      if (!ids.ok()) {
        r->failures.push_back(Failure{c.loc, "capture '" + c.name + "'", "a value to capture",
                                      std::string(ids.status().message())});
        return absl::FailedPreconditionError(std::string(ids.status().message()));
      }
      r->notes.push_back(fmt::format("captured ${} = {}", c.name, ListString(*ids)));
      captures_[c.name] = *std::move(ids);
    }
    return absl::OkStatus();
  }

  const Scenario& sc_;
  const RunnerOptions& opts_;
  // The version's profile with --feature-gates and node.feature_gates.
  const absl::StatusOr<Profile> gated_;
  RunContext ctx_;
  ScenarioResult result_;
  // (requests recorded when a step began, its index): which step a request was in.
  std::vector<std::pair<uint64_t, int>> step_marks_;
  // name -> device ids (sorted), from `capture:` of passed steps.
  std::map<std::string, std::vector<std::string>> captures_;
};

}  // namespace

std::vector<std::string> ScenarioVersions(const Scenario& sc, const std::string& default_version) {
  if (!sc.node.kubelet_versions.empty()) return sc.node.kubelet_versions;
  return {default_version};
}

ScenarioResult RunScenario(const Scenario& sc, const std::string& version,
                           const std::string& display_name, const RunnerOptions& opts) {
  Run run(sc, version, display_name, opts);
  return run.Go();
}

}  // namespace devmgr::scenario
