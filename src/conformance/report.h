// Conformance reports: the human summary table, JUnit XML (one testcase per
// check, failures with their evidence), JSON, and a sonobuoy plugin results
// directory (the JUnit file plus a "done" file naming it).
#ifndef DEVMGR_CONFORMANCE_REPORT_H_
#define DEVMGR_CONFORMANCE_REPORT_H_

#include <string>

#include "absl/status/status.h"
#include "conformance/runner.h"

namespace devmgr::conformance {

// One line per check (ID, level, result, time, message), failures'
// evidence indented below, then the totals and the verdict.
std::string SummaryTable(const RunReport& report);

// JUnit XML: <testsuites><testsuite name="devmgr-conformance"> with one
// <testcase classname="conformance.<area>" name="[LEVEL] id: title">;
// failures carry the message and the evidence; skips carry the reason;
// figures go to <system-out>. SHOULD and INFO failures are marked as
// failures too, with type "SHOULD"/"INFO" (they do not change the exit code).
std::string JUnitXml(const RunReport& report);

// {"target", "kubeletVersion", "started", "durationSeconds", "passed":
// bool, "summary": {...}, "checks": [{"id", "title", "level", "tags",
// "status", "message", "evidence", "figures", "durationSeconds"}]}.
std::string JsonReport(const RunReport& report);

// Sonobuoy's plugin contract: writes <dir>/devmgr-conformance-junit.xml and
// <dir>/devmgr-conformance.json, then <dir>/done holding the path of the
// JUnit file (sonobuoy's "result-format: junit").
absl::Status WriteResultsDir(const RunReport& report, const std::string& dir);

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_REPORT_H_
