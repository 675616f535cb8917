// ResourceSlice validation: each rule's field path and message as the real
// API server (pkg/apis/resource/validation, v1.37.2) reports them.
#include "apiserver/validation.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::apiserver {
namespace {

using nlohmann::json;
using testing::ElementsAre;

// A valid slice as the e2e DRA test driver publishes it.
json ValidSlice() {
  return json::parse(R"({
    "metadata": {"name": "node-1-test-driver.cdi.k8s.io-x2bkq"},
    "spec": {"driver": "test-driver.cdi.k8s.io", "nodeName": "node-1",
             "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
             "devices": [{"name": "device-00"}, {"name": "device-01"}]}})");
}

std::vector<std::string> Messages(const FieldErrors& errs) {
  std::vector<std::string> out;
  for (const FieldError& e : errs) out.push_back(e.Error());
  return out;
}

TEST(ResourceSliceValidationTest, AcceptsTheTestDriversSlice) {
  EXPECT_THAT(Messages(ValidateResourceSlice(ValidSlice(), nullptr)), ElementsAre());
}

TEST(ResourceSliceValidationTest, RequiresDriverAndPoolAndNodeSelection) {
  json s = ValidSlice();
  s["spec"].erase("driver");
  s["spec"]["pool"] = json::object();
  s["spec"].erase("nodeName");
  EXPECT_THAT(
      Messages(ValidateResourceSlice(s, nullptr)),
      ElementsAre("spec.driver: Required value", "spec.pool.name: Required value",
                  "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
                  "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                  "`perDeviceNodeSelection` is required"));
}

TEST(ResourceSliceValidationTest, RejectsInvalidNamesWithTheRealMessages) {
  json s = ValidSlice();
  s["metadata"]["name"] = "Bad_Name";
  s["spec"]["devices"][1]["name"] = "device.01";
  s["spec"]["devices"][0]["name"] = "Device-00";
  EXPECT_THAT(
      Messages(ValidateResourceSlice(s, nullptr)),
      ElementsAre(
          "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist "
          "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
          "alphanumeric character (e.g. 'example.com', regex used for validation is "
          "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
          "spec.devices[0].name: Invalid value: \"Device-00\": a lowercase RFC 1123 label must "
          "consist of lower case alphanumeric characters or '-', and must start and end with an "
          "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
          "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
          "spec.devices[1].name: Invalid value: \"device.01\": must not contain dots"));
}

TEST(ResourceSliceValidationTest, RejectsDuplicateDevices) {
  json s = ValidSlice();
  s["spec"]["devices"][1]["name"] = "device-00";
  EXPECT_THAT(Messages(ValidateResourceSlice(s, nullptr)),
              ElementsAre("spec.devices[1]: Duplicate value: \"device-00\""));
}

TEST(ResourceSliceValidationTest, LimitsDevicesPerSlice) {
  json s = ValidSlice();
  s["spec"]["devices"] = json::array();
  for (int i = 0; i < 129; ++i) s["spec"]["devices"].push_back({{"name", "d" + std::to_string(i)}});
  EXPECT_THAT(Messages(ValidateResourceSlice(s, nullptr)),
              ElementsAre("spec.devices: Too many: 129: must have at most 128 items"));
  // A list attribute lowers the limit to 64.
  json& devices = s["spec"]["devices"];
  devices.erase(devices.begin() + 65, devices.end());
  s["spec"]["devices"][0]["attributes"] = {{"ids", {{"ints", {1, 2}}}}};
  EXPECT_THAT(Messages(ValidateResourceSlice(s, nullptr)),
              ElementsAre("spec.devices: Too many: 65: must have at most 64 items"));
}

TEST(ResourceSliceValidationTest, ChecksAttributeKeysAndValues) {
  json s = ValidSlice();
  s["spec"]["devices"][0]["attributes"] = {
      {"1st", {{"string", "x"}}},
      {"example.com/model", {{"int", 1}, {"string", "a"}}},
      {"driverVersion", {{"version", "1.0"}}},
      {"empty", json::object()},
  };
  EXPECT_THAT(
      Messages(ValidateResourceSlice(s, nullptr)),
      ElementsAre(
          "spec.devices[0].attributes: Invalid value: \"1st\": a valid C identifier must start "
          "with alphabetic character or '_', followed by a string of alphanumeric characters or "
          "'_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
          "'[A-Za-z_][A-Za-z0-9_]*')",
          "spec.devices[0].attributes[driverVersion].version: Invalid value: \"1.0\": must be a "
          "string compatible with semver.org spec 2.0.0",
          "spec.devices[0].attributes[empty]: Invalid value: \"\": exactly one value must be "
          "specified",
          "spec.devices[0].attributes[example.com/model]: Invalid value: "
          "{\"int\":1,\"string\":\"a\"}: exactly one value must be specified"));
}

TEST(ResourceSliceValidationTest, PoolNameAndGenerationRules) {
  json s = ValidSlice();
  s["spec"]["pool"] = {{"name", "a/B"}, {"generation", -1}, {"resourceSliceCount", 1}};
  auto msgs = Messages(ValidateResourceSlice(s, nullptr));
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].substr(0, 56), "spec.pool.name: Invalid value: \"B\": a lowercase RFC 1123");
  EXPECT_EQ(msgs[1],
            "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero");
}

TEST(ResourceSliceValidationTest, NodeSelectionIsExactlyOne) {
  json s = ValidSlice();
  s["spec"]["allNodes"] = true;
  EXPECT_THAT(Messages(ValidateResourceSlice(s, nullptr)),
              ElementsAre("spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of "
                          "`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
                          "required, but multiple fields are set"));
}

TEST(ResourceSliceValidationTest, UpdateKeepsDriverPoolAndNodeImmutable) {
  const json old = ValidSlice();
  json s = old;
  s["spec"]["driver"] = "other.example.com";
  s["spec"]["pool"]["name"] = "other";
  EXPECT_THAT(Messages(ValidateResourceSlice(s, &old)),
              ElementsAre("spec.pool.name: Invalid value: \"other\": field is immutable",
                          "spec.driver: Invalid value: \"other.example.com\": field is immutable"));
}

TEST(ObjectMetaValidationTest, NameOrGenerateNameIsRequired) {
  EXPECT_THAT(Messages(ValidateObjectMeta(json::parse(R"({"metadata": {}})"))),
              ElementsAre("metadata.name: Required value: name or generateName is required"));
}

}  // namespace
}  // namespace devmgr::apiserver
