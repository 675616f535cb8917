// The conformance core: what a run of any catalogue does, whatever kind of
// plugin its checks test. It selects the checks (--focus/--skip), plans
// them (the shared session first, by shared_rank, then a session per
// own-session check), runs the prerequisites skipped checks point at, times
// every check and the whole run, orders the results and builds the
// RunReport that report.h writes. A catalogue supplies its rows and texts
// (CatalogueSpec) and how to run one of its checks (CheckRunner); the
// device-plugin runner (runner.h) and the DRA runner (dra_runner.h) are
// thin users of it.
#ifndef DEVMGR_CONFORMANCE_CORE_H_
#define DEVMGR_CONFORMANCE_CORE_H_

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "conformance/check.h"
#include "conformance/mono_time.h"

namespace devmgr::conformance {

// One run of one catalogue under one profile: what the reports are made of.
struct RunReport {
  std::string target;
  std::string kubelet_version;  // the profile's name
  absl::Time started;
  absl::Duration duration;  // wall time of the whole run
  // Plugin sessions the run started (each a fresh emulated kubelet and, with
  // --plugin, a fresh plugin process).
  int sessions = 0;
  std::vector<CheckResult> results;

  int Count(Level level, Status status) const;
  int Count(Status status) const;
  // True when no MUST check failed.
  bool MustPassed() const;
};

// True for a real kubelet's root or a directory in it (after resolving
// symlinks and dots): a session wipes or re-creates what it uses there, which
// must never happen to a kubelet's sockets and checkpoints.
bool InRealKubeletDir(const std::string& dir);

// The directory a run works in: `dir` when given (absolute, and not in a real
// kubelet's directory: the refusal says `what_happens_there`), else a new one
// named /tmp/<temp_prefix>-XXXXXX that the run removes (`temp`).
struct RunDir {
  std::string path;
  bool temp = false;
};
absl::StatusOr<RunDir> ChooseRunDir(const std::string& dir, const std::string& temp_prefix,
                                    const std::string& what_happens_there);

// A catalogue of one kind. `Check` is its row type, which has the fields the
// core reads: id, title, level, tags, companion (std::optional<CompanionInfo>),
// session (SessionUse) and shared_rank; and the kind's own (how to run it).
template <typename Check>
struct CatalogueSpec {
  // The rows, in report order (a companion's result right after its check's).
  const std::vector<Check>& (*rows)();
  // The InvalidArgument text for a --focus that matches no row.
  const char* focus_matches_nothing;
  // How a skip message names the checks it was skipped for: an ECMAScript
  // pattern whose group 1 is "ID[, ID...]", e.g. for "(see law.first-list)".
  const char* see;
};

// How one kind's checks are run: its sessions (the kubelet side the tester
// emulates, the plugin or driver started) and what they showed. One per run;
// called from the run's thread only.
template <typename Check>
class CheckRunner {
 public:
  // One session: a fresh kubelet side and the target started.
  class Session {
   public:
    virtual ~Session() = default;
    virtual Outcome Run(const Check& c) = 0;
    // Ends the session (the runner may keep what it showed first).
    virtual void End() = 0;
  };

  virtual ~CheckRunner() = default;
  // The target as the report names it.
  virtual std::string Describe() const = 0;
  // Starts a session in `dir` for `checks` (run in that order); `later`: the
  // own-session checks still to run after this (shared) session, empty for
  // an own session. Not OK: an environment error, which ends the run.
  virtual absl::StatusOr<std::unique_ptr<Session>> Begin(
      const std::string& dir, const std::vector<const Check*>& checks,
      const std::vector<const Check*>& later) = 0;
  // Why `c` is skipped before any session ("" = it runs).
  virtual std::string UnmetNeed(const Check& c) { return ""; }
  // Why an own-session check is skipped without its session, as the shared
  // session showed ("" = it runs).
  virtual std::string KnownUnmet(const Check& c) { return ""; }
  // Checks a skip message implies as prerequisites beyond its "(see ...)".
  virtual std::vector<std::string> ImpliedPrerequisites(const std::string& message) { return {}; }
  // Removes the temporary directory the run worked in.
  virtual void RemoveTempDir(const std::string& dir) = 0;
};

// What a run of a catalogue is given besides its spec and runner.
struct CoreOptions {
  // ECMAScript regular expressions matched against "<id> <title> <tags>"
  // (a companion's line selects its check): run the checks matching focus
  // ("" = all) and not matching skip.
  std::string focus;
  std::string skip;
  // See ChooseRunDir.
  std::string dir;
  std::string temp_prefix;
  std::string what_happens_there;
  std::string kubelet_version;  // the profile's name, for the report
};

namespace core_internal {

// "<id> <title> <tags...>".
std::string MatchText(const std::string& id, const std::string& title,
                      const std::vector<std::string>& tags);

// The indices of the rows selected by focus and skip, each row matched by
// its texts (any matching one counts). InvalidArgument for a bad expression
// ("--focus: ...") or, with `focus_matches_nothing`, a focus no text matches.
absl::StatusOr<std::vector<size_t>> SelectByText(const std::vector<std::vector<std::string>>& texts,
                                                 const std::string& focus, const std::string& skip,
                                                 const std::string& focus_matches_nothing);

// The IDs the "(see ...)" pointers of a skip message name.
std::vector<std::string> SeeIds(const std::string& message, const std::regex& see);

// The result of a check's companion from the check's outcome.
CheckResult CompanionResult(const std::string& check_id, const CompanionInfo& companion,
                            const std::vector<std::string>& tags, const Outcome& main);

// "(not selected; run because <of> depends on it) <message>".
std::string PrerequisiteMessage(const std::string& of, const std::string& message);

// The results in the order of `ids` (reported IDs in catalogue order), those
// in `prerequisites` after the others.
void SortResults(const std::vector<std::string>& ids, const std::set<std::string>& prerequisites,
                 std::vector<CheckResult>& results);

// A check to run, and the selected check it runs for ("" when it was
// selected itself).
template <typename Check>
struct Planned {
  const Check* check;
  std::string prerequisite_of;
};

// The IDs a row's results carry: its own, then its companion's.
template <typename Check>
std::vector<std::string> ResultIds(const Check& c) {
  std::vector<std::string> out{c.id};
  if (c.companion) out.push_back(c.companion->id);
  return out;
}

// Runs planned checks into a report (see RunCatalogue).
template <typename Check>
class CatalogueRun {
 public:
  using Plan = std::vector<Planned<Check>>;

  // `runnable`: the checks --skip leaves (prerequisites are taken only from
  // them).
  CatalogueRun(const CatalogueSpec<Check>& spec, CheckRunner<Check>& runner, std::string dir,
               RunReport& report, const std::function<void(const CheckResult&)>& progress,
               std::set<const Check*> runnable)
      : spec_(spec),
        runner_(runner),
        dir_(std::move(dir)),
        report_(report),
        progress_(progress),
        runnable_(std::move(runnable)),
        see_(spec.see, std::regex::ECMAScript) {}

  // Runs `plan`: first the shared checks in one session, by shared_rank,
  // then each of the others in a session of its own; a check the runner
  // knows cannot run is skipped without one. False on an environment error
  // (see env()).
  bool RunAll(Plan plan) {
    Plan shared, own;
    for (Planned<Check>& p : plan) {
      planned_.insert(p.check->id);
      if (std::string why = runner_.UnmetNeed(*p.check); !why.empty()) {
        Report(p, Outcome::Skip(why), absl::ZeroDuration());
      } else {
        (p.check->session == SessionUse::kShared ? shared : own).push_back(std::move(p));
      }
    }
    std::stable_sort(shared.begin(), shared.end(), [](const auto& a, const auto& b) {
      return a.check->shared_rank < b.check->shared_rank;
    });
    if (!shared.empty() && !RunSession(shared, own)) return false;
    for (const Planned<Check>& p : own) {
      if (std::string why = runner_.KnownUnmet(*p.check); !why.empty()) {
        Report(p, Outcome::Skip(why), absl::ZeroDuration());
      } else if (!RunSession({p}, {})) {
        return false;
      }
    }
    return true;
  }

  // A check skipped for want of another one that --focus left out ("(see
  // law.first-list)") would let a run pass with the defect unreported: that
  // check runs too (and so on). A check --skip names stays skipped.
  void RunPrerequisites() {
    size_t scanned = 0;
    while (env_.ok() && scanned < report_.results.size()) {
      Plan plan;
      for (; scanned < report_.results.size(); ++scanned) {
        const CheckResult& r = report_.results[scanned];
        if (r.outcome.status != Status::kSkip) continue;
        std::vector<std::string> ids = SeeIds(r.outcome.message, see_);
        for (std::string& id : runner_.ImpliedPrerequisites(r.outcome.message)) {
          ids.push_back(std::move(id));
        }
        for (const std::string& id : ids) {
          const Check* p = Find(id);
          if (p == nullptr || runnable_.count(p) == 0 || planned_.count(p->id) != 0) continue;
          planned_.insert(p->id);
          plan.push_back({p, r.id});
        }
      }
      if (plan.empty() || !RunAll(std::move(plan))) return;
    }
  }

  // The results in catalogue order (companions right after their check), the
  // checks run as prerequisites after the selected ones.
  void SortResults() {
    std::vector<std::string> ids;
    for (const Check& c : spec_.rows()) {
      for (std::string& id : ResultIds(c)) ids.push_back(std::move(id));
    }
    core_internal::SortResults(ids, prerequisite_, report_.results);
  }

  const absl::Status& env() const { return env_; }

 private:
  // The check with this id, or the check a companion with this id belongs to.
  const Check* Find(const std::string& id) const {
    for (const Check& c : spec_.rows()) {
      if (c.id == id || (c.companion && c.companion->id == id)) return &c;
    }
    return nullptr;
  }

  // One session for `checks`, run in that order. The session's start is
  // counted in the first check's time.
  bool RunSession(const Plan& checks, const Plan& later) {
    MonoTime start = MonoNow();
    std::vector<const Check*> rows, later_rows;
    for (const Planned<Check>& p : checks) rows.push_back(p.check);
    for (const Planned<Check>& p : later) later_rows.push_back(p.check);
    auto session = runner_.Begin(dir_, rows, later_rows);
    if (!session.ok()) {
      env_ = session.status();
      return false;
    }
    ++report_.sessions;
    for (const Planned<Check>& p : checks) {
      Outcome o = (*session)->Run(*p.check);
      DM_VINFO(1, "Conformance check done", {"check", p.check->id},
               {"result", StatusName(o.status)});
      const MonoTime now = MonoNow();
      Report(p, std::move(o), MonoSub(now, start));
      start = now;
    }
    (*session)->End();
    return true;
  }

  // Reports `p`'s outcome, and its companion's unless it runs as a
  // prerequisite: then its message says which selected check needs it.
  void Report(const Planned<Check>& p, Outcome outcome, absl::Duration took) {
    const Check& c = *p.check;
    CheckResult r{c.id, c.title, c.level, c.tags, std::move(outcome), took};
    std::optional<CheckResult> companion;
    if (c.companion && p.prerequisite_of.empty()) {
      companion = CompanionResult(c.id, *c.companion, c.tags, r.outcome);
    }
    r.outcome.companion = nullptr;
    if (!p.prerequisite_of.empty()) {
      r.outcome.message = PrerequisiteMessage(p.prerequisite_of, r.outcome.message);
      prerequisite_.insert(c.id);
    }
    Add(r);
    if (companion) Add(*companion);
  }

  void Add(const CheckResult& r) {
    report_.results.push_back(r);
    if (progress_) progress_(r);
  }

  const CatalogueSpec<Check>& spec_;
  CheckRunner<Check>& runner_;
  const std::string dir_;
  RunReport& report_;
  const std::function<void(const CheckResult&)>& progress_;
  const std::set<const Check*> runnable_;
  const std::regex see_;
  absl::Status env_;
  std::set<std::string> planned_;       // IDs of the checks planned so far
  std::set<std::string> prerequisite_;  // IDs of the checks run as prerequisites
};

}  // namespace core_internal

// The rows of `spec` that --focus and --skip select, in catalogue order.
// InvalidArgument for a bad regular expression or a --focus that matches no
// row.
template <typename Check>
absl::StatusOr<std::vector<const Check*>> SelectRows(const CatalogueSpec<Check>& spec,
                                                     const std::string& focus,
                                                     const std::string& skip) {
  const std::vector<Check>& rows = spec.rows();
  std::vector<std::vector<std::string>> texts;
  for (const Check& c : rows) {
    texts.push_back({core_internal::MatchText(c.id, c.title, c.tags)});
    if (c.companion) {
      texts.back().push_back(core_internal::MatchText(c.companion->id, c.companion->title, c.tags));
    }
  }
  absl::StatusOr<std::vector<size_t>> picked =
      core_internal::SelectByText(texts, focus, skip, spec.focus_matches_nothing);
  if (!picked.ok()) return picked.status();
  std::vector<const Check*> out;
  for (size_t i : *picked) out.push_back(&rows[i]);
  return out;
}

// Runs the checks of `spec` that opts.focus and opts.skip select with
// `runner`, then their prerequisites, and returns the report. The errors of
// SelectRows and ChooseRunDir, and the runner's environment errors (the run
// stops at the first). `progress` is called after each result.
template <typename Check>
absl::StatusOr<RunReport> RunCatalogue(const CatalogueSpec<Check>& spec, CheckRunner<Check>& runner,
                                       const CoreOptions& opts,
                                       const std::function<void(const CheckResult&)>& progress) {
  auto selected = SelectRows(spec, opts.focus, opts.skip);
  if (!selected.ok()) return selected.status();
  // The same --skip, no --focus: what a prerequisite may be taken from.
  auto unskipped = SelectRows(spec, "", opts.skip);
  if (!unskipped.ok()) return unskipped.status();
  absl::StatusOr<RunDir> run_dir =
      ChooseRunDir(opts.dir, opts.temp_prefix, opts.what_happens_there);
  if (!run_dir.ok()) return run_dir.status();
  RunReport report;
  report.target = runner.Describe();
  report.kubelet_version = opts.kubelet_version;
  report.started = absl::Now();  // wall clock: only printed
  const MonoTime run_start = MonoNow();
  core_internal::CatalogueRun<Check> run(spec, runner, run_dir->path, report, progress,
                                         {unskipped->begin(), unskipped->end()});
  typename core_internal::CatalogueRun<Check>::Plan plan;
  for (const Check* c : *selected) plan.push_back({c, ""});
  if (run.RunAll(std::move(plan))) run.RunPrerequisites();
  run.SortResults();
  const absl::Status env = run.env();
  if (run_dir->temp) runner.RemoveTempDir(run_dir->path);
  if (!env.ok()) return env;
  report.duration = MonoSub(MonoNow(), run_start);
  return report;
}

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_CORE_H_
