#include "conformance/runner.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <utility>

#include "common/logging.h"
#include "fmt/format.h"

namespace devmgr::conformance {
namespace {

std::string MatchText(const CheckInfo& c) { return c.id + " " + DisplayTitle(c); }

// A companion is matched by its own text; a match selects its check (which
// measures both).
std::string CompanionText(const CheckInfo& c) {
  std::string t = c.companion->id + " " + c.companion->title;
  for (const auto& tag : c.tags) t += " " + tag;
  return t;
}

absl::StatusOr<std::regex> Compile(const std::string& flag, const std::string& re) {
  try {
    return std::regex(re, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return absl::InvalidArgumentError(
        fmt::format("{}: invalid regular expression {}: {}", flag, re, e.what()));
  }
}

std::string UnmetNeed(const CheckInfo& c, const Target& t) {
  if ((c.needs & kNeedRegistration) && !t.Registers()) {
    return "needs a plugin that registers with the tester (not --socket)";
  }
  if ((c.needs & kNeedStartedByTester) && !t.StartedByTester()) {
    return "needs a plugin the tester starts itself (--plugin)";
  }
  return "";
}

// The checks a skip's message points at: "(see ID)", and, for a plugin that
// registers with the tester, registration.timely when the plugin never came
// up (its socket not found, never registered).
std::vector<std::string> PrerequisitesOf(const std::string& message, const Target& t) {
  std::vector<std::string> out;
  static const std::regex kSee(R"(\(see ([a-z]+\.[a-z-]+)\))");
  for (auto it = std::sregex_iterator(message.begin(), message.end(), kSee);
       it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1].str());
  }
  if (t.Registers() && (message.find("the plugin's socket was not found") != std::string::npos ||
                        message.find("the plugin never registered") != std::string::npos)) {
    out.push_back("registration.timely");
  }
  return out;
}

// The check with this id, or the check a companion with this id belongs to.
const CheckInfo* FindCheck(const std::string& id) {
  for (const CheckInfo& c : Catalogue()) {
    if (c.id == id || (c.companion && c.companion->id == id)) return &c;
  }
  return nullptr;
}

// A check to run, and the selected check it runs for ("" when it was
// selected itself).
struct Planned {
  const CheckInfo* check;
  std::string prerequisite_of;
};

// Runs checks into `report`: those that share the plugin in one session, the
// rest in a session each (CheckInfo::session).
class Runner {
 public:
  // `runnable`: the checks --skip leaves (prerequisites are run only from
  // them).
  Runner(Target& target, const RunOptions& opts, const std::string& dir, RunReport& report,
         const std::function<void(const CheckResult&)>& progress,
         std::set<const CheckInfo*> runnable)
      : target_(target),
        opts_(opts),
        dir_(dir),
        report_(report),
        progress_(progress),
        runnable_(std::move(runnable)) {}

  // The dial-back inside Register once the plugin is known to serve late.
  static constexpr absl::Duration kKnownLateServeWait = absl::Seconds(1);

  // Runs `plan`: first the shared checks in one session, by shared_rank,
  // then each of the others in a session of its own. An own-session check
  // whose need the shared session already showed unmet (no registration, no
  // device list) is skipped without a session. False on an environment
  // error (see env()).
  bool RunAll(std::vector<Planned> plan) {
    std::vector<Planned> shared, own;
    for (Planned& p : plan) {
      if (std::string why = UnmetNeed(*p.check, target_); !why.empty()) {
        Report(p, Outcome::Skip(why), absl::ZeroDuration());
      } else {
        (p.check->session == SessionUse::kShared ? shared : own).push_back(std::move(p));
      }
    }
    std::stable_sort(shared.begin(), shared.end(), [](const Planned& a, const Planned& b) {
      return a.check->shared_rank < b.check->shared_rank;
    });
    if (!shared.empty()) {
      bool needs_list = false;
      for (const Planned& p : own) needs_list |= (p.check->needs & kNeedDeviceList) != 0;
      if (!RunSession(shared, needs_list)) return false;
    }
    for (const Planned& p : own) {
      if (std::string why = KnownUnmet(*p.check); !why.empty()) {
        Report(p, Outcome::Skip(why), absl::ZeroDuration());
      } else if (!RunSession({p}, false)) {
        return false;
      }
    }
    return true;
  }

  // A check skipped for want of another one that --focus left out ("(see
  // law.first-list)", a plugin that never came up) would let a run pass with
  // the defect unreported: that check runs too (and so on). A check --skip
  // names stays skipped.
  void RunPrerequisites() {
    size_t scanned = 0;
    while (env_.ok() && scanned < report_.results.size()) {
      std::vector<Planned> plan;
      std::set<std::string> planned;
      for (; scanned < report_.results.size(); ++scanned) {
        const CheckResult& r = report_.results[scanned];
        if (r.outcome.status != Status::kSkip) continue;
        for (const std::string& id : PrerequisitesOf(r.outcome.message, target_)) {
          const CheckInfo* p = FindCheck(id);
          if (p == nullptr || run_ids_.count(p->id) != 0 || runnable_.count(p) == 0 ||
              !planned.insert(p->id).second) {
            continue;
          }
          plan.push_back({p, r.id});
        }
      }
      if (plan.empty() || !RunAll(std::move(plan))) return;
    }
  }

  // The results in catalogue order (companions right after their check), the
  // checks run as prerequisites after the selected ones.
  void SortResults() {
    std::map<std::string, size_t> position;
    for (const CatalogueEntry& e : CatalogueEntries()) position.emplace(e.id, position.size());
    std::stable_sort(report_.results.begin(), report_.results.end(),
                     [&](const CheckResult& a, const CheckResult& b) {
                       return std::make_pair(prerequisite_.count(a.id), position[a.id]) <
                              std::make_pair(prerequisite_.count(b.id), position[b.id]);
                     });
  }

  const absl::Status& env() const { return env_; }

 private:
  // One session for `checks`, run in that order. The session's start is
  // counted in the first check's time.
  bool RunSession(const std::vector<Planned>& checks, bool learn_list) {
    MonoTime start = MonoNow();
    bool expect_registration = seen_registration_;
    for (const Planned& p : checks)
      expect_registration |= (p.check->needs & kNeedRegistration) != 0;
    Timeouts t = opts_.timeouts;
    // Once a session showed that the plugin does not serve while Register is
    // pending (registration.serves-first has its verdict), later sessions
    // connect late after a short dial-back instead of the kubelet's full 10 s
    // at every registration: a failing plugin gets its report sooner and no
    // verdict changes (restart.* time the Register calls, not the dial-back).
    if (served_first_.has_value() && !*served_first_) {
      t.serve_wait = std::min(t.serve_wait, kKnownLateServeWait);
    }
    Session s(&target_, SessionOptions{dir_, t, opts_.profile, opts_.metrics});
    env_ = s.Begin(expect_registration);
    if (!env_.ok()) return false;
    ++report_.sessions;
    if (target_.Registers()) seen_registration_ = s.FirstRegistration().has_value();
    for (const Planned& p : checks) {
      Outcome o = p.check->run(s);
      DM_VINFO(1, "Conformance check done", {"check", p.check->id},
               {"result", StatusName(o.status)});
      const MonoTime now = MonoNow();
      Report(p, std::move(o), MonoSub(now, start));
      start = now;
    }
    if (checks.size() > 1 || checks.front().check->session == SessionUse::kShared) {
      registered_ = !target_.Registers() || s.FirstRegistration().has_value();
      if (auto r = s.FirstRegistration()) served_first_ = r->served_during_register;
      if (learn_list && *registered_) listed_ = s.DeviceList() != nullptr;
    }
    s.End();
    return true;
  }

  // Why an own-session check cannot run, as the shared session showed: the
  // same skip the check would give after starting a session.
  std::string KnownUnmet(const CheckInfo& c) const {
    if ((c.needs & kNeedRegistration) && registered_.has_value() && !*registered_) {
      return "the plugin never registered (see registration.timely)";
    }
    if ((c.needs & kNeedDeviceList) && listed_.has_value() && !*listed_) {
      return "the plugin sent no device list (see law.first-list)";
    }
    return "";
  }

  // Reports `c`'s outcome, and its companion's unless it runs as a
  // prerequisite: then its message says which selected check needs it.
  void Report(const Planned& p, Outcome outcome, absl::Duration took) {
    const CheckInfo& c = *p.check;
    CheckResult r{c.id, c.title, c.level, c.tags, std::move(outcome), took};
    std::optional<CheckResult> companion;
    if (c.companion && p.prerequisite_of.empty()) companion = CompanionResult(c, r.outcome);
    r.outcome.companion = nullptr;
    if (!p.prerequisite_of.empty()) {
      r.outcome.message = fmt::format("(not selected; run because {} depends on it) {}",
                                      p.prerequisite_of, r.outcome.message);
      prerequisite_.insert(c.id);
    }
    Add(r);
    if (companion) Add(*companion);
  }

  static CheckResult CompanionResult(const CheckInfo& c, const Outcome& main) {
    CheckResult out{c.companion->id,     c.companion->title, c.companion->level, c.tags, {},
                    absl::ZeroDuration()};
    if (main.companion != nullptr) {
      out.outcome = *main.companion;
    } else if (main.status == Status::kSkip) {
      out.outcome = Outcome::Skip(main.message);
    } else {
      out.outcome = Outcome::Skip(fmt::format("not measured (see {})", c.id));
    }
    out.outcome.companion = nullptr;
    return out;
  }
  void Add(const CheckResult& r) {
    run_ids_.insert(r.id);
    report_.results.push_back(r);
    if (progress_) progress_(r);
  }

  Target& target_;
  const RunOptions& opts_;
  const std::string& dir_;
  RunReport& report_;
  const std::function<void(const CheckResult&)>& progress_;
  const std::set<const CheckInfo*> runnable_;
  absl::Status env_;
  bool seen_registration_ = true;  // until a session shows otherwise
  // What the last shared session showed (unset before one ran).
  std::optional<bool> registered_;
  std::optional<bool> listed_;
  // Whether the plugin served during its first Register (unset before).
  std::optional<bool> served_first_;
  std::set<std::string> run_ids_;
  std::set<std::string> prerequisite_;
};

}  // namespace

int RunReport::Count(Level level, Status status) const {
  int n = 0;
  for (const auto& r : results) n += r.level == level && r.outcome.status == status;
  return n;
}

int RunReport::Count(Status status) const {
  int n = 0;
  for (const auto& r : results) n += r.outcome.status == status;
  return n;
}

bool RunReport::MustPassed() const { return Count(Level::kMust, Status::kFail) == 0; }

absl::StatusOr<std::vector<const CheckInfo*>> SelectChecks(const std::string& focus,
                                                           const std::string& skip) {
  std::optional<std::regex> f, s;
  if (!focus.empty()) {
    auto r = Compile("--focus", focus);
    if (!r.ok()) return r.status();
    f = *std::move(r);
  }
  if (!skip.empty()) {
    auto r = Compile("--skip", skip);
    if (!r.ok()) return r.status();
    s = *std::move(r);
  }
  std::vector<const CheckInfo*> out;
  bool focus_matched = false;
  for (const CheckInfo& c : Catalogue()) {
    auto focused = [&](const std::string& text) { return !f || std::regex_search(text, *f); };
    auto selected = [&](const std::string& text) {
      return focused(text) && !(s && std::regex_search(text, *s));
    };
    focus_matched |= focused(MatchText(c)) || (c.companion && focused(CompanionText(c)));
    if (selected(MatchText(c)) || (c.companion && selected(CompanionText(c)))) out.push_back(&c);
  }
  if (!focus_matched) {
    // A typo in a CI job's --focus must not pass with nothing checked.
    return absl::InvalidArgumentError(
        "--focus matches no check (it is matched against \"<id> <title> [tags]\", e.g. "
        "\"registration.version Register sends version ...\"; see --list)");
  }
  return out;
}

bool InRealKubeletDir(const std::string& dir) {
  std::error_code ec;
  std::string p = std::filesystem::weakly_canonical(dir, ec).string();
  if (ec) p = std::filesystem::path(dir).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p == "/var/lib/kubelet" || p.rfind("/var/lib/kubelet/", 0) == 0;
}

absl::StatusOr<RunDir> ChooseRunDir(const std::string& dir, const std::string& temp_prefix,
                                    const std::string& what_happens_there) {
  if (dir.empty()) {
    std::string tmpl = "/tmp/" + temp_prefix + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      return absl::FailedPreconditionError("cannot create a temporary directory under /tmp");
    }
    return RunDir{tmpl, true};
  }
  if (dir.front() != '/') {
    return absl::InvalidArgumentError(fmt::format("--dir must be an absolute path: {}", dir));
  }
  if (InRealKubeletDir(dir)) {
    return absl::InvalidArgumentError(
        fmt::format("--dir {}: {}; give the tester a directory of its own, not the kubelet's", dir,
                    what_happens_there));
  }
  return RunDir{dir, false};
}

absl::StatusOr<RunReport> RunConformance(Target& target, const RunOptions& opts,
                                         const std::function<void(const CheckResult&)>& progress) {
  auto selected = SelectChecks(opts.focus, opts.skip);
  if (!selected.ok()) return selected.status();
  // The same --skip, no --focus: what a prerequisite may be taken from.
  absl::StatusOr<std::vector<const CheckInfo*>> unskipped = SelectChecks("", opts.skip);
  if (!unskipped.ok()) return unskipped.status();
  absl::StatusOr<RunDir> run_dir = ChooseRunDir(
      opts.dir, "devmgr-conformance", "each session wipes it and serves kubelet.sock there");
  if (!run_dir.ok()) return run_dir.status();
  const std::string& dir = run_dir->path;
  RunReport report;
  report.target = target.Describe();
  report.kubelet_version = opts.profile.name;
  report.started = absl::Now();  // wall clock: only printed
  const MonoTime run_start = MonoNow();
  Runner runner(target, opts, dir, report, progress, {unskipped->begin(), unskipped->end()});
  std::vector<Planned> plan;
  for (const CheckInfo* c : *selected) plan.push_back({c, ""});
  if (runner.RunAll(std::move(plan))) runner.RunPrerequisites();
  runner.SortResults();
  const absl::Status env = runner.env();
  if (run_dir->temp) {
    // Only what the kubelet and the plugin may have left (sockets, files).
    WipeDirectory(dir).IgnoreError();
    ::rmdir(dir.c_str());
  }
  if (!env.ok()) return env;
  report.duration = MonoSub(MonoNow(), run_start);
  return report;
}

}  // namespace devmgr::conformance
