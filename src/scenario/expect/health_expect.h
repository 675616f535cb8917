// The `allocated_resources_status` expectation of a container (device health
// in pod status, KEP-4680; docs/resource-health.md) as plain data. Kept apart
// from health_check.h so that scenario.h can hold it.
#ifndef DEVMGR_SCENARIO_EXPECT_HEALTH_EXPECT_H_
#define DEVMGR_SCENARIO_EXPECT_HEALTH_EXPECT_H_

#include <map>
#include <string>

namespace devmgr::scenario {

struct ResourceHealthExpect {
  // `none`: the container has no allocatedResourcesStatus at all (the gate
  // is off, or it holds no device-plugin device).
  bool none = false;
  // resource name -> device ID -> "Healthy" | "Unhealthy": exactly these
  // entries and devices, in any order.
  std::map<std::string, std::map<std::string, std::string>> resources;
};

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_EXPECT_HEALTH_EXPECT_H_
