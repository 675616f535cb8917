#include "dra/driver_batches.h"

#include <utility>

namespace devmgr::dra {
namespace {

// The batches with their clients, or the first lookup failure.
absl::StatusOr<std::vector<std::pair<DriverBatch, std::shared_ptr<DraClient>>>> WithClients(
    const ClientLookup& lookup, const std::vector<ClaimDrivers>& claims) {
  std::vector<std::pair<DriverBatch, std::shared_ptr<DraClient>>> out;
  for (DriverBatch& b : BatchPerDriver(claims)) {
    absl::StatusOr<std::shared_ptr<DraClient>> client = lookup(b.driver);
    if (!client.ok()) return client.status();
    out.emplace_back(std::move(b), *std::move(client));
  }
  return out;
}

}  // namespace

std::vector<DriverBatch> BatchPerDriver(const std::vector<ClaimDrivers>& claims) {
  std::vector<DriverBatch> out;
  std::map<std::string, size_t> index;
  for (const ClaimDrivers& c : claims) {
    for (const std::string& driver : c.drivers) {
      auto [it, added] = index.emplace(driver, out.size());
      if (added) out.push_back(DriverBatch{driver, {}});
      out[it->second].claims.push_back(c.claim);
    }
  }
  return out;
}

absl::StatusOr<PreparedPerDriver> PrepareResources(const ClientLookup& lookup,
                                                   const std::vector<ClaimDrivers>& claims) {
  auto batches = WithClients(lookup, claims);
  if (!batches.ok()) return batches.status();
  PreparedPerDriver out;
  for (const auto& [batch, client] : *batches) {
    absl::StatusOr<PreparedClaims> prepared = client->NodePrepareResources(batch.claims);
    if (!prepared.ok()) return prepared.status();
    out[batch.driver] = *std::move(prepared);
  }
  return out;
}

absl::Status UnprepareResources(const ClientLookup& lookup,
                                const std::vector<ClaimDrivers>& claims) {
  auto batches = WithClients(lookup, claims);
  if (!batches.ok()) return batches.status();
  for (const auto& [batch, client] : *batches) {
    if (absl::Status s = client->NodeUnprepareResources(batch.claims); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace devmgr::dra
