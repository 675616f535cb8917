// Scenario expectations on the PodResources v1 API (`expect.pod_resources`):
// the answers of List, GetAllocatableResources and Get as plain data, and
// the checks against them. The runner asks the same in-process Lister the
// node's PodResources socket answers from, so what is checked is what a
// monitoring agent on the socket would see.
#ifndef DEVMGR_SCENARIO_EXPECT_POD_RESOURCES_CHECK_H_
#define DEVMGR_SCENARIO_EXPECT_POD_RESOURCES_CHECK_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "podresources/v1/api.pb.h"
#include "scenario/format/scenario.h"
#include "scenario/report/result.h"

namespace devmgr::scenario {

// resource -> device id -> NUMA nodes of its topology (empty: none given).
using PrDevices = std::map<std::string, std::map<std::string, std::set<int64_t>>>;

struct PrContainerObs {
  std::string name;
  PrDevices devices;
};

struct PrPodObs {
  std::string namespace_;
  std::string name;
  std::vector<PrContainerObs> containers;
};

struct PrGetObs {
  std::optional<PrPodObs> pod;  // nullopt: the call failed
  std::string error;
};

struct PodResourcesObs {
  std::vector<PrPodObs> list;  // in the answer's order
  PrDevices allocatable;
  std::map<std::string, PrGetObs> get;  // by the expectation's ref
};

// Answers as plain data (ContainerDevices entries of one device merged).
PrPodObs FromProto(const v1::PodResources& p);
PodResourcesObs FromProto(const v1::ListPodResourcesResponse& list,
                          const v1::AllocatableResourcesResponse& allocatable);

// A Get ref ("ns/name", or "name" in namespace default) split in two.
std::pair<std::string, std::string> SplitGetRef(const std::string& ref);

// Appends a Failure for every expectation that does not hold (`captures`:
// the values `$name` references resolve to).
void CheckPodResources(const PodResourcesExpect& e, const PodResourcesObs& o,
                       std::vector<Failure>* out,
                       const std::map<std::string, std::vector<std::string>>& captures = {});

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_EXPECT_POD_RESOURCES_CHECK_H_
