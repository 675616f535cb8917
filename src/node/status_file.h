// The `serve --status-file` document: a JSON snapshot of what the emulated
// kubelet knows, rewritten atomically (temp file + rename) on every change.
// Its shape is documented in docs/serve.md ("The status file").
#ifndef DEVMGR_NODE_STATUS_FILE_H_
#define DEVMGR_NODE_STATUS_FILE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "manager/manager.h"
#include "nlohmann/json.hpp"
#include "node/pod_manager.h"
#include "process/supervisor.h"

namespace devmgr::node {

// What the node-status setter would put on the Node object for extended
// resources: capacity (removed resources kept at 0, as the kubelet does) and
// allocatable (the device plugin's value, else a copy of capacity).
struct NodeResources {
  std::map<std::string, int64_t> capacity;
  std::map<std::string, int64_t> allocatable;
  // Applies one GetCapacity result as nodestatus.MachineInfo does: the
  // entries it names are set, the others stay as they are on the Node
  // (a resource no device plugin reports any more keeps its last value).
  void Apply(const manager::CapacityResult& r);
  // The kubelet's reconcileExtendedResource when it resets: every extended
  // resource already on the Node gets capacity and allocatable 0.
  void ZeroExtended();
};

// ShouldResetExtendedResourceCapacity of the device manager, asked when a
// starting kubelet registers a Node that already exists: true only when
// the device-plugin directory exists and lists no entry at all (no
// checkpoint and no socket; names starting with "." are the checkpoint
// store's temporary files and do not count). A missing or unreadable
// directory answers false. The kubelet registers the Node before its device
// manager starts (and cleans the directory of sockets), so stale sockets of
// running plugins count too.
bool ShouldResetExtendedResources(const std::string& plugin_dir);

// The Node object a previous `serve --status-file` run left in `path` (its
// "node" section), which a restarted serve takes over as the kubelet does
// the Node in the API server. nullopt: no file, or no readable section.
std::optional<NodeResources> ReadStatusFileNode(const std::string& path);

struct StatusInput {
  std::string kubelet_version;
  std::string plugin_dir;
  std::string registry_dir;
  NodeResources node;
  std::vector<manager::ResourceStatus> resources;
  std::vector<PluginProcessStatus> plugins;
  std::vector<PodRecord> pods;
  std::vector<manager::PodAllocation> allocations;
  // Device health in pod status: the ResourceHealthStatus gate, and pod UID
  // -> its regular containers' statuses (Node::PodResourceStatuses()).
  bool resource_health_status = false;
  std::map<std::string, std::vector<manager::ContainerResourceStatus>> pod_statuses;
  absl::Time now;
};

// Builds the document. Device IDs that are not valid UTF-8 are shown with
// U+FFFD replacements in "id" and exactly in "idBase64".
nlohmann::ordered_json BuildStatus(const StatusInput& in);

}  // namespace devmgr::node

#endif  // DEVMGR_NODE_STATUS_FILE_H_
