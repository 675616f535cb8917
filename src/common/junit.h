// JUnit XML, the de-facto Jenkins/Ant schema CI systems read: <testsuites>
// holding <testsuite>s of <testcase>s, each passed, failed, in error or
// skipped. One writer for every report devmgr makes (`run`, `conformance`):
// the counts are computed here, and every text is made XML-safe (a plugin's
// device IDs and messages may carry control bytes XML 1.0 cannot hold, even
// escaped; they are written as \xNN).
#ifndef DEVMGR_COMMON_JUNIT_H_
#define DEVMGR_COMMON_JUNIT_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace devmgr::junit {

struct TestCase {
  enum class Result { kPassed, kFailure, kError, kSkipped };
  std::string classname;
  std::string name;
  std::string file;  // "": no file attribute
  absl::Duration time;
  Result result = Result::kPassed;
  // <failure>/<error>: message and type attributes, and the element's text;
  // <skipped>: message only ("": no attribute).
  std::string message;
  std::string type;
  std::string text;
  std::string system_out;  // "": none
  std::string system_err;  // "": none
};

struct TestSuite {
  std::string name;
  // The suite's time; unset: the sum of its cases' times.
  std::optional<absl::Duration> time;
  std::optional<absl::Time> timestamp;  // written in UTC
  std::vector<std::pair<std::string, std::string>> properties;
  std::vector<TestCase> cases;
};

struct Document {
  // The <testsuites> element's name and totals; without a name the element
  // has no attributes.
  std::string name;
  std::vector<TestSuite> suites;
};

// The XML text, with its declaration.
std::string Xml(const Document& doc);

// `s` with each control byte other than \n, \t and \r written as \xNN.
std::string XmlSafe(const std::string& s);

}  // namespace devmgr::junit

#endif  // DEVMGR_COMMON_JUNIT_H_
