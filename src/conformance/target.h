// The plugin under test, in one of four forms: a command the tester starts
// (--plugin), the in-process reference plugin (tests), an already running
// plugin's socket (--socket) or a plugin that registers a resource with the
// tester's kubelet.sock on its own (--resource).
#ifndef DEVMGR_CONFORMANCE_TARGET_H_
#define DEVMGR_CONFORMANCE_TARGET_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "plugin/config.h"

namespace devmgr::conformance {

class Target {
 public:
  enum class Kind { kProcess, kInProcess, kSocket, kResource };
  virtual ~Target() = default;

  virtual Kind kind() const = 0;
  // One line for reports, e.g. "--plugin 'devmgr sample-plugin ...'".
  virtual std::string Describe() const = 0;
  // True when the tester starts (and can restart) the plugin.
  bool StartedByTester() const { return kind() == Kind::kProcess || kind() == Kind::kInProcess; }
  // True when the plugin registers with the tester's kubelet.sock.
  bool Registers() const { return kind() != Kind::kSocket; }

  // Starts the plugin against the device-plugin directory `dir`. An error
  // is an environment problem (the command cannot run at all).
  virtual absl::Status Start(const std::string& dir) { return absl::OkStatus(); }
  // Asks the plugin to stop (SIGTERM) and waits up to `grace`; then kills
  // it. True when it stopped within the grace period.
  virtual bool Stop(absl::Duration grace) { return true; }
  // True when a started plugin has exited on its own; *code gets the code.
  virtual bool Exited(int* code) const { return false; }
  // The plugin's last output lines (evidence for failures).
  virtual std::vector<std::string> OutputTail(size_t n) const { return {}; }

  // kSocket: the plugin's socket. kResource: the resource name.
  virtual std::string socket_path() const { return ""; }
  virtual std::string resource() const { return ""; }
};

// --plugin CMD: run with /bin/sh -c; DEVMGR_PLUGIN_DIR holds the directory.
// With private_mount the directory is also bind-mounted over
// /var/lib/kubelet/device-plugins in a private mount namespace.
std::unique_ptr<Target> NewProcessTarget(std::string command, bool private_mount);
// The reference plugin in-process (tests). With a call_log_path, every
// instance started appends its call log there (--call-log).
std::unique_ptr<Target> NewInProcessTarget(plugin::Config config, std::string call_log_path = "");
std::unique_ptr<Target> NewSocketTarget(std::string socket_path);
std::unique_ptr<Target> NewResourceTarget(std::string resource);

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_TARGET_H_
