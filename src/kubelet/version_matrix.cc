#include "kubelet/version_matrix.h"

#include <algorithm>
#include <set>

#include "fmt/format.h"

namespace devmgr {

VersionMatrix::VersionMatrix(std::vector<std::string> versions) : versions_(std::move(versions)) {}

void VersionMatrix::Record(const std::string& case_name, const std::string& version,
                           const std::string& verdict) {
  auto [it, inserted] = verdicts_.try_emplace(case_name);
  if (inserted) order_.push_back(case_name);
  it->second[version] = verdict;
}

std::string VerdictVerb(const std::string& verdict) {
  if (verdict == "passed" || verdict == "pass") return "passes";
  if (verdict == "failed" || verdict == "fail") return "fails";
  if (verdict == "skipped" || verdict == "skip") return "is skipped";
  if (verdict == "error") return "errors";
  if (verdict == "warn" || verdict == "warning") return "warns";
  return verdict;
}

std::string VersionMatrix::Ranges(const std::vector<std::string>& subset) const {
  std::vector<size_t> idx;
  for (const std::string& v : subset) {
    auto it = std::find(versions_.begin(), versions_.end(), v);
    if (it != versions_.end()) idx.push_back(static_cast<size_t>(it - versions_.begin()));
  }
  std::sort(idx.begin(), idx.end());
  std::string out;
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && idx[j + 1] == idx[j] + 1) ++j;
    // Consecutive in the matrix and in minor numbers.
    std::string part = versions_[idx[i]];
    if (j > i) part += "-" + versions_[idx[j]];
    out += (out.empty() ? "" : ", ") + part;
    i = j + 1;
  }
  return out;
}

std::vector<std::string> VersionMatrix::Differences() const {
  std::vector<std::string> out;
  for (const std::string& c : order_) {
    const std::map<std::string, std::string>& by = verdicts_.at(c);
    // verdict -> versions, in first-appearance order over versions_.
    std::vector<std::pair<std::string, std::vector<std::string>>> groups;
    std::set<std::string> non_skip;
    for (const std::string& v : versions_) {
      auto it = by.find(v);
      if (it == by.end()) continue;
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const auto& p) { return p.first == it->second; });
      if (g == groups.end()) {
        groups.push_back({it->second, {v}});
      } else {
        g->second.push_back(v);
      }
      if (it->second != "skipped") non_skip.insert(it->second);
    }
    // Only a real difference counts: two verdicts other than "skipped".
    if (non_skip.size() < 2) continue;
    std::string line;
    for (const auto& [verdict, vs] : groups) {
      line += fmt::format("{}{} on {}", line.empty() ? "" : ", ", VerdictVerb(verdict), Ranges(vs));
    }
    out.push_back(line + ": " + c);
  }
  return out;
}

std::string VersionMatrix::Table() const {
  std::map<std::string, std::map<std::string, int>> counts;
  for (const auto& [c, by] : verdicts_) {
    for (const auto& [v, verdict] : by) ++counts[v][verdict];
  }
  std::string out = fmt::format("{:<8} {:>7} {:>7} {:>8} {:>6}\n", "kubelet", "passed", "failed",
                                "skipped", "error");
  for (const std::string& v : versions_) {
    auto& c = counts[v];
    out += fmt::format("{:<8} {:>7} {:>7} {:>8} {:>6}\n", v, c["passed"] + c["pass"],
                       c["failed"] + c["fail"], c["skipped"] + c["skip"], c["error"]);
  }
  return out;
}

}  // namespace devmgr
