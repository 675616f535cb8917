#include "scenario/report/version_matrix.h"

#include <algorithm>

#include "fmt/format.h"

namespace devmgr::scenario {
namespace {

// The first kubelet whose DRA devmgr emulates (docs/dra.md).
constexpr int kMinDraMinor = 34;

bool Contains(const std::vector<std::string>& vs, const std::string& v) {
  return std::find(vs.begin(), vs.end(), v) != vs.end();
}

std::string Join(const std::vector<std::string>& vs) {
  std::string out;
  for (const std::string& v : vs) out += (out.empty() ? "" : ", ") + v;
  return out;
}

}  // namespace

std::vector<PlannedRun> PlanRuns(const Scenario& sc, const std::vector<std::string>& versions,
                                 bool matrix) {
  std::vector<PlannedRun> out;
  const std::vector<std::string>& pinned = sc.node.kubelet_versions;
  const std::vector<std::string> run_versions = matrix || pinned.empty() ? versions : pinned;
  for (const std::string& v : run_versions) {
    PlannedRun r;
    r.version = v;
    r.display = matrix || pinned.size() > 1 ? fmt::format("{} [{}]", sc.name, v) : sc.name;
    if (matrix && !pinned.empty() && !Contains(pinned, v)) {
      r.skip = true;
      r.reason = fmt::format("node.kubelet_versions names {} only", Join(pinned));
    } else if (!sc.applies_to.empty() && !Contains(sc.applies_to, v)) {
      r.skip = true;
      r.reason = fmt::format("applies to kubelet {} only", Join(sc.applies_to));
    }
    if (!r.skip && sc.UsesDra()) {
      absl::StatusOr<Profile> p = ProfileForVersion(v);
      if (p.ok() && p->minor < kMinDraMinor) {
        r.skip = true;
        r.reason = fmt::format(
            "DRA needs kubelet 1.{} or newer (devmgr emulates no DRAPlugin handler before)",
            kMinDraMinor);
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<Profile> ScenarioProfile(const Scenario& sc, const std::string& version,
                                        const std::string& cli_gates) {
  absl::StatusOr<Profile> p = ProfileForVersion(version);
  if (!p.ok()) return p.status();
  if (absl::Status s = p->gates.Set(cli_gates); !s.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("--feature-gates under kubelet {}: {}", p->name, std::string(s.message())));
  }
  if (absl::Status s = p->gates.Set(sc.node.feature_gates); !s.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("node.feature_gates under kubelet {}: {}", p->name, std::string(s.message())));
  }
  return p;
}

void RecordResult(VersionMatrix* scenarios, VersionMatrix* steps, const std::string& scenario_name,
                  const std::string& version, const ScenarioResult& r) {
  scenarios->Record(scenario_name, version, OutcomeName(r.outcome));
  for (const StepResult& st : r.steps) {
    // The set-up's description names the version; its index is enough.
    const std::string what = st.index == 0 ? "set-up" : st.description;
    steps->Record(fmt::format("{} › step {}: {}", scenario_name, st.index, what), version,
                  OutcomeName(st.outcome));
  }
}

std::string MatrixReport(const VersionMatrix& scenarios, const VersionMatrix& steps) {
  std::string out = "=== scenarios per kubelet version\n" + scenarios.Table();
  std::vector<std::string> diff = scenarios.Differences();
  for (std::string& d : steps.Differences()) diff.push_back(std::move(d));
  if (diff.empty()) {
    out += "=== no scenario or step verdict differs between kubelet versions\n";
  } else {
    out += fmt::format("=== verdicts that differ between kubelet versions ({}):\n", diff.size());
    for (const std::string& d : diff) out += "    " + d + "\n";
  }
  return out;
}

}  // namespace devmgr::scenario
