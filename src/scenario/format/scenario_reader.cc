#include "scenario/format/scenario_reader.h"

#include <algorithm>
#include <vector>

#include "common/status_util.h"
#include "fmt/format.h"

namespace devmgr::scenario {
namespace {

yaml::TypedReader::Options ScenarioOptions() {
  yaml::TypedReader::Options o;
  o.duration_examples = "500ms, 2s or 5m1s";
  o.quoted_scalars_are_strings = true;
  return o;
}

}  // namespace

ScenarioReader::ScenarioReader(std::string file)
    : yaml::TypedReader(std::move(file), ScenarioOptions()) {}

Location ScenarioReader::Loc(const YAML::Node& n) const {
  Location l;
  l.file = file();
  Position(n.Mark(), &l.line, &l.column);
  return l;
}

const PluginSpec* ScenarioReader::FindPlugin(const Scenario& sc, const std::string& name) {
  for (const PluginSpec& p : sc.plugins) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

absl::Status ScenarioReader::PluginRef(const Scenario& sc, const YAML::Node& n,
                                       std::string* out) const {
  DEVMGR_RETURN_IF_ERROR(NonEmptyString(n, "plugin", out));
  if (FindPlugin(sc, *out) != nullptr) return absl::OkStatus();
  std::vector<std::string> names;
  for (const PluginSpec& p : sc.plugins) names.push_back(p.name);
  return UnknownName(n, fmt::format("unknown plugin '{}'", *out), *out, names);
}

absl::Status ScenarioReader::Hint(const YAML::Node& n, HintSpec* h) const {
  DEVMGR_RETURN_IF_ERROR(ExpectMap(n, "a hint ({numa: [...], preferred: bool})"));
  DEVMGR_RETURN_IF_ERROR(CheckKeys(n, {"numa", "preferred"}, "a hint"));
  if (!n["numa"]) return Error(n, "a hint needs numa (a list of NUMA ids, or null)");
  if (!n["numa"].IsNull()) {
    std::vector<int64_t> ids;
    DEVMGR_RETURN_IF_ERROR(IntList(n["numa"], "numa", &ids));
    std::vector<int> v;
    for (int64_t x : ids) {
      if (x < 0 || x > 63) return Error(n["numa"], "NUMA ids in hints must be 0..63");
      v.push_back(static_cast<int>(x));
    }
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    h->numa = std::move(v);
  }
  if (n["preferred"]) DEVMGR_RETURN_IF_ERROR(Bool(n["preferred"], "preferred", &h->preferred));
  return absl::OkStatus();
}

absl::Status ScenarioReader::ResHints(const YAML::Node& n, const std::string& where,
                                      ResourceHints* out) const {
  DEVMGR_RETURN_IF_ERROR(ExpectMap(n, where + " (resource -> list of hints)"));
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string r;
    DEVMGR_RETURN_IF_ERROR(NonEmptyString(it->first, "resource name", &r));
    // A copy: it->second lives in the iterator's temporary proxy.
    const YAML::Node list = it->second;
    if (list.IsNull()) {
      (*out)[r] = std::nullopt;
      continue;
    }
    DEVMGR_RETURN_IF_ERROR(ExpectSeq(list, "hints"));
    std::vector<HintSpec> hs;
    for (const YAML::Node& h : list) {
      HintSpec x;
      DEVMGR_RETURN_IF_ERROR(Hint(h, &x));
      hs.push_back(std::move(x));
    }
    (*out)[r] = std::move(hs);
  }
  return absl::OkStatus();
}

}  // namespace devmgr::scenario
