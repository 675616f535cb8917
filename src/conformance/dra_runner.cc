#include "conformance/dra_runner.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <utility>

#include "absl/strings/str_split.h"
#include "common/logging.h"
#include "dra/services.h"
#include "fmt/format.h"

namespace devmgr::conformance {
namespace {

std::string MatchText(const DraCheckInfo& c) {
  std::string t = c.id + " " + c.title;
  for (const auto& tag : c.tags) t += " " + tag;
  return t;
}

absl::StatusOr<std::optional<std::regex>> Compile(const std::string& flag, const std::string& re) {
  if (re.empty()) return std::optional<std::regex>();
  try {
    return std::optional<std::regex>(std::regex(re, std::regex::ECMAScript));
  } catch (const std::regex_error& e) {
    return absl::InvalidArgumentError(
        fmt::format("{}: invalid regular expression {}: {}", flag, re, e.what()));
  }
}

const DraCheckInfo* FindDraCheck(const std::string& id) {
  for (const DraCheckInfo& c : DraCatalogue()) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

// The checks a skip's message points at: "(see ID[, ID...])".
std::vector<std::string> PrerequisitesOf(const std::string& message) {
  std::vector<std::string> out;
  static const std::regex kSee(R"(\(see (dra\.[a-z.-]+(, dra\.[a-z.-]+)*)\))");
  for (auto it = std::sregex_iterator(message.begin(), message.end(), kSee);
       it != std::sregex_iterator(); ++it) {
    for (absl::string_view id : absl::StrSplit((*it)[1].str(), ", ")) out.emplace_back(id);
  }
  return out;
}

struct Planned {
  const DraCheckInfo* check;
  std::string prerequisite_of;  // "" when selected itself
};

class DraRunner {
 public:
  DraRunner(DraTarget& target, const DraRunOptions& opts, std::string dir, RunReport& report,
            const std::function<void(const CheckResult&)>& progress,
            std::set<const DraCheckInfo*> runnable)
      : target_(target),
        opts_(opts),
        dir_(std::move(dir)),
        report_(report),
        progress_(progress),
        runnable_(std::move(runnable)) {}

  // The shared checks in one session (by shared_rank), then the others in a
  // session each. False on an environment error (env()).
  bool RunAll(std::vector<Planned> plan) {
    std::vector<Planned> shared, own;
    for (Planned& p : plan) {
      (p.check->session == SessionUse::kShared ? shared : own).push_back(std::move(p));
    }
    std::stable_sort(shared.begin(), shared.end(), [](const Planned& a, const Planned& b) {
      return a.check->shared_rank < b.check->shared_rank;
    });
    if (!shared.empty() && !RunSession(shared)) return false;
    for (const Planned& p : own) {
      if (!RunSession({p})) return false;
    }
    return true;
  }

  // Runs the checks that skipped checks point at ("(see dra.slices)") and
  // that --focus left out, so that a focused run cannot pass with the
  // defect unreported; --skip still wins.
  void RunPrerequisites() {
    size_t scanned = 0;
    while (env_.ok() && scanned < report_.results.size()) {
      std::vector<Planned> plan;
      for (; scanned < report_.results.size(); ++scanned) {
        const CheckResult& r = report_.results[scanned];
        if (r.outcome.status != Status::kSkip) continue;
        for (const std::string& id : PrerequisitesOf(r.outcome.message)) {
          const DraCheckInfo* p = FindDraCheck(id);
          if (p == nullptr || runnable_.count(p) == 0 || !run_ids_.insert(p->id).second) continue;
          plan.push_back({p, r.id});
        }
      }
      if (plan.empty() || !RunAll(std::move(plan))) return;
    }
  }

  void SortResults() {
    std::map<std::string, size_t> position;
    for (const DraCheckInfo& c : DraCatalogue()) position.emplace(c.id, position.size());
    std::stable_sort(report_.results.begin(), report_.results.end(),
                     [&](const CheckResult& a, const CheckResult& b) {
                       return std::make_pair(prerequisite_.count(a.id), position[a.id]) <
                              std::make_pair(prerequisite_.count(b.id), position[b.id]);
                     });
  }

  void MarkSelected(const std::vector<Planned>& plan) {
    for (const Planned& p : plan) run_ids_.insert(p.check->id);
  }
  const absl::Status& env() const { return env_; }

 private:
  bool RunSession(const std::vector<Planned>& checks) {
    MonoTime start = MonoNow();
    DraSessionOptions so;
    so.dir = dir_;
    so.timeouts = opts_.timeouts;
    so.profile = opts_.profile;
    DraSession s(&target_, so);
    env_ = s.Begin();
    if (!env_.ok()) return false;
    ++report_.sessions;
    for (const Planned& p : checks) {
      Outcome o = p.check->run(s);
      DM_VINFO(1, "Conformance check done", {"check", p.check->id},
               {"result", StatusName(o.status)});
      const MonoTime now = MonoNow();
      Report(p, std::move(o), MonoSub(now, start));
      start = now;
    }
    s.End();
    return true;
  }

  void Report(const Planned& p, Outcome outcome, absl::Duration took) {
    const DraCheckInfo& c = *p.check;
    CheckResult r{c.id, c.title, c.level, c.tags, std::move(outcome), took};
    if (!p.prerequisite_of.empty()) {
      r.outcome.message = fmt::format("(not selected; run because {} depends on it) {}",
                                      p.prerequisite_of, r.outcome.message);
      prerequisite_.insert(c.id);
    }
    report_.results.push_back(r);
    if (progress_) progress_(r);
  }

  DraTarget& target_;
  const DraRunOptions& opts_;
  const std::string dir_;
  RunReport& report_;
  const std::function<void(const CheckResult&)>& progress_;
  const std::set<const DraCheckInfo*> runnable_;
  absl::Status env_;
  std::set<std::string> run_ids_;
  std::set<std::string> prerequisite_;
};

}  // namespace

absl::StatusOr<std::vector<const DraCheckInfo*>> SelectDraChecks(const std::string& focus,
                                                                 const std::string& skip) {
  absl::StatusOr<std::optional<std::regex>> f = Compile("--focus", focus);
  if (!f.ok()) return f.status();
  absl::StatusOr<std::optional<std::regex>> s = Compile("--skip", skip);
  if (!s.ok()) return s.status();
  std::vector<const DraCheckInfo*> out;
  bool focus_matched = false;
  for (const DraCheckInfo& c : DraCatalogue()) {
    const std::string text = MatchText(c);
    const bool focused = !*f || std::regex_search(text, **f);
    focus_matched |= focused;
    if (focused && !(*s && std::regex_search(text, **s))) out.push_back(&c);
  }
  if (!focus_matched) {
    return absl::InvalidArgumentError(
        "--focus matches no check of the DRA catalogue (it is matched against \"<id> <title> "
        "[tags]\"; see --dra --list)");
  }
  return out;
}

absl::StatusOr<RunReport> RunDraConformance(
    DraTarget& target, const DraRunOptions& opts,
    const std::function<void(const CheckResult&)>& progress) {
  if (opts.profile.minor < dra::kOldestDraMinor) {
    return absl::InvalidArgumentError(
        fmt::format("the DRA catalogue needs kubelet 1.{} or newer (got {})", dra::kOldestDraMinor,
                    opts.profile.name));
  }
  auto selected = SelectDraChecks(opts.focus, opts.skip);
  if (!selected.ok()) return selected.status();
  auto unskipped = SelectDraChecks("", opts.skip);
  if (!unskipped.ok()) return unskipped.status();
  absl::StatusOr<RunDir> run_dir =
      ChooseRunDir(opts.dir, "devmgr-dra-conformance",
                   "each session re-creates plugins_registry, plugins and cdi there");
  if (!run_dir.ok()) return run_dir.status();
  const std::string& dir = run_dir->path;
  RunReport report;
  report.target = target.Describe();
  report.kubelet_version = opts.profile.name;
  report.started = absl::Now();  // wall clock: only printed
  const MonoTime run_start = MonoNow();
  DraRunner runner(target, opts, dir, report, progress, {unskipped->begin(), unskipped->end()});
  std::vector<Planned> plan;
  for (const DraCheckInfo* c : *selected) plan.push_back({c, ""});
  runner.MarkSelected(plan);
  if (runner.RunAll(std::move(plan))) runner.RunPrerequisites();
  runner.SortResults();
  if (run_dir->temp) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  if (!runner.env().ok()) return runner.env();
  report.duration = MonoSub(MonoNow(), run_start);
  return report;
}

}  // namespace devmgr::conformance
