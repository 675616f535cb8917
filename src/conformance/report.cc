#include "conformance/report.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/fs.h"
#include "common/junit.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace devmgr::conformance {
namespace {

std::string Area(const std::string& id) {
  const size_t dot = id.find('.');
  return "conformance." + (dot == std::string::npos ? id : id.substr(0, dot));
}

std::string Title(const CheckResult& r) {
  std::string t = r.title;
  for (const auto& tag : r.tags) t += " " + tag;
  return t;
}

std::string FiguresText(const CheckResult& r) {
  std::string out;
  for (const auto& f : r.outcome.figures) out += f.name + ": " + f.value + "\n";
  return out;
}

}  // namespace

std::string SummaryTable(const RunReport& report) {
  size_t w = 2;
  for (const auto& r : report.results) w = std::max(w, r.id.size());
  std::string out =
      fmt::format("devmgr conformance: {} (kubelet {})\n\n", report.target, report.kubelet_version);
  out += fmt::format("{:<{}}  {:<6}  {:<6}  {:>7}  {}\n", "ID", w, "LEVEL", "RESULT", "TIME",
                     "DETAILS");
  for (const auto& r : report.results) {
    std::string msg = r.outcome.message.empty() ? r.title : r.outcome.message;
    out += fmt::format("{:<{}}  {:<6}  {:<6}  {:>6}s  {}\n", r.id, w, LevelName(r.level),
                       StatusName(r.outcome.status),
                       fmt::format("{:.2f}", absl::ToDoubleSeconds(r.duration)), msg);
    if (r.outcome.status == Status::kFail) {
      for (const auto& e : r.outcome.evidence) out += fmt::format("{:<{}}    | {}\n", "", w, e);
    }
  }
  const int must_fail = report.Count(Level::kMust, Status::kFail);
  const int should_fail = report.Count(Level::kShould, Status::kFail);
  out += fmt::format(
      "\n{} checks: {} passed, {} failed ({} MUST, {} SHOULD, {} INFO), {} skipped "
      "in {:.1f}s (wall time, {} plugin session(s))\n",
      report.results.size(), report.Count(Status::kPass), report.Count(Status::kFail), must_fail,
      should_fail, report.Count(Level::kInfo, Status::kFail), report.Count(Status::kSkip),
      absl::ToDoubleSeconds(report.duration), report.sessions);
  out += must_fail == 0 ? "RESULT: PASS (every MUST check passed)\n"
                        : fmt::format("RESULT: FAIL ({} MUST check(s) failed)\n", must_fail);
  return out;
}

std::string JUnitXml(const RunReport& report) {
  junit::TestSuite suite{"devmgr-conformance",
                         report.duration,
                         report.started,
                         {{"target", report.target}, {"kubeletVersion", report.kubelet_version}},
                         {}};
  for (const auto& r : report.results) {
    junit::TestCase tc;
    tc.classname = Area(r.id);
    tc.name = fmt::format("[{}] {}: {}", LevelName(r.level), r.id, Title(r));
    tc.time = r.duration;
    if (r.outcome.status == Status::kFail) {
      tc.result = junit::TestCase::Result::kFailure;
      tc.message = r.outcome.message;
      tc.type = LevelName(r.level);
      tc.text = r.outcome.message + "\n";
      for (const auto& e : r.outcome.evidence) tc.text += "  " + e + "\n";
    } else if (r.outcome.status == Status::kSkip) {
      tc.result = junit::TestCase::Result::kSkipped;
      tc.message = r.outcome.message;
    }
    tc.system_out = FiguresText(r);
    if (r.outcome.status == Status::kPass && !r.outcome.message.empty()) {
      tc.system_out = r.outcome.message + "\n" + tc.system_out;
    }
    suite.cases.push_back(std::move(tc));
  }
  return junit::Xml({"", {std::move(suite)}});
}

std::string JsonReport(const RunReport& report) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& r : report.results) {
    nlohmann::json figures = nlohmann::json::object();
    for (const auto& f : r.outcome.figures) figures[f.name] = f.value;
    checks.push_back({{"id", r.id},
                      {"title", r.title},
                      {"level", LevelName(r.level)},
                      {"tags", r.tags},
                      {"status", StatusName(r.outcome.status)},
                      {"message", r.outcome.message},
                      {"evidence", r.outcome.evidence},
                      {"figures", figures},
                      {"durationSeconds", absl::ToDoubleSeconds(r.duration)}});
  }
  nlohmann::json j = {
      {"target", report.target},
      {"kubeletVersion", report.kubelet_version},
      {"started", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", report.started, absl::UTCTimeZone())},
      {"durationSeconds", absl::ToDoubleSeconds(report.duration)},
      {"sessions", report.sessions},
      {"passed", report.MustPassed()},
      {"summary",
       {{"total", report.results.size()},
        {"passed", report.Count(Status::kPass)},
        {"failed", report.Count(Status::kFail)},
        {"skipped", report.Count(Status::kSkip)},
        {"mustFailed", report.Count(Level::kMust, Status::kFail)},
        {"shouldFailed", report.Count(Level::kShould, Status::kFail)},
        {"infoFailed", report.Count(Level::kInfo, Status::kFail)}}},
      {"checks", checks}};
  // Invalid UTF-8 in plugin data must not abort the dump.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

absl::Status WriteResultsDir(const RunReport& report, const std::string& dir) {
  if (absl::Status s = fs::MkdirAll(*fs::Default(), dir, 0755); !s.ok()) return s;
  const std::string junit = dir + "/devmgr-conformance-junit.xml";
  if (absl::Status s = fs::WriteOutputFile(junit, JUnitXml(report)); !s.ok()) return s;
  if (absl::Status s = fs::WriteOutputFile(dir + "/devmgr-conformance.json", JsonReport(report));
      !s.ok()) {
    return s;
  }
  // The done file comes last: sonobuoy's worker starts collecting when it
  // appears.
  return fs::WriteOutputFile(dir + "/done", junit);
}

}  // namespace devmgr::conformance
