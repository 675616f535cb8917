// The DRA driver under test (`devmgr conformance --dra`): a command the
// tester starts for each session with the directories, node name and
// kubeconfig of its emulated kubelet and API endpoint, or (tests) a driver
// run in process.
#ifndef DEVMGR_CONFORMANCE_DRA_TARGET_H_
#define DEVMGR_CONFORMANCE_DRA_TARGET_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/bind_paths.h"

namespace devmgr::conformance {

// What a DRA driver needs to run against the tester: the kubelet's
// directories under one root, the node and the API endpoint.
struct DraEnv {
  std::string root;          // the emulated kubelet's root directory
  std::string registry_dir;  // <root>/plugins_registry
  std::string plugins_dir;   // <root>/plugins
  std::string cdi_dir;       // <root>/cdi
  std::string kubeconfig;    // <root>/kubeconfig, for the embedded API endpoint
  std::string node_name;

  // The environment a driver command gets: KUBECONFIG, DEVMGR_NODE_NAME,
  // DEVMGR_KUBELET_DIR, DEVMGR_REGISTRY_DIR, DEVMGR_PLUGINS_DIR,
  // DEVMGR_CDI_DIR.
  std::map<std::string, std::string> Variables() const;
};

class DraTarget {
 public:
  virtual ~DraTarget() = default;
  // One line for reports.
  virtual std::string Describe() const = 0;
  // Starts the driver. An error is an environment problem (the command
  // cannot run at all, the in-process driver cannot serve).
  virtual absl::Status Start(const DraEnv& env) = 0;
  // SIGTERM, up to `grace`, then kill. True when it stopped in time.
  virtual bool Stop(absl::Duration grace) = 0;
  // True when a started driver has exited on its own; *code gets the code.
  virtual bool Exited(int* code) const { return false; }
  // The driver's last output lines (evidence for failures).
  virtual std::vector<std::string> OutputTail(size_t n) const { return {}; }
  // Where the driver sees the session's directories, when not at their own
  // paths (a private mount namespace): the kubelet dials an endpoint the
  // driver registers from inside at its host path.
  virtual std::vector<BindPath> Binds(const DraEnv& env) const { return {}; }
};

// A driver command, run with /bin/sh -c and DraEnv::Variables(). With
// `private_mount`, in a private mount namespace where the session's
// plugins_registry, plugins and CDI directories are bound over
// /var/lib/kubelet/plugins_registry, /var/lib/kubelet/plugins, /var/run/cdi
// and /etc/cdi, for drivers that hard-code them.
std::unique_ptr<DraTarget> NewDraProcessTarget(std::string command, bool private_mount = false);

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_DRA_TARGET_H_
