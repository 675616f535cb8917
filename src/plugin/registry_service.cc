#include "plugin/registry_service.h"

#include "common/logging.h"
#include "plugin/device_plugin_service.h"

namespace devmgr::plugin {

void RegistryService::BeginShutdown() {
  shutting_down_ = true;
  core_->devices().WakeAll();
}

grpc::Status RegistryService::GetInfo(grpc::ServerContext* ctx,
                                      const pluginregistration::InfoRequest*,
                                      pluginregistration::PluginInfo* resp) {
  CallRecord r;
  r.time = absl::Now();
  r.kind = "received";
  r.method = "GetInfo";
  r.args = nlohmann::ordered_json::object();
  core_->call_log().Add(std::move(r));
  DM_VINFO(2, "Received RPC", {"method", "GetInfo"});

  const FaultConfig* f = core_->CountCall(Rpc::kRegister);
  auto interrupted = [&] {
    return shutting_down_.load() || core_->stopping() || ctx->IsCancelled();
  };
  if (f != nullptr) {
    if (f->exit_code) {
      core_->RequestExit(*f->exit_code);
      core_->devices().SleepUntil(absl::InfiniteFuture(), interrupted);
      return grpc::Status(grpc::StatusCode::CANCELLED, "sample plugin is stopping");
    }
    if (f->delay > absl::ZeroDuration() &&
        !core_->devices().SleepUntil(absl::Now() + f->delay, interrupted)) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "sample plugin is stopping");
    }
    if (f->hang) {
      core_->devices().SleepUntil(absl::InfiniteFuture(), interrupted);
      return grpc::Status(grpc::StatusCode::CANCELLED, "sample plugin is stopping");
    }
    if (f->error) return ToGrpcStatus(*f->error);
    if (f->empty) return grpc::Status::OK;
  }
  const RegisterOverrides o =
      f != nullptr ? core_->config().register_overrides : RegisterOverrides{};
  resp->set_type(o.type.value_or("DevicePlugin"));
  resp->set_name(o.resource.value_or(core_->config().resource));
  resp->set_endpoint(o.endpoint.value_or(endpoint_));
  resp->add_supported_versions(o.version.value_or("v1beta1"));
  return grpc::Status::OK;
}

grpc::Status RegistryService::NotifyRegistrationStatus(
    grpc::ServerContext*, const pluginregistration::RegistrationStatus* req,
    pluginregistration::RegistrationStatusResponse*) {
  CallRecord r;
  r.time = absl::Now();
  r.kind = "received";
  r.method = "NotifyRegistrationStatus";
  r.args = {{"plugin_registered", req->plugin_registered()}, {"error", req->error()}};
  core_->RecordRegistration(req->plugin_registered(), req->error());
  core_->call_log().Add(std::move(r));
  if (req->plugin_registered()) {
    DM_INFO("Registered device plugin with the kubelet", {"resource", core_->config().resource});
  } else {
    DM_ERROR(req->error(), "Registration failed", {"resource", core_->config().resource});
  }
  if (on_notify_) on_notify_();
  return grpc::Status::OK;
}

}  // namespace devmgr::plugin
