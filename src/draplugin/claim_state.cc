#include "draplugin/claim_state.h"

#include "common/fs.h"
#include "nlohmann/json.hpp"

namespace devmgr::draplugin {
namespace {

using nlohmann::json;

json Encode(const PreparedClaims& claims) {
  json out = {{"version", kStateVersion}, {"claims", json::object()}};
  for (const auto& [uid, c] : claims) {
    json devices = json::array();
    for (const PreparedDevice& d : c.devices) {
      devices.push_back({{"requestNames", d.request_names},
                         {"poolName", d.pool_name},
                         {"deviceName", d.device_name},
                         {"cdiDeviceIDs", d.cdi_device_ids}});
    }
    out["claims"][uid] = {{"namespace", c.namespace_}, {"name", c.name}, {"devices", devices}};
  }
  return out;
}

}  // namespace

absl::StatusOr<PreparedClaims> LoadClaimState(const std::string& path) {
  absl::StatusOr<std::string> bytes = fs::Default()->ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  json j = json::parse(*bytes, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("version", 0) != kStateVersion || !j.contains("claims") ||
      !j["claims"].is_object()) {
    return absl::DataLossError(path + ": not a version 1 state file");
  }
  PreparedClaims claims;
  try {
    for (const auto& [uid, c] : j["claims"].items()) {
      PreparedClaim pc;
      pc.namespace_ = c.at("namespace").get<std::string>();
      pc.name = c.at("name").get<std::string>();
      for (const json& d : c.at("devices")) {
        PreparedDevice pd;
        pd.request_names = d.at("requestNames").get<std::vector<std::string>>();
        pd.pool_name = d.at("poolName").get<std::string>();
        pd.device_name = d.at("deviceName").get<std::string>();
        pd.cdi_device_ids = d.at("cdiDeviceIDs").get<std::vector<std::string>>();
        pc.devices.push_back(std::move(pd));
      }
      claims[uid] = std::move(pc);
    }
  } catch (const json::exception& e) {
    return absl::DataLossError(path + ": " + e.what());
  }
  return claims;
}

absl::Status SaveClaimState(const std::string& path, const PreparedClaims& claims) {
  fs::AtomicWriteOptions o;
  o.fsync = false;
  o.mode = 0644;
  return fs::WriteFileAtomically(*fs::Default(), path, Encode(claims).dump(2) + "\n", o);
}

}  // namespace devmgr::draplugin
