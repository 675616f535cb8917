// DeviceSets::Replace and the version the checkpoint's cached rendering of
// a resource's healthy IDs is keyed on: it moves whenever the healthy set
// (or the order it is listed in) may have changed, and only then.
#include "manager/device_sets.h"

#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"
#include "gtest/gtest.h"

namespace devmgr::manager {
namespace {

google::protobuf::RepeatedPtrField<v1beta1::Device> List(
    const std::vector<std::pair<std::string, std::string>>& devs) {
  google::protobuf::RepeatedPtrField<v1beta1::Device> out;
  for (const auto& [id, health] : devs) {
    v1beta1::Device* d = out.Add();
    d->set_id(id);
    d->set_health(health);
  }
  return out;
}

TEST(DeviceSetsVersion, MovesOnlyWhenTheHealthySetMayHaveChanged) {
  DeviceSets s;
  const std::string r = "vendor.com/gpu";
  s.Replace(r, List({{"a", "Healthy"}, {"b", "Healthy"}, {"c", "Unhealthy"}}));
  const uint64_t v1 = s.Version(r);
  EXPECT_NE(v1, 0u);
  const std::vector<std::string> ids = s.HealthyIds(r);

  // The same list again: same version, same IDs in the same order.
  s.Replace(r, List({{"a", "Healthy"}, {"b", "Healthy"}, {"c", "Unhealthy"}}));
  EXPECT_EQ(s.Version(r), v1);
  EXPECT_EQ(s.HealthyIds(r), ids);
  // Another order of the same devices: the sets are the same.
  s.Replace(r, List({{"c", "Unhealthy"}, {"b", "Healthy"}, {"a", "Healthy"}}));
  EXPECT_EQ(s.Version(r), v1);

  // A health flip, a new device (even an unhealthy one), a vanished device.
  s.Replace(r, List({{"a", "Unhealthy"}, {"b", "Healthy"}, {"c", "Unhealthy"}}));
  const uint64_t v2 = s.Version(r);
  EXPECT_GT(v2, v1);
  EXPECT_EQ(s.HealthyIds(r), std::vector<std::string>{"b"});
  s.Replace(r, List({{"a", "Unhealthy"}, {"b", "Healthy"}, {"c", "Unhealthy"}, {"d", "Bad"}}));
  const uint64_t v3 = s.Version(r);
  EXPECT_GT(v3, v2);
  s.Replace(r, List({{"a", "Unhealthy"}, {"b", "Healthy"}, {"c", "Unhealthy"}}));
  EXPECT_GT(s.Version(r), v3);
  EXPECT_EQ(s.HealthyCount(r), 1u);
  EXPECT_EQ(s.UnhealthyCount(r), 2u);

  // Healthy again after a duplicate that is also unhealthy: in both sets.
  const uint64_t v4 = s.Version(r);
  s.Replace(r, List({{"a", "Healthy"}, {"a", "Unhealthy"}, {"b", "Healthy"}, {"c", "Unhealthy"}}));
  EXPECT_GT(s.Version(r), v4);
  EXPECT_TRUE(s.IsHealthy(r, "a"));

  // After EraseHealthy, a Replace brings the healthy key back: a new version.
  const uint64_t v5 = s.Version(r);
  s.EraseHealthy(r);
  EXPECT_GT(s.Version(r), v5);
  const uint64_t v6 = s.Version(r);
  s.Replace(r, List({{"a", "Healthy"}, {"a", "Unhealthy"}, {"b", "Healthy"}, {"c", "Unhealthy"}}));
  EXPECT_GT(s.Version(r), v6);
}

}  // namespace
}  // namespace devmgr::manager
