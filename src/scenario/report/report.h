// Reports of a `devmgr run`: a JUnit XML document (one testsuite per
// scenario file, one testcase per scenario and kubelet version) and a JSON
// document whose schema is documented in docs/scenarios.md ("JSON report").
#ifndef DEVMGR_SCENARIO_REPORT_REPORT_H_
#define DEVMGR_SCENARIO_REPORT_REPORT_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "scenario/report/result.h"

namespace devmgr::scenario {

// The JUnit XML text (the de-facto Jenkins/Ant schema: <testsuites> with
// <testsuite name tests failures errors skipped time>, <testcase classname
// name time> holding <failure message type>, <error>, <skipped/>, and
// <system-out>/<system-err> with the step log and evidence).
std::string JUnitXml(const std::vector<ScenarioResult>& results);

// The JSON report (schema version 1).
nlohmann::ordered_json ResultsJson(const std::vector<ScenarioResult>& results);

// The human-readable step log of one scenario (as printed while running),
// also used for JUnit's <system-out>.
std::string StepLog(const ScenarioResult& r);

// "3 passed, 1 failed, 0 errors, 2 skipped".
std::string Summary(const std::vector<ScenarioResult>& results);

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_REPORT_REPORT_H_
