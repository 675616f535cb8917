#include "conformance/dra_session.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>

#include "apiserver/field_selector.h"
#include "apiserver/resource_type.h"
#include "common/clock.h"
#include "common/logging.h"
#include "conformance/checks.h"
#include "conformance/probe.h"
#include "dra/allocator.h"
#include "dra/pod_claims.h"
#include "fmt/format.h"
#include "transport/registration_client.h"

namespace devmgr::conformance {

using nlohmann::json;

// Wraps the kubelet's registration client so that the session sees what the
// driver answered to GetInfo and what the kubelet told it.
class DraSession::RecordingClient final : public pluginmanager::RegistrationClient {
 public:
  RecordingClient(DraSession* session, std::string socket,
                  std::unique_ptr<pluginmanager::RegistrationClient> inner)
      : session_(session), socket_(std::move(socket)), inner_(std::move(inner)) {}
  absl::StatusOr<pluginmanager::RegistrationInfo> GetInfo(absl::Duration timeout) override {
    absl::StatusOr<pluginmanager::RegistrationInfo> r = inner_->GetInfo(timeout);
    session_->OnInfo(socket_, r);
    return r;
  }
  absl::Status NotifyRegistrationStatus(bool registered, const std::string& error,
                                        absl::Duration timeout) override {
    session_->OnNotify(socket_, registered, error);
    return inner_->NotifyRegistrationStatus(registered, error, timeout);
  }

 private:
  DraSession* const session_;
  const std::string socket_;
  const std::unique_ptr<pluginmanager::RegistrationClient> inner_;
};

DraSession::DraSession(DraTarget* target, DraSessionOptions opts)
    : target_(target), opts_(std::move(opts)) {
  const std::string& r = opts_.dir;
  env_ = DraEnv{r,          r + "/plugins_registry", r + "/plugins",
                r + "/cdi", r + "/kubeconfig",       opts_.node_name};
}

DraSession::~DraSession() { End(); }

absl::Status DraSession::PrepareRoot() {
  std::error_code ec;
  // Only what a session creates: --dir may hold other things.
  for (const std::string& p : {env_.registry_dir, env_.plugins_dir, env_.cdi_dir}) {
    std::filesystem::remove_all(p, ec);
    if (!std::filesystem::create_directories(p, ec) && ec) {
      return absl::FailedPreconditionError(fmt::format("cannot create {}: {}", p, ec.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status DraSession::StartApi() {
  api_ = std::make_unique<apiserver::ApiServer>(RealClock::Get());
  if (absl::Status s = apiserver::AddFaultSpecs(api_->faults(), opts_.api_faults); !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> url = api_->Start(apiserver::kDefaultApiListen);
  if (!url.ok()) return absl::FailedPreconditionError(url.status().message());
  if (absl::Status s = apiserver::CreateNode(api_->store(), env_.node_name); !s.ok()) return s;
  return apiserver::WriteKubeconfig(env_.kubeconfig, *url);
}

absl::Status DraSession::StartPluginManager() {
  if (!timers_) timers_ = std::make_unique<dra::RealTimers>();
  dra::DraPluginHandlerOptions ho;
  ho.timers = timers_.get();
  ho.profile = opts_.profile;
  ho.client.call_timeout = t().call;
  binds_ = target_->Binds(env_);
  ho.endpoint_binds = binds_;
  // Bounds how long the monitor takes to stop at the session's end; a
  // channel's state changes are seen at once either way.
  ho.connection_recheck = absl::Milliseconds(100);
  apiserver::Store* store = &api_->store();
  const std::string node = env_.node_name;
  // An empty driver name wipes every driver's slices on the node, as the
  // kubelet's does.
  ho.on_wipe = [store, node](const std::string& driver) {
    apiserver::DeleteNodeSlices(*store, node, driver);
  };
  absl::StatusOr<std::unique_ptr<dra::DraPluginHandler>> h = dra::DraPluginHandler::Create(ho);
  if (!h.ok()) return h.status();
  handler_ = *std::move(h);
  pluginmanager::PluginManagerOptions po;
  po.dir = env_.registry_dir;
  po.operations.deregister_failed_registrations = opts_.profile.watcher_failure_deregisters;
  auto dialer = [this](const std::string& socket, absl::Duration timeout,
                       const std::function<bool()>& cancelled)
      -> absl::StatusOr<std::unique_ptr<pluginmanager::RegistrationClient>> {
    auto c = transport::DialRegistration(socket, timeout, cancelled);
    if (!c.ok()) return c.status();
    return std::unique_ptr<pluginmanager::RegistrationClient>(
        std::make_unique<RecordingClient>(this, socket, *std::move(c)));
  };
  plugin_manager_ = std::make_unique<pluginmanager::PluginManager>(std::move(po), dialer);
  if (absl::Status s = plugin_manager_->AddHandler(pluginmanager::kDRAPluginType, handler_.get());
      !s.ok()) {
    return s;
  }
  return plugin_manager_->Start();
}

absl::Status DraSession::Begin() {
  if (absl::Status s = PrepareRoot(); !s.ok()) return s;
  if (absl::Status s = StartApi(); !s.ok()) return s;
  if (absl::Status s = StartPluginManager(); !s.ok()) return s;
  started_at_ = MonoNow();
  if (absl::Status s = target_->Start(env_); !s.ok()) return s;
  driver_running_ = true;
  WaitForRegistration();
  WaitForConnection();
  int code = 0;
  if (Driver().empty() && target_->Exited(&code) && (code == 126 || code == 127)) {
    std::string out;
    for (const auto& l : target_->OutputTail(5)) out += "\n  " + l;
    return absl::FailedPreconditionError(
        fmt::format("the driver command could not run (exit code {}){}", code, out));
  }
  return absl::OkStatus();
}

void DraSession::WaitForRegistration() {
  const MonoTime deadline = MonoDeadline(t().register_within);
  absl::MutexLock l(&mu_);
  while (MonoNow() < deadline) {
    // Accepted or refused by the kubelet: the wait is over.
    for (const DraRegistrationRecord& r : registrations_) {
      if (r.registered.has_value()) return;
    }
    int code = 0;
    if (target_->Exited(&code) && code != 0) return;
    changed_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
  }
}

void DraSession::WaitForConnection() {
  const std::string driver = Driver();
  if (driver.empty()) return;
  const absl::Duration left = t().register_within - MonoSub(MonoNow(), started_at_);
  for (const std::string& endpoint : handler_->Endpoints(driver)) {
    handler_->WaitForConnection(driver, endpoint, true, std::max(left, absl::ZeroDuration()));
  }
}

void DraSession::End() {
  // The kubelet first, so that no registration is in flight while the
  // driver goes; the endpoint last, so that the driver's requests are
  // answered until it has gone.
  const MonoTime start = MonoNow();
  if (plugin_manager_) plugin_manager_->Stop();
  if (handler_) handler_->Stop();
  const MonoTime kubelet_stopped = MonoNow();
  if (driver_running_) {
    const bool in_time = target_->Stop(t().stop_grace);
    driver_running_ = false;
    DM_VINFO(1, "DRA conformance session stopped the driver",
             {"inTime", in_time ? "true" : "false"},
             {"kubeletStop", Dur(MonoSub(kubelet_stopped, start))},
             {"driverStop", Dur(MonoSub(MonoNow(), kubelet_stopped))});
  }
  if (api_) api_->Stop();
}

bool DraSession::StopDriver() {
  if (!driver_running_) return true;
  driver_running_ = false;
  return target_->Stop(t().stop_grace);
}

namespace {

size_t Accepted(const std::vector<DraRegistrationRecord>& records) {
  return std::count_if(records.begin(), records.end(),
                       [](const DraRegistrationRecord& r) { return r.registered.value_or(false); });
}

}  // namespace

absl::Status DraSession::StartDriver() {
  StopDriver();
  if (!handler_) return absl::FailedPreconditionError("the kubelet is not running");
  const size_t before = Accepted(Registrations());
  const MonoTime deadline = MonoDeadline(t().register_within);
  if (absl::Status s = target_->Start(env_); !s.ok()) return s;
  driver_running_ = true;
  std::string refused;
  {
    absl::MutexLock l(&mu_);
    while (Accepted(registrations_) == before) {
      int code = 0;
      if (target_->Exited(&code)) {
        return absl::UnavailableError(
            fmt::format("the driver exited with code {} before it registered again", code));
      }
      if (MonoNow() >= deadline) {
        for (auto it = registrations_.rbegin(); it != registrations_.rend(); ++it) {
          if (it->registered.has_value() && !*it->registered) {
            refused = "; the kubelet refused the last one: " + it->error;
            break;
          }
        }
        return absl::DeadlineExceededError(
            fmt::format("no registration accepted within {} of its start{}",
                        Dur(t().register_within), refused));
      }
      changed_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
    }
  }
  const std::string driver = Driver();
  for (const std::string& endpoint : handler_->Endpoints(driver)) {
    const absl::Duration left = MonoSub(deadline, MonoNow());
    if (!handler_->WaitForConnection(driver, endpoint, true,
                                     std::max(left, absl::ZeroDuration()))) {
      return absl::DeadlineExceededError(fmt::format(
          "registered again, but the kubelet could not connect to {} within {} of its start",
          endpoint, Dur(t().register_within)));
    }
  }
  return absl::OkStatus();
}

void DraSession::StopKubelet() {
  if (plugin_manager_) plugin_manager_->Stop();
  if (handler_) handler_->Stop();
  plugin_manager_.reset();
  handler_.reset();
}

absl::Status DraSession::StartKubelet() {
  StopKubelet();
  // At its start the kubelet deletes every ResourceSlice of its node.
  apiserver::ApiOr<apiserver::FieldSelector> sel = apiserver::FieldSelector::Parse(
      "spec.nodeName=" + env_.node_name, apiserver::ResourceSlices());
  if (sel.ok()) api_->store().DeleteCollection(apiserver::ResourceSlices(), "", sel.value);
  return StartPluginManager();
}

bool DraSession::SkipToWipe() {
  if (!timers_ || !timers_->AwaitPending(t().stop_grace + absl::Seconds(10))) return false;
  timers_->Skip(dra::kDefaultWipingDelay);
  return true;
}

std::vector<json> DraSession::ListSlices() {
  std::vector<json> out;
  const std::string driver = Driver();
  if (driver.empty() || !api_) return out;
  apiserver::ApiOr<apiserver::FieldSelector> sel = apiserver::FieldSelector::Parse(
      "spec.driver=" + driver + ",spec.nodeName=" + env_.node_name, apiserver::ResourceSlices());
  if (!sel.ok()) return out;
  apiserver::ApiOr<apiserver::Store::ListResult> l =
      api_->store().List(apiserver::ResourceSlices(), "", sel.value);
  if (l.ok()) out = l.value.items;
  return out;
}

void DraSession::OnInfo(const std::string& socket,
                        const absl::StatusOr<pluginmanager::RegistrationInfo>& r) {
  DraRegistrationRecord rec;
  rec.socket = socket;
  rec.at = MonoNow();
  rec.info_status = r.status();
  if (r.ok()) {
    rec.info = *r;
    const std::string& e = r->endpoint;
    rec.served_at_info = !e.empty() && e.front() == '/' && SocketAccepts(HostPath(e));
  }
  absl::MutexLock l(&mu_);
  registrations_.push_back(std::move(rec));
  changed_.SignalAll();
}

void DraSession::OnNotify(const std::string& socket, bool registered, const std::string& error) {
  absl::MutexLock l(&mu_);
  for (auto it = registrations_.rbegin(); it != registrations_.rend(); ++it) {
    if (it->socket != socket || it->registered.has_value()) continue;
    it->registered = registered;
    it->error = error;
    break;
  }
  changed_.SignalAll();
}

std::vector<DraRegistrationRecord> DraSession::Registrations() const {
  absl::MutexLock l(&mu_);
  return registrations_;
}

std::optional<DraRegistrationRecord> DraSession::FirstInfo() const {
  absl::MutexLock l(&mu_);
  for (const DraRegistrationRecord& r : registrations_) {
    if (r.info_status.ok()) return r;
  }
  return std::nullopt;
}

std::string DraSession::Driver() const {
  absl::MutexLock l(&mu_);
  for (const DraRegistrationRecord& r : registrations_) {
    if (r.registered.value_or(false)) return r.info.name;
  }
  return "";
}

std::string DraSession::NoRegistrationReason() const {
  int code = 0;
  if (target_->Exited(&code)) {
    return fmt::format("the driver exited with code {} before it registered", code);
  }
  absl::MutexLock l(&mu_);
  for (auto it = registrations_.rbegin(); it != registrations_.rend(); ++it) {
    if (it->registered.has_value() && !*it->registered) {
      return "the kubelet refused the driver's registration: " + it->error;
    }
  }
  return fmt::format("no registration accepted within {}", Dur(t().register_within));
}

std::vector<std::string> DraSession::DriverOutput(size_t n) const {
  std::vector<std::string> out;
  for (const std::string& l : target_->OutputTail(n)) out.push_back("driver: " + l);
  return out;
}

namespace {

// True when every pool of `slices` is complete: as many slices of its
// newest generation as that generation's resourceSliceCount.
bool PoolsComplete(const std::vector<json>& slices) {
  std::map<std::string, std::pair<int64_t, int64_t>> newest;  // pool -> (generation, count)
  std::map<std::pair<std::string, int64_t>, int64_t> seen;
  for (const json& s : slices) {
    const json pool = s.value("spec", json::object()).value("pool", json::object());
    const std::string name = pool.value("name", "");
    const int64_t gen = pool.value("generation", int64_t{0});
    ++seen[{name, gen}];
    auto it = newest.find(name);
    if (it == newest.end() || it->second.first < gen) {
      newest[name] = {gen, pool.value("resourceSliceCount", int64_t{1})};
    }
  }
  for (const auto& [name, gc] : newest) {
    if (seen[{name, gc.first}] < gc.second) return false;
  }
  return !slices.empty();
}

}  // namespace

const std::vector<json>& DraSession::Slices() {
  if (!slices_) slices_ = WaitForSlices(t().publish_within);
  return *slices_;
}

std::vector<json> DraSession::WaitForSlices(absl::Duration within) {
  const std::string driver = Driver();
  if (driver.empty() || !api_) return {};
  apiserver::ApiOr<apiserver::FieldSelector> sel = apiserver::FieldSelector::Parse(
      "spec.driver=" + driver + ",spec.nodeName=" + env_.node_name, apiserver::ResourceSlices());
  if (!sel.ok()) return {};
  apiserver::Store& store = api_->store();
  const absl::Time deadline = absl::Now() + within;
  while (true) {
    const int64_t seen = store.ResourceVersion();
    apiserver::ApiOr<apiserver::Store::ListResult> l =
        store.List(apiserver::ResourceSlices(), "", sel.value);
    if (l.ok() && PoolsComplete(l.value.items)) return l.value.items;
    if (absl::Now() >= deadline) return {};
    store.EventsAfter(seen, deadline);
  }
}

absl::Status DraSession::EnsureDeviceClass() {
  if (device_class_) return absl::OkStatus();
  json dc = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "DeviceClass"},
      {"metadata", {{"name", kDraDeviceClass}}},
      {"spec",
       {{"selectors",
         json::array({{{"cel", {{"expression", "device.driver == \"" + Driver() + "\""}}}}})}}}};
  apiserver::ApiOr<json> created = api_->store().Create(apiserver::DeviceClasses(), "", dc);
  if (!created.ok()) return dra::FromApiError(*created.error, "create the DeviceClass");
  device_class_ = true;
  return absl::OkStatus();
}

absl::StatusOr<DraTestClaim> DraSession::NewClaim(const std::string& name, int count) {
  return NewClaimWith(name, {{"requests", json::array({{{"name", "req"},
                                                        {"exactly",
                                                         {{"deviceClassName", kDraDeviceClass},
                                                          {"allocationMode", "ExactCount"},
                                                          {"count", count}}}}})}});
}

absl::StatusOr<DraTestClaim> DraSession::NewClaimWith(const std::string& name,
                                                      const json& devices) {
  if (Driver().empty()) return absl::FailedPreconditionError("no driver registered");
  if (absl::Status s = EnsureDeviceClass(); !s.ok()) return s;
  json claim = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", name}, {"namespace", kDraNamespace}}},
                {"spec", {{"devices", devices}}}};
  apiserver::ApiOr<json> created =
      api_->store().Create(apiserver::ResourceClaims(), kDraNamespace, claim);
  if (!created.ok()) return dra::FromApiError(*created.error, "create claim " + name);
  DraTestClaim out;
  out.pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name + "-pod"}, {"namespace", kDraNamespace}, {"uid", apiserver::NewUid()}}},
      {"spec",
       {{"resourceClaims", json::array({{{"name", "c"}, {"resourceClaimName", name}}})},
        {"containers",
         json::array({{{"name", "ctr"},
                       {"image", "none"},
                       {"resources", {{"claims", json::array({{{"name", "c"}}})}}}}})}}}};
  absl::StatusOr<dra::PodClaimResolution> res = dra::ResolvePodClaims(api_->store(), out.pod);
  absl::Status s = res.status();
  if (s.ok()) s = dra::AllocateAndReserve(api_->store(), env_.node_name, *res);
  if (!s.ok()) {
    DeleteClaim(out);
    return s;
  }
  const json& stored = res->claims.front().claim;
  out.claim = dra::Claim{kDraNamespace, stored["metadata"].value("uid", ""), name};
  out.results = stored["status"]["allocation"]["devices"].value("results", json::array());
  return out;
}

absl::Status DraSession::PublishOtherDriver() {
  if (other_driver_) return absl::OkStatus();
  if (!api_) return absl::FailedPreconditionError("the API endpoint is not running");
  json devices = json::array();
  for (int i = 0; i < kDraOtherDevices; ++i)
    devices.push_back({{"name", fmt::format("other-{}", i)}});
  // Pool named after the node, as helper-based drivers name theirs: pools are
  // per driver, so the same name in two drivers' results is two pools.
  const json slice = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceSlice"},
      {"metadata", {{"name", env_.node_name + "-" + kDraOtherDriver}}},
      {"spec",
       {{"driver", kDraOtherDriver},
        {"nodeName", env_.node_name},
        {"pool", {{"name", env_.node_name}, {"generation", 1}, {"resourceSliceCount", 1}}},
        {"devices", devices}}}};
  apiserver::ApiOr<json> created = api_->store().Create(apiserver::ResourceSlices(), "", slice);
  if (!created.ok()) return dra::FromApiError(*created.error, "create the other driver's slice");
  const json dc = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "DeviceClass"},
      {"metadata", {{"name", kDraOtherDeviceClass}}},
      {"spec",
       {{"selectors", json::array({{{"cel",
                                     {{"expression", fmt::format("device.driver == \"{}\"",
                                                                 kDraOtherDriver)}}}}})}}}};
  created = api_->store().Create(apiserver::DeviceClasses(), "", dc);
  if (!created.ok()) return dra::FromApiError(*created.error, "create the other DeviceClass");
  other_driver_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> DraSession::DriverChannel() {
  if (!handler_) return absl::FailedPreconditionError("the kubelet is not running");
  absl::StatusOr<std::shared_ptr<dra::DraClient>> c = handler_->GetClient(Driver());
  if (!c.ok()) return absl::FailedPreconditionError(c.status().message());
  return (*c)->channel();
}

void DraSession::DeleteClaim(const DraTestClaim& claim) {
  dra::ReleasePodClaims(api_->store(), claim.pod).IgnoreError();
  const std::string name = claim.pod["spec"]["resourceClaims"][0].value("resourceClaimName", "");
  api_->store()
      .Delete(apiserver::ResourceClaims(), kDraNamespace, name, apiserver::Store::Preconditions{})
      .ok();
}

void DraSession::Record(const std::string& method, const std::vector<dra::Claim>& claims,
                        MonoTime start, const absl::Status& status) {
  DraCallRecord r{method, {}, MonoSub(MonoNow(), start), status};
  for (const dra::Claim& c : claims) r.claims.push_back(c.namespace_ + "/" + c.name);
  calls_.push_back(std::move(r));
}

absl::StatusOr<dra::PreparedClaims> DraSession::Prepare(const std::vector<dra::Claim>& claims) {
  if (!handler_) return absl::FailedPreconditionError("the kubelet is not running");
  absl::StatusOr<std::shared_ptr<dra::DraClient>> c = handler_->GetClient(Driver());
  if (!c.ok()) return absl::FailedPreconditionError(c.status().message());
  const MonoTime start = MonoNow();
  absl::StatusOr<dra::PreparedClaims> r = (*c)->NodePrepareResources(claims);
  Record("NodePrepareResources", claims, start, r.status());
  return r;
}

absl::Status DraSession::Unprepare(const std::vector<dra::Claim>& claims) {
  if (!handler_) return absl::FailedPreconditionError("the kubelet is not running");
  absl::StatusOr<std::shared_ptr<dra::DraClient>> c = handler_->GetClient(Driver());
  if (!c.ok()) return absl::FailedPreconditionError(c.status().message());
  const MonoTime start = MonoNow();
  absl::Status s = (*c)->NodeUnprepareResources(claims);
  Record("NodeUnprepareResources", claims, start, s);
  return s;
}

}  // namespace devmgr::conformance
