// The conformance catalogue's vocabulary: a check (stable ID, title, level,
// tags, what it needs from the target) and its result (status, message,
// evidence, measured figures).
#ifndef DEVMGR_CONFORMANCE_CHECK_H_
#define DEVMGR_CONFORMANCE_CHECK_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace devmgr::conformance {

class Session;

// MUST: the kubelet breaks without it (fails the run). SHOULD: best
// practice (reported, does not fail the run). INFO: a measured figure.
enum class Level { kMust, kShould, kInfo };
const char* LevelName(Level level);  // "MUST", "SHOULD", "INFO"

enum class Status { kPass, kFail, kSkip };
const char* StatusName(Status status);  // "PASS", "FAIL", "SKIP"

// A measured figure, e.g. {"Allocate p99", "1.2 ms"}.
struct Figure {
  std::string name;
  std::string value;
};

struct Outcome {
  Status status = Status::kPass;
  // One line: why it failed or was skipped, or what was measured.
  std::string message;
  // The observations behind the verdict (requests, answers, timings).
  std::vector<std::string> evidence;
  std::vector<Figure> figures;
  // The verdict of the check's companion (CheckInfo::companion), measured in
  // the same session; nullptr when the check could not measure it (the
  // companion is then skipped with a pointer to this check).
  std::shared_ptr<const struct Outcome> companion;

  static Outcome Pass(std::string msg = "") { return {Status::kPass, std::move(msg), {}, {}}; }
  static Outcome Fail(std::string msg) { return {Status::kFail, std::move(msg), {}, {}}; }
  static Outcome Skip(std::string msg) { return {Status::kSkip, std::move(msg), {}, {}}; }
  Outcome& Evidence(std::string line) {
    evidence.push_back(std::move(line));
    return *this;
  }
  Outcome& Companion(Outcome o) {
    companion = std::make_shared<const Outcome>(std::move(o));
    return *this;
  }
};

// What a check needs from the target; a check whose needs the target cannot
// meet is skipped with the reason.
enum Need : unsigned {
  kNeedNothing = 0,
  // The plugin registers with the tester's kubelet.sock (not --socket).
  kNeedRegistration = 1u << 0,
  // The tester starts the plugin itself (--plugin, or in-process).
  kNeedStartedByTester = 1u << 1,
  // A device list. Checks with a session of their own that need one are
  // skipped at no cost when the shared session got none (law.first-list's
  // finding).
  kNeedDeviceList = 1u << 2,
};

// Where a check runs. Checks that leave the plugin as they found it run one
// after another in a single shared session (one plugin start, one
// registration); a check that restarts the kubelet or the plugin gets a
// fresh session of its own.
enum class SessionUse { kShared, kOwn };

using CheckFn = std::function<Outcome(Session&)>;

// A second verdict drawn from the same measurement as its check, at another
// level: a timed MUST (the upstream e2e window) has a SHOULD companion (a
// tighter window) so that a slow but working plugin is reported with its
// measured time, at the cost of one session, not two.
struct CompanionInfo {
  std::string id;
  std::string title;
  Level level = Level::kShould;
};

struct CheckInfo {
  std::string id;     // stable, e.g. "allocate.absolute-paths"
  std::string title;  // one line
  Level level = Level::kMust;
  std::vector<std::string> tags;  // e.g. "[Disruptive]", "[Slow]"
  unsigned needs = kNeedNothing;
  CheckFn run;
  std::optional<CompanionInfo> companion;
  SessionUse session = SessionUse::kShared;
  // Run order inside the shared session, lower first, ties in catalogue
  // order (catalogue.cc says why each rank is where it is). Reports keep
  // catalogue order.
  int shared_rank = 0;
};

struct CheckResult {
  std::string id;
  std::string title;
  Level level = Level::kMust;
  std::vector<std::string> tags;
  Outcome outcome;
  absl::Duration duration;
};

// The whole catalogue, in run order.
const std::vector<CheckInfo>& Catalogue();

// One line of the catalogue as reported: a check, or a companion (its
// parent is the check that measures it).
struct CatalogueEntry {
  std::string id;
  std::string title;
  Level level;
  std::vector<std::string> tags;
  const CheckInfo* parent = nullptr;  // set for companions
};
// Every reported ID in run order, companions right after their check.
std::vector<CatalogueEntry> CatalogueEntries();

// The title with its tags appended: "Plugin restart ... [Disruptive]".
std::string DisplayTitle(const CheckInfo& c);

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_CHECK_H_
