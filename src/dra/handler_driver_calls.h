// HandlerDriverCalls: the DRA manager's port to drivers (dra::DriverCalls)
// over gRPC. A call for a driver goes to the client DraPluginHandler hands
// out for it (the newest connected instance, else the newest), and is made
// with that client's raw calls, so that the manager checks the response
// itself, as the kubelet's does. It lives beside the gRPC client and the
// handler (docs/architecture.md, "No gRPC in the domain"); the manager sees
// only the interface.
#ifndef DEVMGR_DRA_HANDLER_DRIVER_CALLS_H_
#define DEVMGR_DRA_HANDLER_DRIVER_CALLS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dra/dra_client.h"
#include "dra/dra_plugin_handler.h"
#include "dra/driver_calls.h"

namespace devmgr::dra {

// A NodePrepareResources response as the client read it
// (DraClient::CallNodePrepareResources), in the manager's terms.
std::map<std::string, PrepareResult> ToPrepareResults(std::map<std::string, PrepareEntry> entries);

// Thread-safe (the handler and its clients are).
class HandlerDriverCalls final : public DriverCalls {
 public:
  // `handler` (not owned) must outlive this object.
  explicit HandlerDriverCalls(const DraPluginHandler* handler) : handler_(handler) {}

  // No instance of `driver`: FailedPrecondition "DRA driver <d> is not
  // registered" (the driver went between the manager's check and the call).
  absl::StatusOr<std::map<std::string, PrepareResult>> Prepare(
      const std::string& driver, const std::vector<ClaimRef>& claims) override;
  absl::StatusOr<std::map<std::string, std::string>> Unprepare(
      const std::string& driver, const std::vector<ClaimRef>& claims) override;
  bool IsRegistered(const std::string& driver) const override;

 private:
  const DraPluginHandler* const handler_;
};

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_HANDLER_DRIVER_CALLS_H_
