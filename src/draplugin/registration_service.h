// RegistrationService: the pluginregistration.Registration service a DRA
// driver serves on <registry-dir>/<driver>-reg.sock for the kubelet's plugin
// watcher. GetInfo: type "DRAPlugin", the driver name, the absolute path of
// its DRA socket and the gRPC services it advertises ("v1.DRAPlugin", ...);
// NotifyRegistrationStatus records the kubelet's verdict.
#ifndef DEVMGR_DRAPLUGIN_REGISTRATION_SERVICE_H_
#define DEVMGR_DRAPLUGIN_REGISTRATION_SERVICE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace devmgr::draplugin {

inline constexpr char kDraPluginType[] = "DRAPlugin";

// The last NotifyRegistrationStatus.
struct RegistrationOutcome {
  bool registered = false;
  std::string error;
};

// Thread-safe.
class RegistrationService final : public pluginregistration::Registration::Service {
 public:
  // `type`: what GetInfo answers ("" = kDraPluginType).
  RegistrationService(std::string driver, std::string endpoint, std::vector<std::string> versions,
                      std::string type = "")
      : driver_(std::move(driver)),
        endpoint_(std::move(endpoint)),
        versions_(std::move(versions)),
        type_(type.empty() ? kDraPluginType : std::move(type)) {}

  grpc::Status GetInfo(grpc::ServerContext* ctx, const pluginregistration::InfoRequest* req,
                       pluginregistration::PluginInfo* resp) override;
  grpc::Status NotifyRegistrationStatus(
      grpc::ServerContext* ctx, const pluginregistration::RegistrationStatus* req,
      pluginregistration::RegistrationStatusResponse* resp) override ABSL_LOCKS_EXCLUDED(mu_);

  // Waits up to `timeout` for a NotifyRegistrationStatus; nullopt on timeout.
  std::optional<RegistrationOutcome> WaitForOutcome(absl::Duration timeout) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::string driver_;
  const std::string endpoint_;
  const std::vector<std::string> versions_;
  const std::string type_;

  mutable absl::Mutex mu_;
  std::optional<RegistrationOutcome> outcome_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::draplugin

#endif  // DEVMGR_DRAPLUGIN_REGISTRATION_SERVICE_H_
