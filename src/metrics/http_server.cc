#include "metrics/http_server.h"

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <utility>

#include "fmt/format.h"
#include "httplib.h"

namespace devmgr::metrics {

absl::Status ParseHostPort(const std::string& address, std::string* host, int* port) {
  std::string h;
  std::string p;
  if (!address.empty() && address[0] == '[') {
    const size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return absl::InvalidArgumentError(fmt::format("address {}: want [host]:port", address));
    }
    h = address.substr(1, close - 1);
    p = address.substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos) {
      return absl::InvalidArgumentError(fmt::format("address {}: missing port", address));
    }
    h = address.substr(0, colon);
    p = address.substr(colon + 1);
  }
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(p) > 65535) {
    return absl::InvalidArgumentError(fmt::format("address {}: invalid port", address));
  }
  *host = h.empty() ? "0.0.0.0" : h;
  *port = std::stoi(p);
  return absl::OkStatus();
}

HttpServer::HttpServer(std::function<std::string()> render) : render_(std::move(render)) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::SetReadiness(std::function<bool(std::string*)> ready) {
  ready_ = std::move(ready);
}

absl::StatusOr<std::string> HttpServer::Start(const std::string& address) {
  if (server_) return absl::FailedPreconditionError("metrics server already started");
  std::string host;
  int port = 0;
  if (absl::Status s = ParseHostPort(address, &host, &port); !s.ok()) return s;
  auto server = std::make_unique<httplib::Server>();
  // httplib's default sets SO_REUSEPORT, which would let two devmgr
  // processes share a port silently; Go's net.Listen sets SO_REUSEADDR
  // only, so a busy port fails as it does for the kubelet.
  server->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(render_(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain; charset=utf-8");
  });
  if (ready_) {
    server->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
      std::string why;
      const bool ok = ready_(&why);
      res.status = ok ? 200 : 503;
      res.set_content(why + "\n", "text/plain; charset=utf-8");
    });
  }
  if (port == 0) {
    port = server->bind_to_any_port(host);
    if (port < 0) {
      return absl::UnavailableError(fmt::format("cannot listen on {}", address));
    }
  } else if (!server->bind_to_port(host, port)) {
    return absl::UnavailableError(fmt::format("cannot listen on {}", address));
  }
  server_ = std::move(server);
  httplib::Server* s = server_.get();
  auto exited = std::make_shared<std::atomic<bool>>(false);
  thread_ = std::thread([s, exited] {
    s->listen_after_bind();
    *exited = true;
  });
  // stop() is a no-op until the accept loop runs (httplib 0.11 has no
  // wait_until_ready), so Start returns only once it does: a start-up wait
  // of microseconds, with no event to await.
  while (!s->is_running() && !*exited) std::this_thread::sleep_for(std::chrono::microseconds(100));
  const bool v6 = host.find(':') != std::string::npos;
  return v6 ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

void HttpServer::Stop() {
  if (!server_) return;
  server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

}  // namespace devmgr::metrics
