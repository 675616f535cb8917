// Reading scenario files (docs/scenarios.md). Every problem is an error
// with the form
//   <file>:<line>:<col>: <message>
// e.g. "basic.yaml:7:5: unknown key 'devcies' in a sample_plugin config
// (did you mean 'devices'?)". Wrong types, unknown keys and unknown steps are
// never ignored. Inline pods and sample-plugin configs are validated here
// too (with positions in the scenario file), and pod files are read.
//
// scenario_parser.cc, scenario_reader.cc, expect_parser.cc and the files of
// the expectation kinds (expect_kind.h) are the module's only yaml-cpp users.
#ifndef DEVMGR_SCENARIO_FORMAT_SCENARIO_PARSER_H_
#define DEVMGR_SCENARIO_FORMAT_SCENARIO_PARSER_H_

#include <string>

#include "absl/status/statusor.h"
#include "scenario/format/scenario.h"

namespace devmgr::scenario {

// Parses a scenario. `filename` is used in errors and Scenario::file; pod
// files named by `admit` steps resolve relative to its directory.
// InvalidArgument on any error.
absl::StatusOr<Scenario> ParseScenario(const std::string& text, const std::string& filename);

// Reads and parses `path`. NotFound when it cannot be read.
absl::StatusOr<Scenario> LoadScenario(const std::string& path);

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_FORMAT_SCENARIO_PARSER_H_
