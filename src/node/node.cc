#include "node/node.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "common/logging.h"

namespace devmgr::node {

Node::Node(NodeOptions opts) : opts_(std::move(opts)) {
  manager::ManagerOptions mo;
  mo.plugin_dir = opts_.plugin_dir;
  mo.profile = opts_.profile;
  mo.clock = opts_.clock;
  mo.fsync = opts_.fsync;
  mo.numa_nodes = opts_.numa_nodes;
  mo.on_allocate_rpc = opts_.on_allocate_rpc;
  manager_ = manager::NewManager(std::move(mo));
}

Node::~Node() { Stop(); }

absl::Status Node::Start(manager::StartOptions start) {
  absl::MutexLock l(&mu_);
  if (started_) return absl::FailedPreconditionError("node already started");
  transport::RegistrationServerOptions so;
  so.plugin_dir = opts_.plugin_dir;
  so.profile = opts_.profile;
  so.max_recv_msg_size = opts_.max_recv_msg_size;
  so.dial_timeout = opts_.dial_timeout;
  so.plugins_registry_dir = opts_.registry_dir;
  auto server = transport::RegistrationServer::Create(std::move(so), manager_.get());
  if (!server.ok()) return server.status();
  server_ = std::move(*server);
  // ManagerImpl.Start: readCheckpoint first (errors only logged), then
  // server.Start (directory cleanup, listen).
  if (absl::Status s = manager_->Start(std::move(start)); !s.ok()) return s;
  if (absl::Status s = server_->Start(); !s.ok()) {
    manager_->Stop();
    return s;
  }
  started_ = true;
  return absl::OkStatus();
}

void Node::Stop() {
  absl::MutexLock l(&mu_);
  if (!started_) return;
  started_ = false;
  // The kubelet's Stop: disconnect every client (PluginDisconnected), stop
  // the server. The manager's own Stop is idempotent.
  server_->Stop();
  manager_->Stop();
}

NodeResources Node::UpdateNodeStatus() {
  manager::CapacityResult r = manager_->GetCapacity();
  absl::MutexLock l(&mu_);
  node_.Apply(r);
  return node_;
}

NodeResources Node::node_resources() const {
  absl::MutexLock l(&mu_);
  return node_;
}

bool SocketAnswers(const std::string& socket_path) {
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof(addr.sun_path)) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace devmgr::node
