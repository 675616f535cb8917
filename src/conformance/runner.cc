#include "conformance/runner.h"

#include <stdlib.h>
#include <unistd.h>

#include <regex>

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

absl::StatusOr<RunReport> RunConformance(Target& target, const RunOptions& opts,
                                         const std::function<void(const CheckResult&)>& progress) {
  auto selected = SelectChecks(opts.focus, opts.skip);
  if (!selected.ok()) return selected.status();
  std::string dir = opts.dir;
  bool temp_dir = false;
  if (dir.empty()) {
    char tmpl[] = "/tmp/devmgr-conformance-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
      return absl::FailedPreconditionError("cannot create a temporary directory under /tmp");
    }
    dir = tmpl;
    temp_dir = true;
  } else if (dir.front() != '/') {
    return absl::InvalidArgumentError(fmt::format("--dir must be an absolute path: {}", dir));
  }
  RunReport report;
  report.target = target.Describe();
  report.kubelet_version = opts.profile.name;
  report.started = absl::Now();  // wall clock: only printed
  const MonoTime run_start = MonoNow();
  absl::Status env;
  bool seen_registration = true;  // until a session shows otherwise
  for (const CheckInfo* c : *selected) {
    CheckResult r{c->id, c->title, c->level, c->tags, {}, absl::ZeroDuration()};
    const MonoTime start = MonoNow();
    if (std::string why = UnmetNeed(*c, target); !why.empty()) {
      r.outcome = Outcome::Skip(why);
    } else {
      Session s(&target, SessionOptions{dir, opts.timeouts, opts.profile, opts.metrics});
      env = s.Begin(seen_registration || (c->needs & kNeedRegistration) != 0);
      if (!env.ok()) break;
      if (target.Registers()) seen_registration = s.FirstRegistration().has_value();
      r.outcome = c->run(s);
      s.End();
    }
    DM_VINFO(1, "Conformance check done", {"check", c->id},
             {"result", StatusName(r.outcome.status)});
    r.duration = MonoSub(MonoNow(), start);
    std::optional<CheckResult> companion;
    if (c->companion) {
      companion =
          CheckResult{c->companion->id,    c->companion->title, c->companion->level, c->tags, {},
                      absl::ZeroDuration()};
      if (r.outcome.companion != nullptr) {
        companion->outcome = *r.outcome.companion;
      } else if (r.outcome.status == Status::kSkip) {
        companion->outcome = Outcome::Skip(r.outcome.message);
      } else {
        companion->outcome = Outcome::Skip(fmt::format("not measured (see {})", c->id));
      }
      companion->outcome.companion = nullptr;
      r.outcome.companion = nullptr;
    }
    report.results.push_back(r);
    if (progress) progress(r);
    if (companion) {
      report.results.push_back(*companion);
      if (progress) progress(*companion);
    }
  }
  if (temp_dir) {
    // Only what the kubelet and the plugin may have left (sockets, files).
    WipeDirectory(dir).IgnoreError();
    ::rmdir(dir.c_str());
  }
  if (!env.ok()) return env;
  report.duration = MonoSub(MonoNow(), run_start);
  return report;
}

}  // namespace devmgr::conformance
