#include "podresources/dynamic_resources.h"

#include <string>

namespace devmgr::podresources {
namespace {

void AppendClaimResources(const std::string& driver, const dra::DriverState& state,
                          google::protobuf::RepeatedPtrField<v1::ClaimResource>* out) {
  if (!state.devices) return;
  // The driver's CDI IDs so far: each device's entry repeats the earlier
  // devices' IDs before its own, as the kubelet's does.
  std::vector<std::string> so_far;
  for (const dra::Device& d : *state.devices) {
    if (d.cdi_device_ids) {
      so_far.insert(so_far.end(), d.cdi_device_ids->begin(), d.cdi_device_ids->end());
    }
    v1::ClaimResource* r = out->Add();
    for (const std::string& id : so_far) r->add_cdi_devices()->set_name(id);
    r->set_driver_name(driver);
    r->set_pool_name(d.pool_name);
    r->set_device_name(d.device_name);
    if (d.share_id) r->set_share_id(*d.share_id);
  }
}

}  // namespace

void AppendDynamicResources(const std::vector<dra::ClaimInfoState>& claims,
                            google::protobuf::RepeatedPtrField<v1::DynamicResource>* out) {
  for (const dra::ClaimInfoState& claim : claims) {
    v1::DynamicResource* dr = out->Add();
    dr->set_claim_name(claim.claim_name);
    dr->set_claim_namespace(claim.namespace_);
    if (!claim.driver_state) continue;
    for (const auto& [driver, state] : *claim.driver_state) {
      AppendClaimResources(driver, state, dr->mutable_claim_resources());
    }
  }
}

}  // namespace devmgr::podresources
