#include "podresources/observability.h"

#include <unistd.h>

#include <filesystem>
#include <utility>

#include "common/fs.h"
#include "common/logging.h"
#include "fmt/format.h"
#include "node/status_file.h"

namespace devmgr::podresources {

std::string DefaultSocketPath(const std::string& plugin_dir) {
  std::filesystem::path p(plugin_dir);
  while (p.has_relative_path() && p.filename().empty()) p = p.parent_path();  // trailing '/'
  if (p.filename() == "device-plugins") {
    return (p.parent_path() / "pod-resources" / kSocketName).string();
  }
  return p.string() + "-pod-resources/" + kSocketName;
}

void HookKubeletMetrics(metrics::KubeletMetrics* m, node::NodeOptions* o) {
  o->on_allocate_rpc = [m](const std::string& resource, absl::Duration d) {
    m->ObserveAllocDuration(resource, d);
  };
  o->on_pod_admission = [m](const topology::AdmitResult& r, absl::Duration d) {
    m->ObservePodAdmission(r.admitted, d);
  };
  o->dra.on_operation = [m](const std::string& operation, bool failed, absl::Duration d) {
    m->ObserveDraOperation(operation, failed, d);
  };
  o->dra.on_rpc = [m](const std::string& driver, const std::string& method, const std::string& code,
                      absl::Duration d) { m->ObserveDraGrpc(driver, method, code, d); };
}

absl::StatusOr<std::unique_ptr<Observability>> Observability::Create(const Profile& profile,
                                                                     ObservabilityOptions opts) {
  // The gates go through the version's own table (FeatureGates::Set), so a
  // gate the version lacks is refused as the kubelet of that version would.
  Profile gated = profile;
  if (absl::Status s = gated.gates.Set(opts.feature_gates); !s.ok()) return s;
  const Options api = OptionsForProfile(gated);
  auto o = std::unique_ptr<Observability>(new Observability(std::move(opts), api));
  o->metrics_ = std::make_unique<metrics::KubeletMetrics>(
      metrics::KubeletMetricsOptionsFor(profile, api.get_enabled));
  return o;
}

Observability::Observability(ObservabilityOptions opts, Options api)
    : opts_(std::move(opts)), api_(api) {}

Observability::~Observability() {
  // The node may be gone by now: do not read its counts.
  metrics_->SetRegistrationCountsSource(nullptr);
  metrics_->SetAlignedComputeResourcesSource(nullptr);
  metrics_->SetDraClaimsInUseSource(nullptr);
  (void)Stop();
}

absl::Status Observability::Start(const std::string& plugin_dir, node::Node* node,
                                  node::PodManager* pods) {
  metrics_->SetRegistrationCountsSource([node] { return node->RegistrationCounts(); });
  metrics_->SetAlignedComputeResourcesSource(
      [node] { return node->AlignedComputeResourceCounts(); });
  metrics_->SetDraClaimsInUseSource([node] { return node->DraClaimsInUse(); });

  if (opts_.pod_resources_socket != kOff) {
    socket_ = opts_.pod_resources_socket.empty() ? DefaultSocketPath(plugin_dir)
                                                 : opts_.pod_resources_socket;
    socket_ = std::filesystem::absolute(socket_).lexically_normal().string();
    if (!opts_.force && node::SocketAnswers(socket_)) {
      const std::string s = socket_;
      socket_.clear();
      return absl::FailedPreconditionError(fmt::format(
          "{} answers: a kubelet (or another devmgr) serves the PodResources API there. Use "
          "another --pod-resources-socket, or --force.",
          s));
    }
    const std::string dir = std::filesystem::path(socket_).parent_path().string();
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) created_dir_ = dir;
    ServerOptions so;
    so.socket_path = socket_;
    so.api = api_;
    so.metrics = metrics_.get();
    server_ = std::make_unique<Server>(node, pods, so);
    if (absl::Status s = server_->Start(); !s.ok()) {
      server_.reset();
      socket_.clear();
      return s;
    }
    DM_INFO("devmgr is serving the PodResources API", {"socket", socket_},
            {"getEnabled", api_.get_enabled});
  }

  if (opts_.metrics_address != kOff) {
    metrics::KubeletMetrics* m = metrics_.get();
    http_ = std::make_unique<metrics::HttpServer>([m] { return m->Render(); });
    absl::StatusOr<std::string> addr = http_->Start(opts_.metrics_address);
    if (!addr.ok()) {
      http_.reset();
      if (opts_.metrics_address_explicit ||
          addr.status().code() != absl::StatusCode::kUnavailable) {
        return absl::Status(
            addr.status().code(),
            fmt::format("--metrics-address: {}", std::string(addr.status().message())));
      }
      DM_WARN("Not serving metrics: the default address is in use; set --metrics-address",
              {"address", opts_.metrics_address});
    } else {
      bound_address_ = *addr;
      DM_INFO("devmgr is serving metrics", {"address", bound_address_},
              {"url", "http://" + bound_address_ + "/metrics"});
    }
  }
  return absl::OkStatus();
}

absl::Status Observability::Stop() {
  if (stopped_) return absl::OkStatus();
  stopped_ = true;
  if (http_) http_->Stop();
  http_.reset();
  if (server_) server_->Stop();
  server_.reset();
  if (!created_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove(created_dir_, ec);  // only when empty
  }
  const std::string text = metrics_->Render();
  // Freeze the mirrored counts: the node may go away next.
  metrics_->SetRegistrationCountsSource(nullptr);
  metrics_->SetAlignedComputeResourcesSource(nullptr);
  metrics_->SetDraClaimsInUseSource(nullptr);
  if (!opts_.metrics_file.empty()) {
    absl::Status s = fs::WriteOutputFile(opts_.metrics_file, text);
    if (!s.ok()) {
      DM_ERROR(std::string(s.message()), "Failed to write the metrics file",
               {"path", opts_.metrics_file});
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace devmgr::podresources
