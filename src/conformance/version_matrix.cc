#include "conformance/version_matrix.h"

#include "fmt/format.h"

namespace devmgr::conformance {
namespace {

std::string Verdict(Status s) {
  switch (s) {
    case Status::kPass:
      return "passed";
    case Status::kFail:
      return "failed";
    case Status::kSkip:
      return "skipped";
  }
  return "skipped";
}

}  // namespace

RunReport MergeVersionReports(const std::vector<RunReport>& reports) {
  RunReport out;
  if (reports.empty()) return out;
  out.target = reports.front().target;
  out.started = reports.front().started;
  out.duration = absl::ZeroDuration();
  for (const RunReport& r : reports) {
    out.kubelet_version += (out.kubelet_version.empty() ? "" : ",") + r.kubelet_version;
    out.duration += r.duration;
    out.sessions += r.sessions;
    for (CheckResult c : r.results) {
      c.id = fmt::format("{} [{}]", c.id, r.kubelet_version);
      c.title = fmt::format("{} [{}]", c.title, r.kubelet_version);
      out.results.push_back(std::move(c));
    }
  }
  return out;
}

void RecordReport(VersionMatrix* m, const RunReport& report) {
  for (const CheckResult& c : report.results) {
    m->Record(c.id, report.kubelet_version, Verdict(c.outcome.status));
  }
}

std::string MatrixSummary(const VersionMatrix& m) {
  std::string out = "=== checks per kubelet version\n" + m.Table();
  const std::vector<std::string> diff = m.Differences();
  if (diff.empty()) {
    out += "=== no check verdict differs between kubelet versions\n";
  } else {
    out +=
        fmt::format("=== check verdicts that differ between kubelet versions ({}):\n", diff.size());
    for (const std::string& d : diff) out += "    " + d + "\n";
  }
  return out;
}

}  // namespace devmgr::conformance
