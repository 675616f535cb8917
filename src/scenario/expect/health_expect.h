// The `allocated_resources_status` expectation of a container (device health
// in pod status, KEP-4680; docs/resource-health.md) as plain data. Kept apart
// from health_check.h so that scenario.h can hold it.
#ifndef DEVMGR_SCENARIO_EXPECT_HEALTH_EXPECT_H_
#define DEVMGR_SCENARIO_EXPECT_HEALTH_EXPECT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace devmgr::scenario {

// A string matched exactly, or by an ECMAScript regex search (a
// StringMatcher, which scenario.h defines after including this file).
struct HealthText {
  std::string value;
  bool regex = false;
};

// One device of an entry in the list form: its resource ID, health and
// (optionally) message.
struct HealthEntryExpect {
  HealthText id;
  std::string health;  // "Healthy" | "Unhealthy" | "Unknown" (DRA entries)
  std::optional<HealthText> message;
};

struct ResourceHealthExpect {
  // `none`: the container has no allocatedResourcesStatus at all (the gate
  // is off, or it holds no device-plugin device).
  bool none = false;
  // resource name -> device ID -> "Healthy" | "Unhealthy": exactly these
  // entries and devices, in any order.
  std::map<std::string, std::map<std::string, std::string>> resources;
  // The list form, for IDs not known in advance (a DRA claim's devices,
  // `claim:<name>[/<request>]`, have a CDI ID with the claim's UID): entry
  // name -> exactly these devices, each matched to a distinct one, any
  // order. An entry is in `resources` or here, not both.
  std::map<std::string, std::vector<HealthEntryExpect>> entries;
};

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_EXPECT_HEALTH_EXPECT_H_
