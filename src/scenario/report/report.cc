#include "scenario/report/report.h"

#include <map>

#include "common/junit.h"
#include "fmt/format.h"
#include "scenario/report/api_faults.h"

namespace devmgr::scenario {
namespace {

std::string Secs(absl::Duration d) { return fmt::format("{:.3f}", absl::ToDoubleSeconds(d)); }

std::string FailureText(const ScenarioResult& r) {
  std::string s;
  for (const StepResult& st : r.steps) {
    if (st.outcome != Outcome::kFailed && st.outcome != Outcome::kError) continue;
    s += fmt::format("step {} ({}) at {}: {}\n", st.index, st.description, st.loc.ToString(),
                     st.message);
    for (const Failure& f : st.failures) {
      s += fmt::format("  {}: {}\n    expected: {}\n    actual:   {}\n", f.loc.ToString(), f.what,
                       f.expected, f.actual);
    }
  }
  return s;
}

std::string Evidence(const ScenarioResult& r) {
  std::string s;
  if (!r.log_tail.empty()) {
    s += "recent devmgr log lines:\n";
    for (const auto& l : r.log_tail) s += "  " + l + "\n";
  }
  for (const auto& [name, lines] : r.plugin_output) {
    s += fmt::format("plugin {} output:\n", name);
    for (const auto& l : lines) s += "  " + l + "\n";
  }
  return s;
}

}  // namespace

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPassed:
      return "passed";
    case Outcome::kFailed:
      return "failed";
    case Outcome::kSkipped:
      return "skipped";
    case Outcome::kError:
      return "error";
  }
  return "?";
}

std::string StepLog(const ScenarioResult& r) {
  std::string s;
  for (const StepResult& st : r.steps) {
    s += fmt::format("[{}] {} ... {}", st.index, st.description, OutcomeName(st.outcome));
    if (st.outcome != Outcome::kSkipped) s += fmt::format(" ({}s)", Secs(st.duration));
    s += "\n";
    for (const auto& n : st.notes) s += "    " + n + "\n";
    if (!st.message.empty()) s += "    " + st.message + "\n";
  }
  for (const ApiFaultFiring& f : r.api_faults) {
    for (const std::string& l : ApiFaultLines(f)) s += "    " + l + "\n";
  }
  return s;
}

std::string Summary(const std::vector<ScenarioResult>& results) {
  int passed = 0, failed = 0, errors = 0, skipped = 0;
  for (const auto& r : results) {
    switch (r.outcome) {
      case Outcome::kPassed:
        ++passed;
        break;
      case Outcome::kFailed:
        ++failed;
        break;
      case Outcome::kError:
        ++errors;
        break;
      case Outcome::kSkipped:
        ++skipped;
        break;
    }
  }
  return fmt::format("{} passed, {} failed, {} error{}, {} skipped", passed, failed, errors,
                     errors == 1 ? "" : "s", skipped);
}

std::string JUnitXml(const std::vector<ScenarioResult>& results) {
  junit::Document doc{"devmgr run", {}};
  // One suite per file, in first-seen order.
  std::map<std::string, size_t> suite_of;
  for (const auto& r : results) {
    auto [it, added] = suite_of.emplace(r.file, doc.suites.size());
    if (added) doc.suites.push_back({r.file, std::nullopt, std::nullopt, {}, {}});
    junit::TestCase tc;
    tc.classname = r.file;
    tc.name = r.name;
    tc.file = r.file;
    tc.time = r.duration;
    if (r.outcome == Outcome::kFailed || r.outcome == Outcome::kError) {
      const bool err = r.outcome == Outcome::kError;
      tc.result = err ? junit::TestCase::Result::kError : junit::TestCase::Result::kFailure;
      tc.message = r.message;
      tc.type = err ? "EnvironmentError" : "ScenarioFailure";
      tc.text = FailureText(r);
    } else if (r.outcome == Outcome::kSkipped) {
      tc.result = junit::TestCase::Result::kSkipped;
      tc.message = r.message;
    }
    if (!r.steps.empty()) tc.system_out = StepLog(r);
    tc.system_err = Evidence(r);
    doc.suites[it->second].cases.push_back(std::move(tc));
  }
  return junit::Xml(doc);
}

nlohmann::ordered_json ResultsJson(const std::vector<ScenarioResult>& results) {
  nlohmann::ordered_json j;
  j["schemaVersion"] = 1;
  j["summary"] = {
      {"total", results.size()}, {"passed", 0}, {"failed", 0}, {"errors", 0}, {"skipped", 0}};
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& r : results) {
    switch (r.outcome) {
      case Outcome::kPassed:
        j["summary"]["passed"] = j["summary"]["passed"].get<int>() + 1;
        break;
      case Outcome::kFailed:
        j["summary"]["failed"] = j["summary"]["failed"].get<int>() + 1;
        break;
      case Outcome::kError:
        j["summary"]["errors"] = j["summary"]["errors"].get<int>() + 1;
        break;
      case Outcome::kSkipped:
        j["summary"]["skipped"] = j["summary"]["skipped"].get<int>() + 1;
        break;
    }
    nlohmann::ordered_json s;
    s["name"] = r.name;
    s["file"] = r.file;
    s["kubeletVersion"] = r.kubelet_version;
    s["outcome"] = OutcomeName(r.outcome);
    s["message"] = r.message;
    s["durationSeconds"] = absl::ToDoubleSeconds(r.duration);
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    for (const auto& st : r.steps) {
      nlohmann::ordered_json x;
      x["index"] = st.index;
      x["kind"] = st.kind;
      x["description"] = st.description;
      x["location"] = st.loc.ToString();
      x["outcome"] = OutcomeName(st.outcome);
      x["durationSeconds"] = absl::ToDoubleSeconds(st.duration);
      x["message"] = st.message;
      x["notes"] = st.notes;
      nlohmann::ordered_json fs = nlohmann::ordered_json::array();
      for (const auto& f : st.failures) {
        fs.push_back({{"location", f.loc.ToString()},
                      {"what", f.what},
                      {"expected", f.expected},
                      {"actual", f.actual}});
      }
      x["failures"] = std::move(fs);
      steps.push_back(std::move(x));
    }
    s["steps"] = std::move(steps);
    nlohmann::ordered_json faults = nlohmann::ordered_json::array();
    for (const ApiFaultFiring& f : r.api_faults) faults.push_back(ApiFaultJson(f));
    s["apiFaults"] = std::move(faults);
    s["logTail"] = r.log_tail;
    nlohmann::ordered_json po = nlohmann::ordered_json::object();
    for (const auto& [k, v] : r.plugin_output) po[k] = v;
    s["pluginOutput"] = std::move(po);
    if (!r.work_dir.empty()) s["workDir"] = r.work_dir;
    list.push_back(std::move(s));
  }
  j["scenarios"] = std::move(list);
  return j;
}

}  // namespace devmgr::scenario
