#include "cli/serve_api.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "apiserver/field_selector.h"
#include "apiserver/resource_type.h"
#include "apiserver/validation.h"
#include "common/logging.h"

namespace devmgr::cli {

void AddServeApiFlags(CLI::App* sub, ServeApiOptions* opts) {
  sub->add_option("--api-listen", opts->listen,
                  "Serve the Kubernetes API a DRA driver talks to (resource.k8s.io/v1 "
                  "ResourceSlices, ResourceClaims, DeviceClasses; the node) over plain HTTP at "
                  "this host:port (port 0: any free port); 'off' to serve none")
      ->capture_default_str();
  sub->add_option("--kubeconfig-out", opts->kubeconfig_out,
                  "Write a kubeconfig for that endpoint here (default: <dir>/kubeconfig); "
                  "--plugin commands get its path in KUBECONFIG");
  sub->add_option("--node-name", opts->node_name,
                  "The node's name in that endpoint (default: the host name in lower case, as "
                  "the kubelet, or devmgr-node when that is no valid node name)");
  sub->add_option("--api-fault", opts->faults,
                  "Inject a fault into that endpoint (repeatable; off by default): "
                  "comma-separated method=GET|POST|PUT|DELETE|PATCH, path=PREFIX, "
                  "watch=true|false, one of error=CODE, delay=DURATION, drop-watch=DURATION, "
                  "expire=true, and times=N (default 1, 0: always), skip=N; e.g. "
                  "'method=PUT,path=/apis/resource.k8s.io/v1/resourceslices,error=409'");
}

std::string DefaultNodeName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "devmgr-node";
  std::string name = host;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return !name.empty() && apiserver::IsDNS1123Subdomain(name).empty() ? name : "devmgr-node";
}

nlohmann::json ApiStatusSection(const ServeApi& api) {
  if (!api.server) return {{"api", nullptr}};
  apiserver::Store& store = api.server->store();
  auto all = [&store](const apiserver::ResourceType& type) {
    apiserver::ApiOr<apiserver::Store::ListResult> l =
        store.List(type, "", apiserver::FieldSelector{});
    return l.ok() ? nlohmann::json(l.value.items) : nlohmann::json::array();
  };
  const std::vector<apiserver::RequestRecord> requests = api.server->Requests();
  nlohmann::json last = nlohmann::json::array();
  for (size_t i = requests.size() > kStatusRequests ? requests.size() - kStatusRequests : 0;
       i < requests.size(); ++i) {
    const apiserver::RequestRecord& r = requests[i];
    last.push_back({{"method", r.method},
                    {"fault", r.fault},
                    {"target", r.target},
                    {"status", r.status},
                    {"contentType", r.content_type},
                    {"userAgent", r.user_agent},
                    {"time", absl::FormatTime(absl::RFC3339_full, r.time, absl::UTCTimeZone())}});
  }
  return {{"api",
           {{"url", api.url},
            {"kubeconfig", api.kubeconfig},
            {"nodeName", api.node_name},
            {"resourceVersion", store.ResourceVersion()},
            {"resourceSlices", all(apiserver::ResourceSlices())},
            {"resourceClaims", all(apiserver::ResourceClaims())},
            {"resourceClaimTemplates", all(apiserver::ResourceClaimTemplates())},
            {"deviceClasses", all(apiserver::DeviceClasses())},
            {"requestCount", requests.size()},
            {"requests", last}}}};
}

std::thread WatchStoreChanges(apiserver::Store& store, std::function<void()> on_change) {
  return std::thread([&store, on_change = std::move(on_change)] {
    int64_t seen = store.ResourceVersion();
    while (!store.IsShutdown()) {
      apiserver::ApiOr<std::vector<apiserver::WatchEvent>> events =
          store.EventsAfter(seen, absl::InfiniteFuture());
      if (!events.ok() || events.value.empty()) {
        if (!events.ok()) seen = store.ResourceVersion();  // history too old: start over
        continue;
      }
      seen = events.value.back().resource_version;
      on_change();
    }
  });
}

namespace {

// The objects of a previous serve's status file back in `store`.
void RestoreApiObjects(apiserver::Store& store, const std::string& status_file) {
  if (status_file.empty()) return;
  std::ifstream in(status_file);
  if (!in) return;
  const nlohmann::json status = nlohmann::json::parse(in, nullptr, false);
  if (!status.is_object() || !status.contains("api") || !status["api"].is_object()) return;
  const nlohmann::json& api = status["api"];
  size_t restored = 0;
  for (const auto& [key, type] :
       {std::pair{"deviceClasses", &apiserver::DeviceClasses()},
        std::pair{"resourceClaimTemplates", &apiserver::ResourceClaimTemplates()},
        std::pair{"resourceClaims", &apiserver::ResourceClaims()},
        std::pair{"resourceSlices", &apiserver::ResourceSlices()}}) {
    if (!api.contains(key) || !api[key].is_array()) continue;
    for (const nlohmann::json& object : api[key]) {
      if (store.Restore(*type, object).ok()) ++restored;
    }
  }
  DM_INFO("Restored the API objects a previous serve left", {"path", status_file},
          {"objects", std::to_string(restored)});
}

}  // namespace

absl::StatusOr<ServeApi> StartServeApi(const ServeApiOptions& opts, const std::string& dir,
                                       const Clock& clock, const std::string& restore_from) {
  ServeApi api;
  if (opts.listen == "off") return api;
  api.node_name = opts.node_name.empty() ? DefaultNodeName() : opts.node_name;
  if (auto msgs = apiserver::IsDNS1123Subdomain(api.node_name); !msgs.empty()) {
    return absl::InvalidArgumentError("--node-name " + api.node_name + ": " + msgs[0]);
  }
  std::vector<apiserver::Fault> faults;
  for (const std::string& spec : opts.faults) {
    absl::StatusOr<apiserver::Fault> f = apiserver::ParseFault(spec);
    if (!f.ok()) return f.status();
    faults.push_back(*std::move(f));
  }
  api.server = std::make_unique<apiserver::ApiServer>(clock);
  for (apiserver::Fault& f : faults) api.server->faults().Add(std::move(f));
  absl::StatusOr<std::string> url = api.server->Start(opts.listen);
  if (!url.ok())
    return absl::Status(url.status().code(),
                        "--api-listen: " + std::string(url.status().message()));
  api.url = *url;
  RestoreApiObjects(api.server->store(), restore_from);
  if (absl::Status s = apiserver::CreateNode(api.server->store(), api.node_name); !s.ok()) return s;
  api.kubeconfig = opts.kubeconfig_out.empty() ? dir + "/kubeconfig" : opts.kubeconfig_out;
  if (absl::Status s = apiserver::WriteKubeconfig(api.kubeconfig, api.url); !s.ok()) {
    return absl::Status(s.code(), "--kubeconfig-out: " + std::string(s.message()));
  }
  api.plugin_env["KUBECONFIG"] = api.kubeconfig;
  DM_INFO("devmgr is serving the Kubernetes API for DRA drivers", {"url", api.url},
          {"kubeconfig", api.kubeconfig}, {"node", api.node_name});
  return api;
}

std::string DraStateDir(const std::string& dir) {
  const std::filesystem::path p(dir);
  if (p.filename() == "device-plugins") return p.parent_path().string();
  return dir + "-dra";
}

void HookDra(const ServeApi& api, const std::string& dir, node::NodeOptions* no) {
  if (!api.server) return;
  no->dra.store = &api.server->store();
  no->dra.node_name = api.node_name;
  no->dra.state_dir = DraStateDir(dir);
}

}  // namespace devmgr::cli
