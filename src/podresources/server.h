// The PodResources v1 gRPC server (service v1.PodResourcesLister) on a unix
// socket, as the kubelet serves it on <root-dir>/pod-resources/kubelet.sock:
// rate-limited (ResourceExhausted "rejected by rate limit"), counting the
// kubelet_pod_resources_endpoint_* metrics, answering from a Lister.
#ifndef DEVMGR_PODRESOURCES_SERVER_H_
#define DEVMGR_PODRESOURCES_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "metrics/kubelet_metrics.h"
#include "node/node.h"
#include "node/pod_manager.h"
#include "podresources/lister.h"
#include "podresources/options.h"
#include "podresources/rate_limiter.h"

namespace grpc {
class Server;
}

namespace devmgr::podresources {

struct ServerOptions {
  // Absolute socket path (< 108 bytes). Its directory is created (0750).
  std::string socket_path;
  Options api;
  // nullptr: no metrics. Must outlive the server.
  metrics::KubeletMetrics* metrics = nullptr;
  double qps = kDefaultQps;
  int burst = kDefaultBurst;
};

// Start/Stop are not concurrent with each other; the RPCs are thread-safe.
// Stop is idempotent and run by the destructor.
class Server {
 public:
  // `node` and `pods` must outlive the server.
  Server(node::Node* node, node::PodManager* pods, ServerOptions opts);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Creates the directory, removes a stale socket file, listens.
  absl::Status Start();
  // Stops serving (in-flight calls finish) and removes the socket file.
  void Stop();

  Lister& lister() { return lister_; }
  const std::string& socket_path() const { return opts_.socket_path; }

 private:
  class Service;
  const ServerOptions opts_;
  Lister lister_;
  RateLimiter limiter_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace devmgr::podresources

#endif  // DEVMGR_PODRESOURCES_SERVER_H_
