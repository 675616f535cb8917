// RegistryService: the pluginregistration.Registration service that the
// sample plugin serves in plugins-registry mode, on a socket inside the
// kubelet's plugins_registry directory. GetInfo describes the device plugin
// (type DevicePlugin, the resource name, the absolute path of its socket,
// supported version v1beta1); NotifyRegistrationStatus reports the outcome.
#ifndef DEVMGR_PLUGIN_REGISTRY_SERVICE_H_
#define DEVMGR_PLUGIN_REGISTRY_SERVICE_H_

#include <atomic>
#include <functional>
#include <string>

#include "plugin/plugin_core.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace devmgr::plugin {

// Thread-safe. `core` must outlive the service.
class RegistryService final : public pluginregistration::Registration::Service {
 public:
  // `endpoint` is the absolute path of the device-plugin socket. `on_notify`
  // is called (outside any lock) after each NotifyRegistrationStatus.
  RegistryService(PluginCore* core, std::string endpoint, std::function<void()> on_notify)
      : core_(core), endpoint_(std::move(endpoint)), on_notify_(std::move(on_notify)) {}

  void BeginShutdown();

  grpc::Status GetInfo(grpc::ServerContext* ctx, const pluginregistration::InfoRequest* req,
                       pluginregistration::PluginInfo* resp) override;
  grpc::Status NotifyRegistrationStatus(
      grpc::ServerContext* ctx, const pluginregistration::RegistrationStatus* req,
      pluginregistration::RegistrationStatusResponse* resp) override;

 private:
  PluginCore* const core_;
  const std::string endpoint_;
  const std::function<void()> on_notify_;
  std::atomic<bool> shutting_down_{false};
};

}  // namespace devmgr::plugin

#endif  // DEVMGR_PLUGIN_REGISTRY_SERVICE_H_
