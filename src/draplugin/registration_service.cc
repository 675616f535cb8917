#include "draplugin/registration_service.h"

#include "common/logging.h"

namespace devmgr::draplugin {

grpc::Status RegistrationService::GetInfo(grpc::ServerContext*,
                                          const pluginregistration::InfoRequest*,
                                          pluginregistration::PluginInfo* resp) {
  DM_VINFO(2, "Received RPC", {"method", "GetInfo"});
  resp->set_type(type_);
  resp->set_name(driver_);
  resp->set_endpoint(endpoint_);
  for (const std::string& v : versions_) resp->add_supported_versions(v);
  return grpc::Status::OK;
}

grpc::Status RegistrationService::NotifyRegistrationStatus(
    grpc::ServerContext*, const pluginregistration::RegistrationStatus* req,
    pluginregistration::RegistrationStatusResponse*) {
  if (req->plugin_registered()) {
    DM_INFO("Registered DRA driver with the kubelet", {"driver", driver_});
  } else {
    DM_ERROR(req->error(), "Registration failed", {"driver", driver_});
  }
  absl::MutexLock l(&mu_);
  outcome_ = RegistrationOutcome{req->plugin_registered(), req->error()};
  return grpc::Status::OK;
}

std::optional<RegistrationOutcome> RegistrationService::WaitForOutcome(
    absl::Duration timeout) const {
  absl::MutexLock l(&mu_);
  auto has = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return outcome_.has_value(); };
  mu_.AwaitWithTimeout(absl::Condition(&has), timeout);
  return outcome_;
}

}  // namespace devmgr::draplugin
