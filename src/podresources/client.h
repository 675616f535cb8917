// A PodResources v1 client over a unix socket, for `devmgr podresources`
// and tests. It talks to devmgr or to a real kubelet's
// /var/lib/kubelet/pod-resources/kubelet.sock alike.
#ifndef DEVMGR_PODRESOURCES_CLIENT_H_
#define DEVMGR_PODRESOURCES_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "podresources/v1/api.pb.h"

namespace devmgr::podresources {

// The kubelet's own client's receive limit (16 MiB).
inline constexpr int kClientMaxRecvMsgSize = 16 * 1024 * 1024;
inline constexpr char kDefaultKubeletSocket[] = "/var/lib/kubelet/pod-resources/kubelet.sock";

// Thread-safe. Errors carry the server's code and Go's client-side text
// ("rpc error: code = Unknown desc = ...").
class Client {
 public:
  explicit Client(const std::string& socket_path, absl::Duration timeout = absl::Seconds(10));
  ~Client();

  absl::StatusOr<v1::ListPodResourcesResponse> List();
  absl::StatusOr<v1::AllocatableResourcesResponse> GetAllocatableResources();
  absl::StatusOr<v1::GetPodResourcesResponse> Get(const std::string& pod_namespace,
                                                  const std::string& pod_name);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace devmgr::podresources

#endif  // DEVMGR_PODRESOURCES_CLIENT_H_
