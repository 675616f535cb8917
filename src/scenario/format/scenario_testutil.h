// Shared by the scenario tests: expectations written as scenario YAML.
#ifndef DEVMGR_SCENARIO_FORMAT_SCENARIO_TESTUTIL_H_
#define DEVMGR_SCENARIO_FORMAT_SCENARIO_TESTUTIL_H_

#include <string>

#include "absl/status/statusor.h"
#include "scenario/format/scenario.h"
#include "scenario/format/scenario_parser.h"

namespace devmgr::scenario::testutil {

// A scenario file `file` with one plugin (gpu, example.com/gpu) and one
// check step whose `expect:` block is `expect_yaml` (indented by 6 spaces;
// its first line is line 7 of the file).
inline absl::StatusOr<Scenario> ParseCheckStep(const std::string& expect_yaml,
                                               const std::string& file) {
  const std::string text = R"(plugins:
  - name: gpu
    sample_plugin: {resource: example.com/gpu}
steps:
  - check:
    expect:
)" + expect_yaml;
  return ParseScenario(text, file);
}

}  // namespace devmgr::scenario::testutil

#endif  // DEVMGR_SCENARIO_FORMAT_SCENARIO_TESTUTIL_H_
