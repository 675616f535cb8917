// Reading the `expect:` block of a scenario step (docs/scenarios.md): its
// keys are those of every expectation kind (expect_kind.h), each of which
// reads its own. Internal to the module; used by scenario_parser.cc.
#ifndef DEVMGR_SCENARIO_EXPECT_EXPECT_PARSER_H_
#define DEVMGR_SCENARIO_EXPECT_EXPECT_PARSER_H_

#include "absl/status/status.h"
#include "scenario/format/scenario.h"
#include "scenario/format/scenario_reader.h"
#include "yaml-cpp/yaml.h"

namespace devmgr::scenario {

// Reads expectation block `n` of a step of `sc` (whose plugins are already
// read) into *e. InvalidArgument naming the position of the first problem.
absl::Status ParseExpect(const ScenarioReader& reader, const YAML::Node& n, const Scenario& sc,
                         Expectations* e);

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_EXPECT_EXPECT_PARSER_H_
