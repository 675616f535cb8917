// Reading scenario YAML: the typed reader with the scenario format's
// wording, plus what both the step parser (scenario_parser.cc) and the
// expectation kinds (expect_reader.h, expect_kind.h) need. Internal to the
// module.
#ifndef DEVMGR_SCENARIO_FORMAT_SCENARIO_READER_H_
#define DEVMGR_SCENARIO_FORMAT_SCENARIO_READER_H_

#include <string>

#include "absl/status/status.h"
#include "scenario/format/scenario.h"
#include "yaml-cpp/yaml.h"
#include "yaml/typed_reader.h"

namespace devmgr::scenario {

using yaml::Keys;

class ScenarioReader : public yaml::TypedReader {
 public:
  // Errors name `file`; durations are exemplified as "500ms, 2s or 5m1s";
  // quoted scalars are strings, never integers or booleans.
  explicit ScenarioReader(std::string file);

  // The position of `n` in the file.
  Location Loc(const YAML::Node& n) const;

  // The plugin declared as `name`, or null.
  static const PluginSpec* FindPlugin(const Scenario& sc, const std::string& name);
  // A plugin name that must be declared in `sc` (with a did-you-mean).
  absl::Status PluginRef(const Scenario& sc, const YAML::Node& n, std::string* out) const;

  // {numa: [ids] | null, preferred: bool}
  absl::Status Hint(const YAML::Node& n, HintSpec* h) const;
  // resource -> [hints] | null
  absl::Status ResHints(const YAML::Node& n, const std::string& where, ResourceHints* out) const;
};

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_FORMAT_SCENARIO_READER_H_
