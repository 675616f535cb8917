#include "draplugin/sample_dra_driver.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <vector>

#include "common/fs.h"
#include "common/logging.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "draplugin/dra_service.h"
#include "draplugin/resource_slice.h"
#include "grpcpp/grpcpp.h"

namespace devmgr::draplugin {
namespace {

namespace v1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

using V1Service = DraService<v1::DRAPlugin::Service, v1::NodePrepareResourcesRequest,
                             v1::NodePrepareResourcesResponse, v1::NodeUnprepareResourcesRequest,
                             v1::NodeUnprepareResourcesResponse>;
using V1beta1Service =
    DraService<v1beta1::DRAPlugin::Service, v1beta1::NodePrepareResourcesRequest,
               v1beta1::NodePrepareResourcesResponse, v1beta1::NodeUnprepareResourcesRequest,
               v1beta1::NodeUnprepareResourcesResponse>;

// How long Server::Shutdown lets calls finish before cancelling them.
constexpr auto kShutdownGrace = std::chrono::seconds(1);

std::unique_ptr<grpc::Server> Serve(const std::string& path,
                                    const std::vector<grpc::Service*>& services) {
  ::unlink(path.c_str());  // a stale socket of an earlier run
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  for (grpc::Service* s : services) builder.RegisterService(s);
  return builder.BuildAndStart();
}

void Shutdown(std::unique_ptr<grpc::Server> server, const std::string& path) {
  if (server == nullptr) return;
  server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server->Wait();
  ::unlink(path.c_str());
}

}  // namespace

SampleDraDriver::SampleDraDriver(Config config, DriverOptions options)
    : config_(std::move(config)), options_(std::move(options)) {
  registration_ = std::make_unique<RegistrationService>(config_.driver, dra_socket(),
                                                        config_.supported_versions,
                                                        config_.misbehave.registration_type);
}

SampleDraDriver::~SampleDraDriver() { Stop(); }

std::string SampleDraDriver::registration_socket() const {
  return options_.registry_dir + "/" + config_.driver + "-reg.sock";
}

std::string SampleDraDriver::dra_socket() const {
  return options_.plugin_dir + "/" + config_.driver + "/dra.sock";
}

absl::Status SampleDraDriver::Start() {
  absl::StatusOr<std::string> server = KubeconfigServer(options_.kubeconfig);
  if (!server.ok()) return server.status();
  // Its User-Agent names the driver, so the endpoint's request record (and
  // a scenario's api_requests) tells two sample drivers apart.
  api_ = std::make_unique<ApiClient>(*server, "devmgr-sample-dra-driver/" + config_.driver);
  const std::string driver_dir = options_.plugin_dir + "/" + config_.driver;
  absl::Status s = fs::MkdirAll(*fs::Default(), driver_dir, 0750);
  if (s.ok()) s = fs::MkdirAll(*fs::Default(), options_.registry_dir, 0750);
  if (!s.ok()) return s;
  core_ =
      std::make_unique<DriverCore>(config_, CoreOptions{options_.cdi_dir, driver_dir}, api_.get());
  s = core_->LoadState();
  if (!s.ok()) return s;
  call_log_ = std::make_unique<CallLog>(options_.call_log);
  dra_v1_ = std::make_unique<V1Service>(core_.get(), call_log_.get(), "v1");
  dra_v1beta1_ = std::make_unique<V1beta1Service>(core_.get(), call_log_.get(), "v1beta1");
  // The slice's pool is the node's name.
  health_ = std::make_unique<HealthService>(config_, options_.node_name);
  if (!options_.health_control.empty()) {
    health_control_ = std::thread([this] { ReadHealthControl(); });
  }
  Publish();
  const absl::Duration late = config_.misbehave.register_before_serving;
  if (late <= absl::ZeroDuration()) {
    s = ServeDra();
    return s.ok() ? ServeRegistration() : s;
  }
  DM_INFO("Misbehaving: registering before serving the DRA socket",
          {"delay", absl::FormatDuration(late)});
  s = ServeRegistration();
  if (!s.ok()) return s;
  late_serve_ = std::thread([this, late] {
    if (stop_.WaitForNotificationWithTimeout(late)) return;
    absl::Status served = ServeDra();
    if (!served.ok()) DM_ERROR(std::string(served.message()), "Could not serve the DRA socket");
  });
  return absl::OkStatus();
}

void SampleDraDriver::Publish() {
  // misbehave.publish_only_first_start: a file in the plugin directory
  // (which outlives the driver) says it published once.
  const std::string marker = options_.plugin_dir + "/" + config_.driver + "/published";
  if (config_.misbehave.publish_only_first_start) {
    if (::access(marker.c_str(), F_OK) == 0) {
      DM_INFO("Misbehaving: not publishing again after the first start", {"marker", marker});
      return;
    }
    std::ofstream(marker) << "published\n";
  }
  absl::StatusOr<nlohmann::json> slice = PublishResourceSlice(*api_, config_, options_.node_name);
  if (slice.ok()) {
    DM_INFO("Published ResourceSlice", {"name", (*slice)["metadata"].value("name", std::string())},
            {"node", options_.node_name});
  } else {
    DM_ERROR(std::string(slice.status().message()), "Could not publish the ResourceSlice",
             {"node", options_.node_name});
  }
  absl::MutexLock l(&mu_);
  publish_status_ = slice.status();
}

absl::Status SampleDraDriver::ServeDra() {
  absl::MutexLock l(&mu_);
  if (stopped_) return absl::CancelledError("the driver is stopping");
  std::vector<grpc::Service*> services = {dra_v1_.get(), dra_v1beta1_.get()};
  for (grpc::Service* h : health_->Services()) services.push_back(h);
  dra_server_ = Serve(dra_socket(), services);
  if (dra_server_ == nullptr) return absl::UnavailableError("cannot serve " + dra_socket());
  DM_INFO("Serving the DRA service", {"socket", dra_socket()},
          {"healthServices", std::to_string(health_->Services().size())});
  return absl::OkStatus();
}

absl::Status SampleDraDriver::ServeRegistration() {
  absl::MutexLock l(&mu_);
  if (stopped_) return absl::CancelledError("the driver is stopping");
  registration_server_ = Serve(registration_socket(), {registration_.get()});
  if (registration_server_ == nullptr) {
    return absl::UnavailableError("cannot serve " + registration_socket());
  }
  DM_INFO("Serving the registration service", {"socket", registration_socket()});
  return absl::OkStatus();
}

absl::Status SampleDraDriver::publish_status() const {
  absl::MutexLock l(&mu_);
  return publish_status_;
}

bool SampleDraDriver::WaitUntilServing(absl::Duration timeout) const {
  absl::MutexLock l(&mu_);
  auto serving = [this]()
                     ABSL_SHARED_LOCKS_REQUIRED(mu_) { return dra_server_ != nullptr || stopped_; };
  return mu_.AwaitWithTimeout(absl::Condition(&serving), timeout) && dra_server_ != nullptr;
}

void SampleDraDriver::ReadHealthControl() {
  // Lines appended since the last look; a file replaced by a shorter one is
  // read from its start again. A last line without '\n' waits.
  std::streamoff offset = 0;
  std::string partial;
  do {
    std::ifstream in(options_.health_control, std::ios::binary);
    if (!in) continue;
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size < offset) {
      offset = 0;
      partial.clear();
    }
    if (size == offset) continue;
    in.seekg(offset);
    std::string chunk(static_cast<size_t>(size - offset), '\0');
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    offset = size;
    partial += chunk;
    size_t nl;
    while ((nl = partial.find('\n')) != std::string::npos) {
      const std::string line = partial.substr(0, nl);
      partial.erase(0, nl + 1);
      absl::Status s = health_->ApplyControlLine(line);
      if (s.ok()) {
        DM_INFO("Health control", {"line", line});
      } else {
        DM_ERROR(std::string(s.message()), "Bad health control line", {"line", line});
      }
    }
  } while (!stop_.WaitForNotificationWithTimeout(options_.health_control_poll));
}

void SampleDraDriver::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (core_) core_->Stop();
  if (health_) health_->Stop();
  if (late_serve_.joinable()) late_serve_.join();
  if (health_control_.joinable()) health_control_.join();
  std::unique_ptr<grpc::Server> reg, dra;
  {
    absl::MutexLock l(&mu_);
    stopped_ = true;
    reg = std::move(registration_server_);
    dra = std::move(dra_server_);
  }
  Shutdown(std::move(reg), registration_socket());
  Shutdown(std::move(dra), dra_socket());
}

}  // namespace devmgr::draplugin
