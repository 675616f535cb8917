#include "topology/config_text.h"

#include <set>

#include "fmt/format.h"

namespace devmgr::topology {
namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

bool ParseUint(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseNumaNodeList(const std::string& text) {
  std::vector<int> ids;
  std::set<int> seen;
  for (const std::string& part : Split(text, ',')) {
    const std::string t = Trim(part);
    uint64_t v = 0;
    if (!ParseUint(t, &v) || v > 63) {
      return absl::InvalidArgumentError(
          fmt::format("invalid NUMA node id \"{}\" in \"{}\": ids are integers 0..63", t, text));
    }
    if (!seen.insert(static_cast<int>(v)).second) {
      return absl::InvalidArgumentError(fmt::format("NUMA node id {} is listed twice", v));
    }
    ids.push_back(static_cast<int>(v));
  }
  return ids;
}

absl::StatusOr<std::vector<std::vector<uint64_t>>> ParseNumaDistances(const std::string& text) {
  std::vector<std::vector<uint64_t>> rows;
  if (Trim(text).empty()) return rows;
  for (const std::string& row_text : Split(text, ';')) {
    std::vector<uint64_t> row;
    for (const std::string& part : Split(row_text, ',')) {
      const std::string t = Trim(part);
      uint64_t v = 0;
      if (!ParseUint(t, &v)) {
        return absl::InvalidArgumentError(
            fmt::format("invalid NUMA distance \"{}\" in \"{}\"", t, text));
      }
      row.push_back(v);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

absl::StatusOr<std::map<std::string, std::string>> ParsePolicyOptions(const std::string& text) {
  std::map<std::string, std::string> out;
  if (Trim(text).empty()) return out;
  for (const std::string& part : Split(text, ',')) {
    const size_t eq = part.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(
          fmt::format("invalid policy option \"{}\": expected key=value", part));
    }
    out[Trim(part.substr(0, eq))] = Trim(part.substr(eq + 1));
  }
  return out;
}

absl::StatusOr<std::vector<NumaNode>> MakeNumaTopology(
    const std::vector<int>& ids, const std::vector<std::vector<uint64_t>>& distances) {
  if (!distances.empty() && distances.size() != ids.size()) {
    return absl::InvalidArgumentError(
        fmt::format("{} NUMA distance rows for {} NUMA nodes: give one row per node",
                    distances.size(), ids.size()));
  }
  std::vector<NumaNode> out;
  for (size_t i = 0; i < ids.size(); ++i) {
    NumaNode n;
    n.id = ids[i];
    if (!distances.empty()) n.distances = distances[i];
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace devmgr::topology
