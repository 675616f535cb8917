// The injected API faults of a scenario run and the reaction of the client
// each one hit: found in the API endpoint's request record, shown in the
// text, JUnit and JSON reports (docs/scenarios.md, "Injected API faults").
// The report lists what happened after a fault, nothing more: the client's
// next requests, with how long after the fault each came.
#ifndef DEVMGR_SCENARIO_REPORT_API_FAULTS_H_
#define DEVMGR_SCENARIO_REPORT_API_FAULTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "apiserver/server.h"
#include "nlohmann/json.hpp"
#include "scenario/report/result.h"

namespace devmgr::scenario {

// Every request of `requests` (oldest first) a fault fired on, with the
// requests that followed it from the same User-Agent. `step_of` maps a
// request's seq to the step it was made in.
std::vector<ApiFaultFiring> FindApiFaultFirings(
    const std::vector<apiserver::RequestRecord>& requests,
    const std::function<int(uint64_t)>& step_of);

// The report's lines for one firing (the first unindented, the rest
// indented by two spaces).
std::vector<std::string> ApiFaultLines(const ApiFaultFiring& f);

// The JSON report's object for one firing.
nlohmann::ordered_json ApiFaultJson(const ApiFaultFiring& f);

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_REPORT_API_FAULTS_H_
