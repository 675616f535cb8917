#include "dra/handler_driver_calls.h"

#include <memory>
#include <utility>

#include "dra/dra_client.h"

namespace devmgr::dra {
namespace {

std::vector<Claim> ToClaims(const std::vector<ClaimRef>& refs) {
  std::vector<Claim> out;
  out.reserve(refs.size());
  for (const ClaimRef& r : refs) out.push_back(Claim{r.namespace_, r.uid, r.name});
  return out;
}

PreparedDevice ToPreparedDevice(ResponseDevice d) {
  PreparedDevice out;
  out.request_names = std::move(d.request_names);
  out.pool = std::move(d.pool_name);
  out.device = std::move(d.device_name);
  out.cdi_device_ids = std::move(d.cdi_device_ids);
  out.share_id = std::move(d.share_id);
  return out;
}

absl::StatusOr<std::shared_ptr<DraClient>> ClientFor(const DraPluginHandler& handler,
                                                     const std::string& driver) {
  absl::StatusOr<std::shared_ptr<DraClient>> client = handler.GetClient(driver);
  if (!client.ok()) {
    return absl::FailedPreconditionError(std::string(client.status().message()));
  }
  return client;
}

}  // namespace

std::map<std::string, PrepareResult> ToPrepareResults(std::map<std::string, PrepareEntry> entries) {
  std::map<std::string, PrepareResult> out;
  for (auto& [uid, entry] : entries) {
    PrepareResult& r = out[uid];
    r.error = std::move(entry.error);
    for (ResponseDevice& d : entry.devices) r.devices.push_back(ToPreparedDevice(std::move(d)));
  }
  return out;
}

absl::StatusOr<std::map<std::string, PrepareResult>> HandlerDriverCalls::Prepare(
    const std::string& driver, const std::vector<ClaimRef>& claims) {
  absl::StatusOr<std::shared_ptr<DraClient>> client = ClientFor(*handler_, driver);
  if (!client.ok()) return client.status();
  absl::StatusOr<std::map<std::string, PrepareEntry>> response =
      (*client)->CallNodePrepareResources(ToClaims(claims));
  if (!response.ok()) return response.status();
  return ToPrepareResults(*std::move(response));
}

absl::StatusOr<std::map<std::string, std::string>> HandlerDriverCalls::Unprepare(
    const std::string& driver, const std::vector<ClaimRef>& claims) {
  absl::StatusOr<std::shared_ptr<DraClient>> client = ClientFor(*handler_, driver);
  if (!client.ok()) return client.status();
  return (*client)->CallNodeUnprepareResources(ToClaims(claims));
}

bool HandlerDriverCalls::IsRegistered(const std::string& driver) const {
  return handler_->GetClient(driver).ok();
}

}  // namespace devmgr::dra
