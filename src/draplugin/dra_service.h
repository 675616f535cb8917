// DraService<Api>: the DRAPlugin gRPC service of one API version (Api is the
// generated package namespace, k8s::io::kubelet::pkg::apis::dra::v1 or
// ::v1beta1; their messages have the same shape). Thin: request -> ClaimRefs,
// one DriverCore call, answer <- results.
#ifndef DEVMGR_DRAPLUGIN_DRA_SERVICE_H_
#define DEVMGR_DRAPLUGIN_DRA_SERVICE_H_

#include <map>
#include <string>
#include <vector>

#include "common/logging.h"
#include "draplugin/call_log.h"
#include "draplugin/driver_core.h"

namespace devmgr::draplugin {

// Thread-safe. `core` and `log` must outlive the service; `version` ("v1",
// "v1beta1") names the service in the call log.
template <typename Service, typename PrepareReq, typename PrepareResp, typename UnprepareReq,
          typename UnprepareResp>
class DraService final : public Service {
 public:
  DraService(DriverCore* core, CallLog* log, std::string version)
      : core_(core), log_(log), version_(std::move(version)) {}

  grpc::Status NodePrepareResources(grpc::ServerContext*, const PrepareReq* req,
                                    PrepareResp* resp) override {
    DM_VINFO(2, "Received RPC", {"method", "NodePrepareResources"});
    const std::vector<ClaimRef> claims = Claims(*req);
    std::map<std::string, std::string> errors;
    for (auto& [uid, result] : core_->Prepare(claims)) {
      errors[uid] = result.error;
      auto& out = (*resp->mutable_claims())[uid];
      out.set_error(result.error);
      for (const PreparedDevice& d : result.devices) {
        auto* dev = out.add_devices();
        for (const std::string& r : d.request_names) dev->add_request_names(r);
        dev->set_pool_name(d.pool_name);
        dev->set_device_name(d.device_name);
        for (const std::string& id : d.cdi_device_ids) dev->add_cdi_device_ids(id);
      }
    }
    log_->Record("NodePrepareResources", version_, claims, errors);
    return grpc::Status::OK;
  }

  grpc::Status NodeUnprepareResources(grpc::ServerContext*, const UnprepareReq* req,
                                      UnprepareResp* resp) override {
    DM_VINFO(2, "Received RPC", {"method", "NodeUnprepareResources"});
    const std::vector<ClaimRef> claims = Claims(*req);
    const std::map<std::string, std::string> errors = core_->Unprepare(claims);
    for (const auto& [uid, error] : errors) (*resp->mutable_claims())[uid].set_error(error);
    log_->Record("NodeUnprepareResources", version_, claims, errors);
    return grpc::Status::OK;
  }

 private:
  template <typename Req>
  static std::vector<ClaimRef> Claims(const Req& req) {
    std::vector<ClaimRef> out;
    for (const auto& c : req.claims()) out.push_back(ClaimRef{c.namespace_(), c.uid(), c.name()});
    return out;
  }

  DriverCore* const core_;
  CallLog* const log_;
  const std::string version_;
};

}  // namespace devmgr::draplugin

#endif  // DEVMGR_DRAPLUGIN_DRA_SERVICE_H_
