#include "scenario/run/suite.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/str_join.h"
#include "kubelet/profile.h"
#include "kubelet/version_matrix.h"
#include "podresources/options.h"
#include "scenario/format/scenario_parser.h"
#include "scenario/report/report.h"
#include "scenario/report/version_matrix.h"

namespace devmgr::scenario {
namespace {

bool IsDir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsYamlName(const std::string& n) {
  auto ends = [&](const std::string& s) {
    return n.size() > s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".yaml") || ends(".yml");
}

// Every *.yaml / *.yml under `dir`, recursively, sorted by name at each level.
void CollectYaml(const std::string& dir, std::vector<std::string>* out) {
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    const std::string p = dir + "/" + n;
    if (IsDir(p)) {
      CollectYaml(p, out);
    } else if (IsYamlName(n)) {
      out->push_back(p);
    }
  }
}

ScenarioResult SkippedRun(const Scenario& sc, const PlannedRun& run, std::string why) {
  ScenarioResult r;
  r.name = run.display;
  r.file = sc.file;
  r.kubelet_version = run.version;
  r.outcome = Outcome::kSkipped;
  r.message = std::move(why);
  return r;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> CollectScenarioFiles(
    const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    if (!IsDir(p)) {
      files.push_back(p);
      continue;
    }
    const size_t before = files.size();
    CollectYaml(p, &files);
    if (files.size() == before) {
      return absl::InvalidArgumentError(p + ": no *.yaml scenario files");
    }
  }
  return files;
}

absl::StatusOr<std::vector<Scenario>> LoadScenarios(const std::vector<std::string>& files) {
  std::vector<Scenario> scenarios;
  std::vector<std::string> errors;
  for (const std::string& f : files) {
    absl::StatusOr<Scenario> sc = LoadScenario(f);
    if (sc.ok()) {
      scenarios.push_back(*std::move(sc));
    } else {
      errors.emplace_back(sc.status().message());
    }
  }
  if (!errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
  return scenarios;
}

SuiteResult RunSuite(const std::vector<Scenario>& scenarios, const SuiteOptions& o) {
  SuiteResult out;
  const absl::Time t0 = absl::Now();
  const std::atomic<bool>* cancel = o.runner.cancel;
  std::ostream* log = o.runner.out;
  VersionMatrix matrix_scenarios(o.versions), matrix_steps(o.versions);
  for (const Scenario& sc : scenarios) {
    for (const PlannedRun& run : PlanRuns(sc, o.versions, o.matrix)) {
      const bool filtered = (o.focus && !std::regex_search(run.display, *o.focus)) ||
                            (o.skip && std::regex_search(run.display, *o.skip));
      out.focus_matched += !o.focus || std::regex_search(run.display, *o.focus);
      const bool interrupted = cancel != nullptr && cancel->load();
      if (interrupted) {
        if (log) *log << "--- SKIP " << run.display << " (interrupted)\n";
        out.results.push_back(SkippedRun(sc, run, "interrupted"));
      } else if (filtered) {
        out.results.push_back(SkippedRun(sc, run, "filtered out by --focus/--skip"));
      } else if (run.skip) {
        if (log) *log << "--- SKIP " << run.display << " (" << run.reason << ")\n";
        out.results.push_back(SkippedRun(sc, run, run.reason));
      } else if (o.run_planned) {
        for (ScenarioResult& r : o.run_planned(sc, run, o.runner)) {
          out.results.push_back(std::move(r));
        }
      } else {
        out.results.push_back(RunScenario(sc, run.version, run.display, o.runner));
      }
      if (o.matrix) {
        RecordResult(&matrix_scenarios, &matrix_steps, sc.name, run.version, out.results.back());
      }
    }
  }
  if (o.matrix) out.matrix_report = MatrixReport(matrix_scenarios, matrix_steps);
  out.elapsed = absl::Now() - t0;
  return out;
}

bool AnyRunHasPodResourcesGet(const std::vector<Scenario>& scenarios, const SuiteOptions& o) {
  for (const Scenario& sc : scenarios) {
    for (const PlannedRun& run : PlanRuns(sc, o.versions, o.matrix)) {
      if (run.skip) continue;
      absl::StatusOr<Profile> p = ScenarioProfile(sc, run.version, o.runner.feature_gates);
      if (p.ok() && podresources::OptionsForProfile(*p).get_enabled) return true;
    }
  }
  return false;
}

void PrintSuiteSummary(const SuiteResult& r, std::ostream& out) {
  out << "\n=== " << Summary(r.results) << " ("
      << absl::FormatDuration(absl::Trunc(r.elapsed, absl::Milliseconds(10))) << ")\n";
  for (const ScenarioResult& s : r.results) {
    if (s.outcome == Outcome::kFailed || s.outcome == Outcome::kError) {
      out << "    " << (s.outcome == Outcome::kError ? "ERROR " : "FAIL  ") << s.name << " ("
          << s.file << "): " << s.message << "\n";
    }
  }
  if (!r.matrix_report.empty()) out << "\n" << r.matrix_report;
}

SuiteVerdict Verdict(const SuiteResult& r, bool interrupted) {
  bool failed = interrupted;
  for (const ScenarioResult& s : r.results) {
    if (s.outcome == Outcome::kError) return SuiteVerdict::kError;
    failed |= s.outcome == Outcome::kFailed;
  }
  return failed ? SuiteVerdict::kFailed : SuiteVerdict::kPassed;
}

}  // namespace devmgr::scenario
