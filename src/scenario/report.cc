#include "scenario/report.h"

#include <map>

#include "fmt/format.h"
#include "tinyxml2.h"

namespace devmgr::scenario {
namespace {

std::string Secs(absl::Duration d) { return fmt::format("{:.3f}", absl::ToDoubleSeconds(d)); }

// XML 1.0 cannot carry most control characters, even escaped.
std::string XmlSafe(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

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
  tinyxml2::XMLDocument doc;
  doc.InsertEndChild(doc.NewDeclaration());
  tinyxml2::XMLElement* root = doc.NewElement("testsuites");
  root->SetAttribute("name", "devmgr run");
  doc.InsertEndChild(root);
  // One suite per file, in first-seen order.
  std::vector<std::string> files;
  std::map<std::string, std::vector<const ScenarioResult*>> by_file;
  for (const auto& r : results) {
    if (!by_file.count(r.file)) files.push_back(r.file);
    by_file[r.file].push_back(&r);
  }
  int all_tests = 0, all_failures = 0, all_errors = 0, all_skipped = 0;
  absl::Duration all_time;
  for (const std::string& file : files) {
    tinyxml2::XMLElement* suite = doc.NewElement("testsuite");
    root->InsertEndChild(suite);
    int tests = 0, failures = 0, errors = 0, skipped = 0;
    absl::Duration time;
    for (const ScenarioResult* r : by_file[file]) {
      ++tests;
      time += r->duration;
      tinyxml2::XMLElement* tc = doc.NewElement("testcase");
      tc->SetAttribute("classname", XmlSafe(file).c_str());
      tc->SetAttribute("name", XmlSafe(r->name).c_str());
      tc->SetAttribute("time", Secs(r->duration).c_str());
      tc->SetAttribute("file", XmlSafe(file).c_str());
      suite->InsertEndChild(tc);
      if (r->outcome == Outcome::kFailed || r->outcome == Outcome::kError) {
        const bool err = r->outcome == Outcome::kError;
        (err ? errors : failures)++;
        tinyxml2::XMLElement* f = doc.NewElement(err ? "error" : "failure");
        f->SetAttribute("message", XmlSafe(r->message).c_str());
        f->SetAttribute("type", err ? "EnvironmentError" : "ScenarioFailure");
        f->SetText(XmlSafe(FailureText(*r)).c_str());
        tc->InsertEndChild(f);
      } else if (r->outcome == Outcome::kSkipped) {
        ++skipped;
        tinyxml2::XMLElement* s = doc.NewElement("skipped");
        if (!r->message.empty()) s->SetAttribute("message", XmlSafe(r->message).c_str());
        tc->InsertEndChild(s);
      }
      if (!r->steps.empty()) {
        tinyxml2::XMLElement* out = doc.NewElement("system-out");
        out->SetText(XmlSafe(StepLog(*r)).c_str());
        tc->InsertEndChild(out);
      }
      const std::string ev = Evidence(*r);
      if (!ev.empty()) {
        tinyxml2::XMLElement* e = doc.NewElement("system-err");
        e->SetText(XmlSafe(ev).c_str());
        tc->InsertEndChild(e);
      }
    }
    suite->SetAttribute("name", XmlSafe(file).c_str());
    suite->SetAttribute("tests", tests);
    suite->SetAttribute("failures", failures);
    suite->SetAttribute("errors", errors);
    suite->SetAttribute("skipped", skipped);
    suite->SetAttribute("time", Secs(time).c_str());
    all_tests += tests;
    all_failures += failures;
    all_errors += errors;
    all_skipped += skipped;
    all_time += time;
  }
  root->SetAttribute("tests", all_tests);
  root->SetAttribute("failures", all_failures);
  root->SetAttribute("errors", all_errors);
  root->SetAttribute("skipped", all_skipped);
  root->SetAttribute("time", Secs(all_time).c_str());
  tinyxml2::XMLPrinter printer;
  doc.Print(&printer);
  return printer.CStr();
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
