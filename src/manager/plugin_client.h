// The seam between the device manager (domain) and the gRPC transport, as
// the kubelet's plugin/v1beta1/handler.go draws it: the transport dials a
// plugin and hands the manager a PluginClient; the manager implements
// ClientHandler and is told of connections, ListAndWatch responses and
// disconnections. Nothing here includes gRPC.
#ifndef DEVMGR_MANAGER_PLUGIN_CLIENT_H_
#define DEVMGR_MANAGER_PLUGIN_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace devmgr::manager {

// A connected device plugin's unary RPCs. Errors carry the text Go's gRPC
// client would print ("rpc error: code = Unknown desc = boom") so that the
// kubelet's wrapped error texts come out byte for byte.
// Implementations are thread-safe.
class PluginClient {
 public:
  virtual ~PluginClient() = default;
  // The socket path dialled, e.g. /tmp/x/nvidia-gpu.sock.
  virtual const std::string& SocketPath() const = 0;
  // No deadline (the kubelet uses context.Background()).
  virtual absl::StatusOr<v1beta1::DevicePluginOptions> GetDevicePluginOptions() = 0;
  // No deadline.
  virtual absl::StatusOr<v1beta1::AllocateResponse> Allocate(
      const v1beta1::AllocateRequest& req) = 0;
  // No deadline.
  virtual absl::StatusOr<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const v1beta1::PreferredAllocationRequest& req) = 0;
  // `timeout` is 30 s in the kubelet (KubeletPreStartContainerRPCTimeoutInSecs).
  virtual absl::StatusOr<v1beta1::PreStartContainerResponse> PreStartContainer(
      const v1beta1::PreStartContainerRequest& req, absl::Duration timeout) = 0;
};

// Implemented by the manager. Called by the transport from its own threads,
// never with a transport lock held. `client` identifies which connection the
// call is about (the 1.34+ profile keys endpoints per socket; 1.30-1.33 key
// them by resource name only and ignore it for lookups).
class ClientHandler {
 public:
  virtual ~ClientHandler() = default;
  // Called inside the Register RPC after a successful dial. Calls
  // GetDevicePluginOptions; an error fails the registration with the text
  // "failed to get device plugin options: <err>".
  virtual absl::Status PluginConnected(const std::string& resource_name,
                                       std::shared_ptr<PluginClient> client) = 0;
  // Called when the connection's ListAndWatch ends (or the plugin-watcher
  // socket is removed) and the transport decided, as the kubelet does, that
  // the resource is disconnected.
  virtual void PluginDisconnected(const std::string& resource_name, PluginClient* client) = 0;
  // One ListAndWatch response: a full replacement of the device list.
  virtual void PluginListAndWatchReceiver(const std::string& resource_name, PluginClient* client,
                                          const v1beta1::ListAndWatchResponse& resp) = 0;
};

}  // namespace devmgr::manager

#endif  // DEVMGR_MANAGER_PLUGIN_CLIENT_H_
