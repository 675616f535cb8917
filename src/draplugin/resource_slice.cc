#include "draplugin/resource_slice.h"

#include <algorithm>

namespace devmgr::draplugin {
namespace {

using nlohmann::json;

json AttributeJson(const Attribute& a) {
  if (a.type == "int") return {{"int", std::stoll(a.value)}};
  if (a.type == "bool") return {{"bool", a.value == "true"}};
  return {{a.type, a.value}};
}

}  // namespace

json BuildResourceSlice(const Config& config, const std::string& node, int64_t generation) {
  json devices = json::array();
  for (const DeviceConfig& d : config.devices) {
    json device = {{"name", d.name}};
    if (!d.attributes.empty()) {
      json attrs = json::object();
      for (const auto& [k, a] : d.attributes) attrs[k] = AttributeJson(a);
      device["attributes"] = std::move(attrs);
    }
    devices.push_back(std::move(device));
  }
  if (config.misbehave.invalid_slice && !devices.empty()) {
    // Upper case and '_' are not allowed in a device name (a DNS label).
    devices[0]["name"] = "Invalid_" + devices[0]["name"].get<std::string>();
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"generateName", node + "-" + config.driver + "-"}}},
          {"spec",
           {{"driver", config.driver},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", generation}, {"resourceSliceCount", 1}}},
            {"devices", std::move(devices)}}}};
}

absl::StatusOr<json> PublishResourceSlice(const ApiClient& api, const Config& config,
                                          const std::string& node) {
  absl::StatusOr<std::vector<json>> old = api.ListSlices(config.driver, node);
  if (!old.ok()) return old.status();
  int64_t generation = 0;
  for (const json& s : *old) {
    const json pool = s.value("spec", json::object()).value("pool", json::object());
    generation = std::max<int64_t>(generation, pool.value("generation", int64_t{0}));
    absl::Status deleted =
        api.DeleteSlice(s.value("metadata", json::object()).value("name", std::string()));
    if (!deleted.ok()) return deleted;
  }
  return api.CreateSlice(BuildResourceSlice(config, node, generation + 1));
}

}  // namespace devmgr::draplugin
