// The plugin manager's RegistrationClient over gRPC: the pluginregistration v1
// Registration service on a plugin's registration socket, dialled as the
// kubelet dials plugin sockets.
#ifndef DEVMGR_TRANSPORT_REGISTRATION_CLIENT_H_
#define DEVMGR_TRANSPORT_REGISTRATION_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "pluginmanager/registration_client.h"

namespace devmgr::transport {

// A pluginmanager::RegistrationDialer: waits up to `timeout` for the socket to
// accept a connection (or until `cancelled()`); errors read as the kubelet's
// "failed to dial socket <path>, err: <Go context error>". RPC errors of the
// client carry Go's gRPC error text.
absl::StatusOr<std::unique_ptr<pluginmanager::RegistrationClient>> DialRegistration(
    const std::string& socket_path, absl::Duration timeout, const std::function<bool()>& cancelled);

}  // namespace devmgr::transport

#endif  // DEVMGR_TRANSPORT_REGISTRATION_CLIENT_H_
