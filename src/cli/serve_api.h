// devmgr serve's embedded API endpoint (docs/api-server.md): its flags, and
// starting it with the node object and a kubeconfig for the plugins.
#ifndef DEVMGR_CLI_SERVE_API_H_
#define DEVMGR_CLI_SERVE_API_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "apiserver/server.h"
#include "nlohmann/json.hpp"
#include "node/node.h"

namespace devmgr::cli {

struct ServeApiOptions {
  std::string listen = apiserver::kDefaultApiListen;  // "off": no endpoint
  std::string kubeconfig_out;                         // "": <dir>/kubeconfig
  std::string node_name;                              // "": DefaultNodeName()
  std::vector<std::string> faults;                    // --api-fault specs
};

// --api-listen, --kubeconfig-out, --node-name on `sub`.
void AddServeApiFlags(CLI::App* sub, ServeApiOptions* opts);

// The kubelet's default node name: the host name in lower case, when it is
// a valid node name (a DNS subdomain); "devmgr-node" otherwise.
std::string DefaultNodeName();

// A started endpoint and what plugins need to reach it.
struct ServeApi {
  std::unique_ptr<apiserver::ApiServer> server;  // null with --api-listen off
  std::string url;
  std::string kubeconfig;
  std::string node_name;
  // KUBECONFIG for the --plugin commands (empty with --api-listen off).
  std::map<std::string, std::string> plugin_env;
};

// The status file's "api" section: the endpoint, the node's name, every
// ResourceSlice, ResourceClaim, ResourceClaimTemplate and DeviceClass the
// store holds, and the
// requests served (the count and the last kStatusRequests of them).
inline constexpr size_t kStatusRequests = 50;
nlohmann::json ApiStatusSection(const ServeApi& api);

// Calls `on_change` after each change in the store, on a thread of its own
// that ends when the store shuts down (ApiServer::Stop); the returned thread
// must be joined after that.
std::thread WatchStoreChanges(apiserver::Store& store, std::function<void()> on_change);

// Starts the endpoint, creates the node and writes the kubeconfig. The API
// server outlives the kubelet: the objects of the "api" section of a status
// file a previous serve left at `restore_from` (ResourceSlices,
// ResourceClaims, their templates, DeviceClasses) are put back first, with
// their UIDs ("": none; an unreadable file: none).
// InvalidArgument for a bad flag, Unavailable when the address is busy,
// the write's error when the kubeconfig cannot be written.
absl::StatusOr<ServeApi> StartServeApi(const ServeApiOptions& opts, const std::string& dir,
                                       const Clock& clock, const std::string& restore_from = "");

// Where a serve node keeps dra_manager_state: ROOT when `dir` (the
// device-plugin directory) is ROOT/device-plugins, as the kubelet keeps it in
// its root directory; else the sibling directory `<dir>-dra` (`dir` itself is
// cleaned at start).
std::string DraStateDir(const std::string& dir);

// DRA on the node (node::NodeDraOptions) when the endpoint serves: its store,
// the node's name and DraStateDir(dir). The node needs a plugins_registry
// directory too, where drivers register.
void HookDra(const ServeApi& api, const std::string& dir, node::NodeOptions* no);

}  // namespace devmgr::cli

#endif  // DEVMGR_CLI_SERVE_API_H_
