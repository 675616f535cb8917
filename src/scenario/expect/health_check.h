// Parsing and checking a container's `allocated_resources_status`
// expectation (docs/scenarios.md, docs/resource-health.md):
//
//   containers:
//     app:
//       allocated_resources_status:
//         example.com/gpu: {gpu-0: Unhealthy, gpu-1: Healthy}
//
// or `allocated_resources_status: none` for a container without the field.
#ifndef DEVMGR_SCENARIO_EXPECT_HEALTH_CHECK_H_
#define DEVMGR_SCENARIO_EXPECT_HEALTH_CHECK_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "manager/resource_health.h"
#include "scenario/expect/expectations.h"
#include "scenario/expect/health_expect.h"
#include "scenario/format/scenario_reader.h"
#include "scenario/report/result.h"
#include "yaml-cpp/yaml.h"

namespace devmgr::scenario {

// pod UID -> its containers' statuses (node::Node::PodResourceStatuses()).
using PodResourceStatuses = std::map<std::string, std::vector<manager::ContainerResourceStatus>>;

// Parses the value of `allocated_resources_status`.
absl::Status ParseResourceHealthExpect(const ScenarioReader& r, const YAML::Node& n,
                                       ResourceHealthExpect* out);

// The container's allocatedResourcesStatus as observed (nullopt: none).
std::optional<std::vector<manager::ResourceHealthStatus>> ObservedResourceStatus(
    const PodResourceStatuses& all, const std::string& pod_uid, const std::string& container);

// "none", or "[example.com/gpu: gpu-0=Unhealthy gpu-1=Healthy]" (sorted).
std::string ResourceStatusString(
    const std::optional<std::vector<manager::ResourceHealthStatus>>& s);

// Appends a failure (at `loc`, named `where` + ".allocated_resources_status")
// when `got` does not match `want`.
void CheckResourceHealth(const Location& loc, const std::string& where,
                         const ResourceHealthExpect& want,
                         const std::optional<std::vector<manager::ResourceHealthStatus>>& got,
                         std::vector<Failure>* out);

// For the step's report: one note per container whose
// allocated_resources_status was expected, with what was observed
// ("pod train container main: allocatedResourcesStatus [...]").
void ResourceHealthNotes(const Expectations& e, const Observed& o, std::vector<std::string>* notes);

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_EXPECT_HEALTH_CHECK_H_
