// DevicePluginService: the sample plugin's v1beta1.DevicePlugin gRPC service
// (sync API). One instance per gRPC server; the plugin state lives in the
// shared PluginCore. Each method logs the call, applies the configured fault
// and answers from the config and the device state.
#ifndef DEVMGR_PLUGIN_DEVICE_PLUGIN_SERVICE_H_
#define DEVMGR_PLUGIN_DEVICE_PLUGIN_SERVICE_H_

#include <atomic>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "plugin/plugin_core.h"

namespace devmgr::plugin {

// Thread-safe. `core` must outlive the service.
class DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  explicit DevicePluginService(PluginCore* core) : core_(core) {}

  // Makes streams and hanging calls return promptly, before Server::Shutdown.
  void BeginShutdown();

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* ctx, const v1beta1::Empty* req,
                                      v1beta1::DevicePluginOptions* resp) override;
  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty* req,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext* ctx,
                                      const v1beta1::PreferredAllocationRequest* req,
                                      v1beta1::PreferredAllocationResponse* resp) override;
  grpc::Status Allocate(grpc::ServerContext* ctx, const v1beta1::AllocateRequest* req,
                        v1beta1::AllocateResponse* resp) override;
  grpc::Status PreStartContainer(grpc::ServerContext* ctx,
                                 const v1beta1::PreStartContainerRequest* req,
                                 v1beta1::PreStartContainerResponse* resp) override;

 private:
  // Applies exit, delay and hang. Returns true, with *status set, when the
  // call must end now (interrupted by shutdown or cancellation).
  bool ApplyBlockingFaults(const FaultConfig* f, grpc::ServerContext* ctx, grpc::Status* status);
  bool Interrupted(grpc::ServerContext* ctx) const;

  PluginCore* const core_;
  std::atomic<bool> shutting_down_{false};
};

// A grpc::Status from a configured error.
grpc::Status ToGrpcStatus(const RpcError& e);

}  // namespace devmgr::plugin

#endif  // DEVMGR_PLUGIN_DEVICE_PLUGIN_SERVICE_H_
