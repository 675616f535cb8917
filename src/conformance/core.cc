#include "conformance/core.h"

#include <stdlib.h>

#include <filesystem>

#include "absl/strings/str_split.h"
#include "fmt/format.h"

namespace devmgr::conformance {

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

namespace core_internal {
namespace {

absl::StatusOr<std::optional<std::regex>> Compile(const std::string& flag, const std::string& re) {
  if (re.empty()) return std::optional<std::regex>();
  try {
    return std::optional<std::regex>(std::regex(re, std::regex::ECMAScript));
  } catch (const std::regex_error& e) {
    return absl::InvalidArgumentError(
        fmt::format("{}: invalid regular expression {}: {}", flag, re, e.what()));
  }
}

}  // namespace

std::string MatchText(const std::string& id, const std::string& title,
                      const std::vector<std::string>& tags) {
  std::string t = id + " " + title;
  for (const auto& tag : tags) t += " " + tag;
  return t;
}

absl::StatusOr<std::vector<size_t>> SelectByText(const std::vector<std::vector<std::string>>& texts,
                                                 const std::string& focus, const std::string& skip,
                                                 const std::string& focus_matches_nothing) {
  absl::StatusOr<std::optional<std::regex>> f = Compile("--focus", focus);
  if (!f.ok()) return f.status();
  absl::StatusOr<std::optional<std::regex>> s = Compile("--skip", skip);
  if (!s.ok()) return s.status();
  auto focused = [&](const std::string& text) { return !*f || std::regex_search(text, **f); };
  auto selected = [&](const std::string& text) {
    return focused(text) && !(*s && std::regex_search(text, **s));
  };
  std::vector<size_t> out;
  bool focus_matched = false;
  for (size_t i = 0; i < texts.size(); ++i) {
    focus_matched |= std::any_of(texts[i].begin(), texts[i].end(), focused);
    if (std::any_of(texts[i].begin(), texts[i].end(), selected)) out.push_back(i);
  }
  // A typo in a CI job's --focus must not pass with nothing checked.
  if (!focus_matched) return absl::InvalidArgumentError(focus_matches_nothing);
  return out;
}

std::vector<std::string> SeeIds(const std::string& message, const std::regex& see) {
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(message.begin(), message.end(), see);
       it != std::sregex_iterator(); ++it) {
    for (absl::string_view id : absl::StrSplit((*it)[1].str(), ", ")) out.emplace_back(id);
  }
  return out;
}

CheckResult CompanionResult(const std::string& check_id, const CompanionInfo& companion,
                            const std::vector<std::string>& tags, const Outcome& main) {
  CheckResult out{companion.id, companion.title, companion.level, tags, {}, absl::ZeroDuration()};
  if (main.companion != nullptr) {
    out.outcome = *main.companion;
  } else if (main.status == Status::kSkip) {
    out.outcome = Outcome::Skip(main.message);
  } else {
    out.outcome = Outcome::Skip(fmt::format("not measured (see {})", check_id));
  }
  out.outcome.companion = nullptr;
  return out;
}

std::string PrerequisiteMessage(const std::string& of, const std::string& message) {
  return fmt::format("(not selected; run because {} depends on it) {}", of, message);
}

void SortResults(const std::vector<std::string>& ids, const std::set<std::string>& prerequisites,
                 std::vector<CheckResult>& results) {
  std::map<std::string, size_t> position;
  for (const std::string& id : ids) position.emplace(id, position.size());
  std::stable_sort(results.begin(), results.end(), [&](const CheckResult& a, const CheckResult& b) {
    return std::make_pair(prerequisites.count(a.id), position[a.id]) <
           std::make_pair(prerequisites.count(b.id), position[b.id]);
  });
}

}  // namespace core_internal
}  // namespace devmgr::conformance
