// PluginProcess: one device-plugin binary started and supervised by devmgr,
// optionally inside a private mount namespace where the emulator's
// directories are bind-mounted over the paths real plugins hard-code
// (/var/lib/kubelet/device-plugins, /var/lib/kubelet/plugins_registry,
// /var/lib/kubelet/plugins, /var/run/cdi and /etc/cdi).
#ifndef DEVMGR_NODE_PLUGIN_PROCESS_H_
#define DEVMGR_NODE_PLUGIN_PROCESS_H_

#include <sys/types.h>

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/bind_paths.h"

namespace devmgr::node {

// The kubelet's hard-coded directories, which --private-mount replaces.
inline constexpr char kKubeletRoot[] = "/var/lib/kubelet";
inline constexpr char kDevicePluginPath[] = "/var/lib/kubelet/device-plugins";
inline constexpr char kPluginsRegistryPath[] = "/var/lib/kubelet/plugins_registry";
// Where DRA drivers keep their DRA sockets (the kubelet's plugins directory).
inline constexpr char kPluginsPath[] = "/var/lib/kubelet/plugins";
// The CDI spec directories container runtimes read, where drivers write.
inline constexpr char kCdiDynamicPath[] = "/var/run/cdi";
inline constexpr char kCdiStaticPath[] = "/etc/cdi";

struct PluginProcessOptions {
  // Run with /bin/sh -c (exec'ed directly when it is a simple command), so
  // quoting and $VARS work.
  std::string command;
  // Extra environment (added to devmgr's own).
  std::map<std::string, std::string> env;
  // Working directory; empty: devmgr's.
  std::string working_dir;
  // Bind plugin_dir, when set, over /var/lib/kubelet/device-plugins (and registry_dir,
  // when set, over /var/lib/kubelet/plugins_registry; plugins_dir over
  // /var/lib/kubelet/plugins; cdi_dir over /var/run/cdi and /etc/cdi) in a
  // private mount namespace. The host's /var/lib/kubelet, /run and /etc are
  // never written: a target missing on the host is made on a tmpfs that
  // covers its parent inside the namespace (see PluginProcess::Start).
  bool private_mount = false;
  std::string plugin_dir;
  std::string registry_dir;
  std::string plugins_dir;
  std::string cdi_dir;
  // More binds (host path, path inside), applied after the above.
  std::vector<std::pair<std::string, std::string>> extra_binds;
  // Prefix for the plugin's stderr lines copied to devmgr's stderr; empty:
  // do not copy (they are still kept for StderrTail).
  std::string log_prefix;
};

// Thread-safe. The destructor stops the process.
class PluginProcess {
 public:
  explicit PluginProcess(PluginProcessOptions opts);
  ~PluginProcess();
  PluginProcess(const PluginProcess&) = delete;
  PluginProcess& operator=(const PluginProcess&) = delete;

  // Forks and execs. Fails (FailedPrecondition, with what is needed) when
  // the private mount namespace cannot be set up, or when fork fails.
  // REQUIRES: not running.
  absl::Status Start();
  // SIGTERM, then SIGKILL after `grace`; reaps. Idempotent.
  void Stop(absl::Duration grace = absl::Seconds(5));
  // Sends a signal (SIGSTOP, SIGCONT, SIGKILL, ...). No-op when not running.
  void Signal(int sig);
  // Waits up to `timeout` for the process to exit. True if it has exited.
  bool WaitExit(absl::Duration timeout);

  bool running() const;
  pid_t pid() const;
  // Exit status as a shell shows it (code, or 128+signal); nullopt while
  // running or never started.
  std::optional<int> exit_code() const;
  // The last `n` lines the process wrote to stderr (and stdout).
  std::vector<std::string> OutputTail(size_t n) const;
  const PluginProcessOptions& options() const { return opts_; }

 private:
  void ReaderLoop(int fd);
  void ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const PluginProcessOptions opts_;

  mutable absl::Mutex mu_;
  pid_t pid_ ABSL_GUARDED_BY(mu_) = -1;
  bool exited_ ABSL_GUARDED_BY(mu_) = true;
  std::optional<int> exit_code_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> tail_ ABSL_GUARDED_BY(mu_);
  // The output reader saw EOF (every writer closed the pipe).
  bool reader_done_ ABSL_GUARDED_BY(mu_) = true;
  std::thread reader_;
};

// The directories bound in the private mount namespace of `opts`, in the
// order they are mounted (the kubelet's ones, then extra_binds); empty
// without private_mount. A path a plugin gives from inside is the host's
// HostPathOf(path, PrivateMountBinds(opts)).
std::vector<BindPath> PrivateMountBinds(const PluginProcessOptions& opts);

// Checks, without side effects on the host, whether a private mount
// namespace can be created here (root, or unprivileged user namespaces).
// Returns an explanation of what is needed when it cannot.
absl::Status CheckPrivateMountSupported();

}  // namespace devmgr::node

#endif  // DEVMGR_NODE_PLUGIN_PROCESS_H_
