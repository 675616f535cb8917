#include "common/junit.h"

#include "fmt/format.h"
#include "tinyxml2.h"

namespace devmgr::junit {
namespace {

std::string Seconds(absl::Duration d) { return fmt::format("{:.3f}", absl::ToDoubleSeconds(d)); }

struct Counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  absl::Duration time;
  void Add(const Counts& o) {
    tests += o.tests;
    failures += o.failures;
    errors += o.errors;
    skipped += o.skipped;
    time += o.time;
  }
  void Set(tinyxml2::XMLElement* e) const {
    e->SetAttribute("tests", tests);
    e->SetAttribute("failures", failures);
    e->SetAttribute("errors", errors);
    e->SetAttribute("skipped", skipped);
    e->SetAttribute("time", Seconds(time).c_str());
  }
};

void AddText(tinyxml2::XMLElement* parent, const char* tag, const std::string& text) {
  if (text.empty()) return;
  tinyxml2::XMLElement* e = parent->GetDocument()->NewElement(tag);
  e->SetText(XmlSafe(text).c_str());
  parent->InsertEndChild(e);
}

void AddCase(tinyxml2::XMLElement* suite, const TestCase& c, Counts* n) {
  tinyxml2::XMLDocument* doc = suite->GetDocument();
  tinyxml2::XMLElement* tc = doc->NewElement("testcase");
  suite->InsertEndChild(tc);
  tc->SetAttribute("classname", XmlSafe(c.classname).c_str());
  tc->SetAttribute("name", XmlSafe(c.name).c_str());
  tc->SetAttribute("time", Seconds(c.time).c_str());
  if (!c.file.empty()) tc->SetAttribute("file", XmlSafe(c.file).c_str());
  ++n->tests;
  n->time += c.time;
  switch (c.result) {
    case TestCase::Result::kPassed:
      break;
    case TestCase::Result::kFailure:
    case TestCase::Result::kError: {
      const bool error = c.result == TestCase::Result::kError;
      ++(error ? n->errors : n->failures);
      tinyxml2::XMLElement* f = doc->NewElement(error ? "error" : "failure");
      f->SetAttribute("message", XmlSafe(c.message).c_str());
      f->SetAttribute("type", XmlSafe(c.type).c_str());
      f->SetText(XmlSafe(c.text).c_str());
      tc->InsertEndChild(f);
      break;
    }
    case TestCase::Result::kSkipped: {
      ++n->skipped;
      tinyxml2::XMLElement* s = doc->NewElement("skipped");
      if (!c.message.empty()) s->SetAttribute("message", XmlSafe(c.message).c_str());
      tc->InsertEndChild(s);
      break;
    }
  }
  AddText(tc, "system-out", c.system_out);
  AddText(tc, "system-err", c.system_err);
}

// The suite's element; its counts are added to `total`.
void AddSuite(tinyxml2::XMLElement* root, const TestSuite& s, Counts* total) {
  tinyxml2::XMLDocument* doc = root->GetDocument();
  tinyxml2::XMLElement* suite = doc->NewElement("testsuite");
  root->InsertEndChild(suite);
  suite->SetAttribute("name", XmlSafe(s.name).c_str());
  if (!s.properties.empty()) {
    tinyxml2::XMLElement* props = doc->NewElement("properties");
    for (const auto& [k, v] : s.properties) {
      tinyxml2::XMLElement* p = doc->NewElement("property");
      p->SetAttribute("name", XmlSafe(k).c_str());
      p->SetAttribute("value", XmlSafe(v).c_str());
      props->InsertEndChild(p);
    }
    suite->InsertEndChild(props);
  }
  Counts n;
  for (const TestCase& c : s.cases) AddCase(suite, c, &n);
  if (s.time) n.time = *s.time;
  n.Set(suite);
  if (s.timestamp) {
    suite->SetAttribute(
        "timestamp",
        absl::FormatTime("%Y-%m-%dT%H:%M:%S", *s.timestamp, absl::UTCTimeZone()).c_str());
  }
  total->Add(n);
}

}  // namespace

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

std::string Xml(const Document& d) {
  tinyxml2::XMLDocument doc;
  doc.InsertEndChild(doc.NewDeclaration());
  tinyxml2::XMLElement* root = doc.NewElement("testsuites");
  doc.InsertEndChild(root);
  if (!d.name.empty()) root->SetAttribute("name", XmlSafe(d.name).c_str());
  Counts total;
  for (const TestSuite& s : d.suites) AddSuite(root, s, &total);
  if (!d.name.empty()) total.Set(root);
  tinyxml2::XMLPrinter printer;
  doc.Print(&printer);
  return printer.CStr();
}

}  // namespace devmgr::junit
