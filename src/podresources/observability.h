// Everything a running emulated kubelet exposes besides the device plugin
// API, wired in one place for `devmgr serve` (and `run`): the kubelet
// metrics (fed by the manager's Allocate RPCs and the registration
// server's counts), served over HTTP and/or written to a file at the end,
// and the PodResources v1 socket.
#ifndef DEVMGR_PODRESOURCES_OBSERVABILITY_H_
#define DEVMGR_PODRESOURCES_OBSERVABILITY_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kubelet/profile.h"
#include "metrics/http_server.h"
#include "metrics/kubelet_metrics.h"
#include "node/node.h"
#include "node/pod_manager.h"
#include "podresources/options.h"
#include "podresources/server.h"

namespace devmgr::podresources {

// The value that turns a socket or address off.
inline constexpr char kOff[] = "off";

struct ObservabilityOptions {
  // PodResources socket; "" = DefaultSocketPath(plugin dir); "off" = none.
  std::string pod_resources_socket;
  // Metrics HTTP address; "off" = none. If `metrics_address_explicit` is
  // false and the address is busy, serving metrics is skipped with a
  // warning instead of failing.
  std::string metrics_address = metrics::kDefaultMetricsAddress;
  bool metrics_address_explicit = false;
  // Written (atomically) by Stop; "" = none.
  std::string metrics_file;
  // A kubelet --feature-gates value for the PodResources gates.
  std::string feature_gates;
  // Start even when the PodResources socket answers (another kubelet).
  bool force = false;
};

// The PodResources socket devmgr uses for a device-plugin directory: like
// the kubelet, <root>/pod-resources/kubelet.sock when the directory is
// <root>/device-plugins; otherwise the sibling
// <plugin_dir>-pod-resources/kubelet.sock.
std::string DefaultSocketPath(const std::string& plugin_dir);

// Sets NodeOptions::on_allocate_rpc (the Allocate duration histogram) and
// on_pod_admission (the topology-manager admission metrics) to feed `m`,
// which must outlive the node.
void HookKubeletMetrics(metrics::KubeletMetrics* m, node::NodeOptions* o);

// Not thread-safe: Create, Start, Stop from one thread.
class Observability {
 public:
  // Validates the options (feature gates) for this profile. InvalidArgument
  // with the kubelet's feature-gate texts.
  static absl::StatusOr<std::unique_ptr<Observability>> Create(const Profile& profile,
                                                               ObservabilityOptions opts);
  ~Observability();

  // Sets the node hooks that feed the metrics (before the Node is built).
  void Hook(node::NodeOptions* o) { HookKubeletMetrics(metrics_.get(), o); }

  // Starts the PodResources server over `node` and `pods` (which must
  // outlive Stop) and the metrics HTTP server.
  absl::Status Start(const std::string& plugin_dir, node::Node* node, node::PodManager* pods);
  // Stops serving, then writes the metrics file. Call it while the node
  // is still alive (its registration counts are read one last time).
  // Idempotent; the destructor runs it without reading the node.
  absl::Status Stop();

  metrics::KubeletMetrics& metrics() { return *metrics_; }
  // "" when not serving.
  const std::string& pod_resources_socket() const { return socket_; }
  const std::string& metrics_address() const { return bound_address_; }
  // nullptr when not serving.
  Server* pod_resources_server() { return server_.get(); }

 private:
  Observability(ObservabilityOptions opts, Options api);

  const ObservabilityOptions opts_;
  const Options api_;
  std::unique_ptr<metrics::KubeletMetrics> metrics_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<metrics::HttpServer> http_;
  std::string socket_;
  std::string created_dir_;
  std::string bound_address_;
  bool stopped_ = false;
};

}  // namespace devmgr::podresources

#endif  // DEVMGR_PODRESOURCES_OBSERVABILITY_H_
