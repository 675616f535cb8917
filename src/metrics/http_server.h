// Serves the metrics text over HTTP (cpp-httplib): GET /metrics and
// GET /healthz, like the kubelet's read-only endpoints, on a loopback
// address by default.
#ifndef DEVMGR_METRICS_HTTP_SERVER_H_
#define DEVMGR_METRICS_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

namespace devmgr::metrics {

// devmgr's default --metrics-address: loopback, and not one of the
// kubelet's own ports (10248 healthz, 10250, 10255 read-only).
inline constexpr char kDefaultMetricsAddress[] = "127.0.0.1:10265";

// "host:port" or "[v6]:port" -> (host, port). InvalidArgument otherwise.
absl::Status ParseHostPort(const std::string& address, std::string* host, int* port);

// Thread-safe Start/Stop. Stop is idempotent and run by the destructor.
class HttpServer {
 public:
  // `render` produces the /metrics body on every request.
  explicit HttpServer(std::function<std::string()> render);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds `address` (port 0: any free port) and serves on a thread. Returns
  // the bound "host:port". Unavailable when the address cannot be bound.
  absl::StatusOr<std::string> Start(const std::string& address);
  void Stop();

  // Before Start: also serve GET /readyz, 200 with the reason while `ready`
  // returns true, 503 with it otherwise (a Kubernetes readiness probe).
  void SetReadiness(std::function<bool(std::string*)> ready);

 private:
  std::function<std::string()> render_;
  std::function<bool(std::string*)> ready_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace devmgr::metrics

#endif  // DEVMGR_METRICS_HTTP_SERVER_H_
