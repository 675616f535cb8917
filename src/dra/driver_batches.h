// The DRA manager's batching of NodePrepareResources and
// NodeUnprepareResources: one call per driver for all of a pod's claims that
// driver serves (a claim whose allocation names several drivers goes to each
// of them), every driver checked for a registered plugin before any call.
#ifndef DEVMGR_DRA_DRIVER_BATCHES_H_
#define DEVMGR_DRA_DRIVER_BATCHES_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dra/dra_client.h"

namespace devmgr::dra {

// A claim and the drivers of its allocation results (each named once).
struct ClaimDrivers {
  Claim claim;
  std::vector<std::string> drivers;
};

// One call's worth: a driver and its claims.
struct DriverBatch {
  std::string driver;
  std::vector<Claim> claims;

  bool operator==(const DriverBatch&) const = default;
};

// One batch per driver, in the order the drivers first appear in `claims`;
// each batch holds its claims in the order of `claims`. (The kubelet keeps
// the batches in a Go map, so the order of its calls varies: docs/profiles.md,
// "DRA". devmgr's is fixed.)
std::vector<DriverBatch> BatchPerDriver(const std::vector<ClaimDrivers>& claims);

// Finds the client of a driver (DraPluginHandler::GetClient).
using ClientLookup =
    std::function<absl::StatusOr<std::shared_ptr<DraClient>>(const std::string& driver)>;

// Driver -> the devices it prepared, per claim UID.
using PreparedPerDriver = std::map<std::string, PreparedClaims>;

// Looks up every driver's client first (the first failure is returned and no
// call is made), then calls NodePrepareResources once per batch, in batch
// order. Returns the first call's failure as is (DraClient's texts); the
// batches before it stay prepared (the kubelet does not roll them back).
absl::StatusOr<PreparedPerDriver> PrepareResources(const ClientLookup& lookup,
                                                   const std::vector<ClaimDrivers>& claims);

// The same with NodeUnprepareResources.
absl::Status UnprepareResources(const ClientLookup& lookup,
                                const std::vector<ClaimDrivers>& claims);

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_DRIVER_BATCHES_H_
