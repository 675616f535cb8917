// A version matrix: verdicts of the same cases (scenarios, steps,
// conformance checks) under several kubelet profiles, the per-version
// tally, and a summary of the cases whose verdict differs between versions
// ("passes on 1.33-1.36, fails on 1.37: <case>"). Shared by `devmgr run`
// and `devmgr conformance` with --kubelet-version LIST.
#ifndef DEVMGR_COMMON_VERSION_MATRIX_H_
#define DEVMGR_COMMON_VERSION_MATRIX_H_

#include <map>
#include <string>
#include <vector>

namespace devmgr {

class VersionMatrix {
 public:
  // `versions`: profile names in the order they ran (ascending).
  explicit VersionMatrix(std::vector<std::string> versions);

  // Records the verdict ("passed", "failed", "skipped", "error", ...) of
  // `case_name` under `version`. Cases keep the order of first record.
  void Record(const std::string& case_name, const std::string& version, const std::string& verdict);

  const std::vector<std::string>& versions() const { return versions_; }

  // One line per case whose verdicts differ between versions, ignoring
  // versions where it was skipped or not run unless every other version
  // agrees (then "skipped" counts as a verdict only if it is the only
  // difference). Format: "passes on 1.33-1.36, fails on 1.37: <case>".
  std::vector<std::string> Differences() const;

  // "version  passed  failed  skipped  error" table, one row per version.
  std::string Table() const;

  // "1.33-1.36, 1.37" for a subset of versions(): consecutive profiles
  // joined with a dash.
  std::string Ranges(const std::vector<std::string>& subset) const;

 private:
  std::vector<std::string> versions_;
  std::vector<std::string> order_;
  std::map<std::string, std::map<std::string, std::string>> verdicts_;
};

// "passes", "fails", "is skipped", "errors" for a verdict.
std::string VerdictVerb(const std::string& verdict);

}  // namespace devmgr

#endif  // DEVMGR_COMMON_VERSION_MATRIX_H_
