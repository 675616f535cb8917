// ApiClient: the driver's few calls to the Kubernetes API server, over plain
// HTTP with JSON bodies (devmgr's embedded endpoint in tests): GET a
// ResourceClaim, LIST/DELETE/POST its node's ResourceSlices. The only file of
// the driver that includes cpp-httplib.
#ifndef DEVMGR_DRAPLUGIN_API_CLIENT_H_
#define DEVMGR_DRAPLUGIN_API_CLIENT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace devmgr::draplugin {

// Thread-safe (each call opens its own connection).
class ApiClient {
 public:
  // `server` is "http://host:port" (a kubeconfig's cluster server); every
  // request says `user_agent` in its User-Agent header (as client-go sends
  // its program's name), or cpp-httplib's default when it is empty.
  explicit ApiClient(std::string server, std::string user_agent = "")
      : server_(std::move(server)), user_agent_(std::move(user_agent)) {}

  // GET /apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}.
  // NotFound on 404; Unavailable when the server cannot be reached; other
  // non-2xx answers are Internal "GET PATH: HTTP <code>: <message>".
  absl::StatusOr<nlohmann::json> GetClaim(const std::string& ns, const std::string& name) const;
  // The ResourceSlices of `driver` on `node` (a LIST with a fieldSelector).
  absl::StatusOr<std::vector<nlohmann::json>> ListSlices(const std::string& driver,
                                                         const std::string& node) const;
  // DELETE of the slice `name`; a 404 is OK.
  absl::Status DeleteSlice(const std::string& name) const;
  // POST of `slice`; returns the stored object. A 422 is InvalidArgument
  // with the server's message.
  absl::StatusOr<nlohmann::json> CreateSlice(const nlohmann::json& slice) const;

 private:
  const std::string server_;
  const std::string user_agent_;
};

}  // namespace devmgr::draplugin

#endif  // DEVMGR_DRAPLUGIN_API_CLIENT_H_
