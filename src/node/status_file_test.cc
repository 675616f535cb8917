// The status file's device-health fields (docs/observability.md).
#include "node/status_file.h"

#include "gtest/gtest.h"

namespace devmgr::node {
namespace {

StatusInput OnePod(bool gate) {
  StatusInput in;
  in.kubelet_version = "1.36";
  in.resource_health_status = gate;
  PodRecord r;
  r.pod.uid = "u1";
  r.pod.name = "train";
  r.pod.namespace_ = "default";
  r.phase = pod::Phase::kRunning;
  for (const char* c : {"setup", "main", "log"}) {
    ContainerRecord cr;
    cr.name = c;
    r.containers.push_back(cr);
  }
  in.pods.push_back(r);
  if (gate) {
    manager::ContainerResourceStatus main{
        "main", std::vector<manager::ResourceHealthStatus>{
                    {"example.com/gpu", {{"gpu-0", "Healthy"}, {"gpu-1", "Unhealthy"}}}}};
    in.pod_statuses["u1"] = {main, {"log", std::nullopt}};
  }
  return in;
}

TEST(StatusFileTest, AllocatedResourcesStatusAsInThePodApi) {
  const nlohmann::ordered_json doc = BuildStatus(OnePod(true));
  EXPECT_EQ(doc["resourceHealthStatus"], true);
  const auto& cs = doc["pods"][0]["containers"];
  EXPECT_FALSE(cs[0].contains("allocatedResourcesStatus"));  // init container
  EXPECT_EQ(cs[1]["allocatedResourcesStatus"].dump(),
            R"([{"name":"example.com/gpu","resources":[{"resourceID":"gpu-0","health":"Healthy"},)"
            R"({"resourceID":"gpu-1","health":"Unhealthy"}]}])");
  EXPECT_FALSE(cs[2].contains("allocatedResourcesStatus"));  // no devices
}

// DRA claims' entries carry the driver's message when it gave one (1.36+).
TEST(StatusFileTest, DraEntriesShowTheMessage) {
  StatusInput in = OnePod(true);
  in.pod_statuses["u1"][0].allocated_resources_status->push_back(
      {"claim:gpus/a",
       {{"gpu.example.com/gpu=gpu-0", "Unhealthy", "ECC errors"}, {"x/p/d", "Unknown", {}}}});
  const nlohmann::ordered_json doc = BuildStatus(in);
  EXPECT_EQ(doc["pods"][0]["containers"][1]["allocatedResourcesStatus"][1].dump(),
            R"({"name":"claim:gpus/a","resources":[{"resourceID":"gpu.example.com/gpu=gpu-0",)"
            R"("health":"Unhealthy","message":"ECC errors"},{"resourceID":"x/p/d",)"
            R"("health":"Unknown"}]})");
}

TEST(StatusFileTest, GateOffNoField) {
  const nlohmann::ordered_json doc = BuildStatus(OnePod(false));
  EXPECT_EQ(doc["resourceHealthStatus"], false);
  for (const auto& c : doc["pods"][0]["containers"]) {
    EXPECT_FALSE(c.contains("allocatedResourcesStatus"));
  }
}

}  // namespace
}  // namespace devmgr::node
