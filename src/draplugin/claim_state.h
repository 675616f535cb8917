// The driver's prepared claims and the small JSON file that keeps them across
// restarts (<plugin-dir>/<driver>/prepared-claims.json):
//   {"version": 1, "claims": {"<uid>": {"namespace", "name",
//     "devices": [{"requestNames", "poolName", "deviceName", "cdiDeviceIDs"}]}}}
#ifndef DEVMGR_DRAPLUGIN_CLAIM_STATE_H_
#define DEVMGR_DRAPLUGIN_CLAIM_STATE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace devmgr::draplugin {

inline constexpr char kStateFileName[] = "prepared-claims.json";
inline constexpr int kStateVersion = 1;

// One Device of a NodePrepareResources answer.
struct PreparedDevice {
  std::vector<std::string> request_names;
  std::string pool_name;
  std::string device_name;
  std::vector<std::string> cdi_device_ids;

  bool operator==(const PreparedDevice&) const = default;
};

struct PreparedClaim {
  std::string namespace_;
  std::string name;
  std::vector<PreparedDevice> devices;
};

// Claim UID -> what was prepared for it.
using PreparedClaims = std::map<std::string, PreparedClaim>;

// Reads the state file. NotFound when there is none (a fresh driver);
// DataLoss "<path>: ..." when it cannot be decoded or has another version.
absl::StatusOr<PreparedClaims> LoadClaimState(const std::string& path);
// Writes the state file atomically (no fsync: a test instrument).
absl::Status SaveClaimState(const std::string& path, const PreparedClaims& claims);

}  // namespace devmgr::draplugin

#endif  // DEVMGR_DRAPLUGIN_CLAIM_STATE_H_
