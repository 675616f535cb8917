// perf_bench's emulated node: a node and a plugin over real unix sockets,
// the reference plugin in a process of its own or in this one, or a real
// plugin binary (P1, P4).
#ifndef DEVMGR_BENCH_PERF_NODE_ENV_H_
#define DEVMGR_BENCH_PERF_NODE_ENV_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/fs.h"
#include "node/node.h"
#include "node/pod_manager.h"
#include "perf/harness.h"
#include "plugin/sample_plugin.h"
#include "process/plugin_process.h"

namespace perf_bench {

inline constexpr char kResource[] = "bench.example.com/gpu";

// The reference plugin's configuration: `devices` devices GPU-0.., with or
// without GetPreferredAllocation.
std::string PluginYaml(int devices, bool preferred);

// The real filesystem, timing each checkpoint write's file operations: from
// the temp file's creation to the end of the rename (the store's write
// minus its directory check).
class TimingFs : public devmgr::fs::Filesystem {
 public:
  absl::Status Mkdir(const std::string& path, mode_t mode) override {
    return real_->Mkdir(path, mode);
  }
  absl::StatusOr<bool> IsDirectory(const std::string& path) override {
    return real_->IsDirectory(path);
  }
  absl::StatusOr<std::unique_ptr<devmgr::fs::WritableFile>> NewTempFile(
      const std::string& dir, const std::string& prefix, std::string* path) override {
    start_ = Clock::now();
    return real_->NewTempFile(dir, prefix, path);
  }
  absl::Status Chmod(const std::string& path, mode_t mode) override {
    return real_->Chmod(path, mode);
  }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    absl::Status s = real_->Rename(from, to);
    last_us_.store(SecondsSince(start_) * 1e6);
    return s;
  }
  absl::Status Remove(const std::string& path) override { return real_->Remove(path); }
  absl::Status SyncDir(const std::string& dir) override { return real_->SyncDir(dir); }
  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    return real_->ReadFile(path);
  }
  absl::StatusOr<std::vector<devmgr::fs::DirEntry>> ListDir(const std::string& dir) override {
    return real_->ListDir(dir);
  }
  // The last write's file operations, in microseconds.
  double last_us() const { return last_us_.load(); }

 private:
  devmgr::fs::Filesystem* real_ = devmgr::fs::Default();
  Clock::time_point start_;  // the manager writes one checkpoint at a time
  std::atomic<double> last_us_{0};
};

// A real plugin binary that NodeEnv starts instead of the reference plugin:
// the kubernetes e2e sample device plugin, which hard-codes
// /var/lib/kubelet/device-plugins (so it runs in a private mount namespace,
// with the node's directory bound there) and creates /tmp/<device id> in
// Allocate (a directory of the run is bound over /tmp).
struct PeerPlugin {
  std::string binary;
  std::string resource = "example.com/resource";
  std::string device = "Dev-1";  // the device a bare Allocate asks for
};

struct EnvOptions {
  bool fsync = false;
  int devices = 8;  // the reference plugin's
  bool preferred = false;
  // The devmgr binary: when set, the reference plugin runs in a process of
  // its own (`devmgr sample-plugin`), as every plugin does on a node; when
  // empty, inside this process, where its gRPC server shares the node's
  // pollers and threads.
  std::string devmgr;
  // When set, this plugin instead of the reference plugin.
  const PeerPlugin* peer = nullptr;
};

class NodeEnv {
 public:
  NodeEnv(const std::string& tmp_root, const EnvOptions& eo);
  ~NodeEnv();

  devmgr::node::Node& node() { return *node_; }
  devmgr::node::PodManager& pods() { return *pods_; }
  const std::string& dir() const { return dir_; }
  // The plugin's endpoint socket (the one it registered).
  std::string plugin_socket() const { return plugin_socket_; }
  const std::string& resource() const { return resource_; }
  const std::string& bare_device() const { return bare_device_; }
  // Whether a plugin process started and registered (always OK in process).
  const absl::Status& plugin_status() const { return plugin_status_; }
  double last_rpc_us() const { return last_rpc_us_.load(); }
  double last_write_us() const { return fs_.last_us(); }

 private:
  TimingFs fs_;  // before node_, which uses it
  std::atomic<double> last_rpc_us_{0};
  std::string dir_;
  Notifications notes_;
  std::unique_ptr<devmgr::node::Node> node_;
  std::unique_ptr<devmgr::node::PodManager> pods_;
  std::unique_ptr<devmgr::plugin::SamplePlugin> plugin_;
  std::unique_ptr<devmgr::node::PluginProcess> process_;
  std::string config_dir_;  // the reference plugin's, when it has a process
  std::string peer_tmp_;    // bound over a peer's /tmp
  absl::Status plugin_status_;
  std::string resource_ = kResource;
  std::string bare_device_ = "GPU-0";
  std::string plugin_socket_;

  // The resource's allocatable count; -1 before the plugin registers.
  int64_t Allocatable() {
    auto cap = node_->manager().GetCapacity();
    auto it = cap.allocatable.find(resource_);
    return it == cap.allocatable.end() ? -1 : it->second;
  }

  // Starts the plugin process and waits until its devices are allocatable
  // (`devices` of them; any number when 0). The caller decides what a
  // failure means: a peer's is reported (not measured) and the rest of the
  // bench goes on; the reference plugin's ends the bench.
  absl::Status StartProcess(const std::string& command, bool private_mount, int devices);
};

}  // namespace perf_bench

#endif  // DEVMGR_BENCH_PERF_NODE_ENV_H_
