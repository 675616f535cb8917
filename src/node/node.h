// Node: one emulated kubelet's device-manager side, put together: the
// manager (domain) and its registration server (transport), started and
// stopped in the kubelet's order, plus the node-status view of capacity.
#ifndef DEVMGR_NODE_NODE_H_
#define DEVMGR_NODE_NODE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/profile.h"
#include "manager/manager.h"
#include "node/status_file.h"
#include "transport/registration_server.h"

namespace devmgr::node {

struct NodeOptions {
  // Absolute device-plugin directory.
  std::string plugin_dir;
  // plugins_registry directory for probe-mode plugins; empty: off.
  std::string registry_dir;
  Profile profile = DefaultProfile();
  // nullptr: the real clock. Must outlive the node.
  Clock* clock = nullptr;
  bool fsync = true;
  int max_recv_msg_size = transport::kDefaultMaxRecvMsgSize;
  absl::Duration dial_timeout = transport::kDefaultDialTimeout;
  std::vector<int> numa_nodes = {0};
  // Passed to the manager (ManagerOptions::on_allocate_rpc): the alloc
  // duration metric.
  std::function<void(const std::string& resource, absl::Duration)> on_allocate_rpc;
};

// Thread-safe. Stop is idempotent and run by the destructor.
class Node {
 public:
  explicit Node(NodeOptions opts);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // The kubelet's ManagerImpl.Start: read the checkpoint and restore state,
  // then start the registration server (clean the directory, listen).
  absl::Status Start(manager::StartOptions start = {});
  // Disconnects every plugin and stops serving. The checkpoint is kept.
  void Stop();

  manager::Manager& manager() { return *manager_; }
  transport::RegistrationServer* server() { return server_.get(); }
  const NodeOptions& options() const { return opts_; }

  // One pass of the kubelet's node-status setter: GetCapacity (which
  // expires resources whose endpoint's grace period is over) applied to the
  // node's extended resources.
  NodeResources UpdateNodeStatus();
  NodeResources node_resources() const;

 private:
  const NodeOptions opts_;
  std::unique_ptr<manager::Manager> manager_;
  std::unique_ptr<transport::RegistrationServer> server_;
  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  NodeResources node_ ABSL_GUARDED_BY(mu_);
};

// True when something accepts connections on `socket_path` (e.g. a live
// kubelet's kubelet.sock).
bool SocketAnswers(const std::string& socket_path);

}  // namespace devmgr::node

#endif  // DEVMGR_NODE_NODE_H_
