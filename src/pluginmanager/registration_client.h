// RegistrationClient: the plugin manager's view of a plugin's registration
// socket (the pluginregistration v1 Registration service), so that the plugin
// manager holds no gRPC; transport/registration_client.h implements it.
#ifndef DEVMGR_PLUGINMANAGER_REGISTRATION_CLIENT_H_
#define DEVMGR_PLUGINMANAGER_REGISTRATION_CLIENT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace devmgr::pluginmanager {

// The GetInfo reply (pluginregistration PluginInfo).
struct RegistrationInfo {
  std::string type;
  std::string name;
  std::string endpoint;
  std::vector<std::string> supported_versions;
};

class RegistrationClient {
 public:
  virtual ~RegistrationClient() = default;
  // Errors carry Go's text of the RPC error ("rpc error: code = ... desc = ...").
  virtual absl::StatusOr<RegistrationInfo> GetInfo(absl::Duration timeout) = 0;
  virtual absl::Status NotifyRegistrationStatus(bool registered, const std::string& error,
                                                absl::Duration timeout) = 0;
};

// Connects to a registration socket, waiting up to `timeout` for it to be
// ready, or until `cancelled()` turns true. The error's message is what the
// operation reports after "dial failed at socket <path>, err: ".
using RegistrationDialer = std::function<absl::StatusOr<std::unique_ptr<RegistrationClient>>(
    const std::string& socket_path, absl::Duration timeout,
    const std::function<bool()>& cancelled)>;

}  // namespace devmgr::pluginmanager

#endif  // DEVMGR_PLUGINMANAGER_REGISTRATION_CLIENT_H_
