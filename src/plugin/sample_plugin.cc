#include "plugin/sample_plugin.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/logging.h"
#include "common/status_util.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "fmt/format.h"
#include "grpcpp/grpcpp.h"
#include "plugin/control.h"
#include "plugin/device_plugin_service.h"
#include "plugin/dir_watcher.h"
#include "plugin/plugin_core.h"
#include "plugin/registry_service.h"

namespace devmgr::plugin {

struct ServerHandle {
  std::string path;
  std::unique_ptr<DevicePluginService> device_plugin;
  std::unique_ptr<RegistryService> registry;
  std::unique_ptr<grpc::Server> server;
  dev_t dev = 0;
  ino_t ino = 0;
};

namespace {

// How long Server::Shutdown lets calls finish before cancelling them. Our
// handlers return at once on BeginShutdown, so this is rarely reached.
constexpr absl::Duration kShutdownGrace = absl::Seconds(1);
// The event loop's fallback period (control file, directory re-checks).
constexpr absl::Duration kLoopPeriod = absl::Milliseconds(500);
// After its socket was removed, how long the plugin waits for a new
// kubelet.sock before registering with the existing one.
constexpr absl::Duration kSocketLossSettle = absl::Seconds(1);

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// Which file `path` is now ("" when absent): inode and change time, so a
// socket re-created at the same path is told apart from the one before.
std::string FileIdentity(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";
  return fmt::format("{}:{}.{}", st.st_ino, st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
}

bool IsDir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[4096];
  if (::getcwd(buf, sizeof buf) == nullptr) return path;
  return std::string(buf) + "/" + path;
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (!dir.empty() && dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

// "INVALID_ARGUMENT": gRPC's code names are absl's.
std::string CodeName(grpc::StatusCode code) {
  const int c = static_cast<int>(code);
  if (c < 0 || c > 16) return "UNKNOWN";
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(c));
}

PluginOptions Normalize(PluginOptions o) {
  o.dir = Absolute(o.dir);
  o.registry_dir = Absolute(o.registry_dir);
  if (!o.control_path.empty()) o.control_path = Absolute(o.control_path);
  return o;
}

}  // namespace

SamplePlugin::SamplePlugin(Config config, PluginOptions options)
    : options_(Normalize(std::move(options))),
      core_(std::make_unique<PluginCore>(std::move(config))) {
  core_->SetExitHandler(options_.on_exit);
}

SamplePlugin::~SamplePlugin() { Stop(); }

std::string SamplePlugin::socket_path() const {
  return JoinPath(options_.dir, core_->config().socket);
}

std::string SamplePlugin::registry_socket_path() const {
  return JoinPath(options_.registry_dir, core_->config().registration.registry_socket);
}

absl::Status SamplePlugin::Start() {
  {
    absl::MutexLock l(&mu_);
    if (started_) return absl::FailedPreconditionError("sample plugin already started");
    started_ = true;
  }
  const Config& config = core_->config();
  const bool registry_mode = config.registration.mode == RegistrationConfig::Mode::kPluginsRegistry;
  if (!IsDir(options_.dir)) {
    return absl::NotFoundError(
        fmt::format("device-plugin directory {} does not exist", options_.dir));
  }
  if (registry_mode && !IsDir(options_.registry_dir)) {
    return absl::NotFoundError(
        fmt::format("plugins_registry directory {} does not exist", options_.registry_dir));
  }
  if (!options_.call_log_path.empty()) {
    DEVMGR_RETURN_IF_ERROR(core_->call_log().OpenFile(options_.call_log_path));
  }
  watcher_ = std::make_unique<DirWatcher>();
  DEVMGR_RETURN_IF_ERROR(watcher_->Init());
  watcher_->Watch(options_.dir);
  if (registry_mode) watcher_->Watch(options_.registry_dir);
  if (!options_.control_path.empty()) {
    control_ = std::make_unique<ControlFileReader>(options_.control_path);
    watcher_->Watch(DirName(options_.control_path), DirWatcher::Content::kWrites);
  }
  DM_INFO("Starting device plugin", {"resource", config.resource},
          {"devices", config.devices.size()}, {"dir", options_.dir});
  if (config.registration.serve_before_register) {
    DEVMGR_RETURN_IF_ERROR(StartDevicePluginServer());
  }
  if (registry_mode) {
    absl::Status s = StartRegistryServer();
    if (!s.ok()) {
      StopServer(&dp_server_);
      return s;
    }
  }
  start_time_ = absl::Now();
  loop_thread_ = std::thread([this] { Loop(); });
  if (!config.health_changes.empty()) health_thread_ = std::thread([this] { HealthChanges(); });
  return absl::OkStatus();
}

void SamplePlugin::Stop() {
  {
    absl::MutexLock l(&mu_);
    if (stopped_) return;
    stopped_ = true;
    if (register_ctx_ != nullptr) register_ctx_->TryCancel();
  }
  // Every handler checks the core's stop flag, so this ends open streams and
  // hanging calls of whichever server is current (the loop thread may be
  // replacing it right now, so it is not touched before the join).
  core_->SetStopping();
  if (watcher_) watcher_->Wake();
  if (loop_thread_.joinable()) loop_thread_.join();
  if (health_thread_.joinable()) health_thread_.join();
  StopServer(&registry_server_);
  StopServer(&dp_server_);
  core_->call_log().Flush();
}

absl::Status SamplePlugin::StartDevicePluginServer() {
  auto h = std::make_unique<ServerHandle>();
  h->path = socket_path();
  if (Exists(h->path) && ::unlink(h->path.c_str()) != 0) {
    return absl::UnavailableError(
        fmt::format("failed to remove {}: {}", h->path, std::strerror(errno)));
  }
  h->device_plugin = std::make_unique<DevicePluginService>(core_.get());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + h->path, grpc::InsecureServerCredentials());
  builder.RegisterService(h->device_plugin.get());
  h->server = builder.BuildAndStart();
  if (!h->server) return absl::UnavailableError(fmt::format("failed to serve on {}", h->path));
  struct stat st {};
  if (::stat(h->path.c_str(), &st) == 0) {
    h->dev = st.st_dev;
    h->ino = st.st_ino;
  }
  DM_INFO("Starting to serve on socket", {"resource", core_->config().resource},
          {"socket", h->path});
  dp_server_ = std::move(h);
  return absl::OkStatus();
}

absl::Status SamplePlugin::StartRegistryServer() {
  auto h = std::make_unique<ServerHandle>();
  h->path = registry_socket_path();
  if (Exists(h->path)) ::unlink(h->path.c_str());
  h->registry = std::make_unique<RegistryService>(
      core_.get(), socket_path(), [this] { Enqueue(Pending::kStartDevicePluginServer); });
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + h->path, grpc::InsecureServerCredentials());
  builder.RegisterService(h->registry.get());
  h->server = builder.BuildAndStart();
  if (!h->server) return absl::UnavailableError(fmt::format("failed to serve on {}", h->path));
  struct stat st {};
  if (::stat(h->path.c_str(), &st) == 0) {
    h->dev = st.st_dev;
    h->ino = st.st_ino;
  }
  DM_INFO("Serving plugin registration", {"resource", core_->config().resource},
          {"socket", h->path});
  registry_server_ = std::move(h);
  return absl::OkStatus();
}

void SamplePlugin::StopServer(std::unique_ptr<ServerHandle>* s) {
  if (!*s) return;
  ServerHandle& h = **s;
  if (h.device_plugin) h.device_plugin->BeginShutdown();
  if (h.registry) h.registry->BeginShutdown();
  h.server->Shutdown(std::chrono::system_clock::now() +
                     std::chrono::milliseconds(absl::ToInt64Milliseconds(kShutdownGrace)));
  h.server->Wait();
  if (OwnSocketIntact(&h)) ::unlink(h.path.c_str());
  DM_VINFO(1, "Stopped serving", {"socket", h.path});
  s->reset();
}

bool SamplePlugin::NamesOwnSocket(const std::string& dir, const std::string& name) const {
  for (const std::unique_ptr<ServerHandle>* h : {&dp_server_, &registry_server_}) {
    if (*h != nullptr && (*h)->path == JoinPath(dir, name)) return true;
  }
  return false;
}

bool SamplePlugin::OwnSocketIntact(const ServerHandle* s) const {
  if (s == nullptr) return false;
  struct stat st {};
  if (::lstat(s->path.c_str(), &st) != 0) return false;
  return st.st_dev == s->dev && st.st_ino == s->ino && S_ISSOCK(st.st_mode);
}

void SamplePlugin::RestartServers() {
  const Config& config = core_->config();
  const bool registry_mode = config.registration.mode == RegistrationConfig::Mode::kPluginsRegistry;
  StopServer(&registry_server_);
  StopServer(&dp_server_);
  if (config.registration.serve_before_register || registry_mode) {
    absl::Status s = StartDevicePluginServer();
    if (!s.ok()) DM_ERROR(std::string(s.message()), "Could not restart the device plugin server");
  }
  if (registry_mode) {
    absl::Status s = StartRegistryServer();
    if (!s.ok()) DM_ERROR(std::string(s.message()), "Could not restart the registration server");
  }
}

void SamplePlugin::Register() {
  const Config& config = core_->config();
  const FaultConfig* f = core_->CountCall(Rpc::kRegister);
  // Overrides follow the fault's skip_calls/times window.
  const RegisterOverrides o = f != nullptr ? config.register_overrides : RegisterOverrides{};
  auto stopping = [this] { return core_->stopping(); };
  if (o.skip) {
    DM_INFO("Not registering (faults.register.skip)", {"resource", config.resource});
    return;
  }
  if (f != nullptr && f->exit_code) {
    core_->RequestExit(*f->exit_code);
    return;
  }
  if (f != nullptr && f->delay > absl::ZeroDuration() &&
      !core_->devices().SleepUntil(absl::Now() + f->delay, stopping)) {
    return;
  }
  v1beta1::RegisterRequest req;
  req.set_version(o.version.value_or("v1beta1"));
  req.set_endpoint(o.endpoint.value_or(config.socket));
  req.set_resource_name(o.resource.value_or(config.resource));
  req.mutable_options()->set_pre_start_required(config.pre_start_required);
  req.mutable_options()->set_get_preferred_allocation_available(
      config.get_preferred_allocation_available);

  const std::string kubelet_socket = JoinPath(options_.dir, kKubeletSocketName);
  grpc::ChannelArguments args;
  args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, "localhost");
  auto channel =
      grpc::CreateCustomChannel("unix:" + kubelet_socket, grpc::InsecureChannelCredentials(), args);
  auto stub = v1beta1::Registration::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_wait_for_ready(true);
  ctx.set_deadline(
      std::chrono::system_clock::now() +
      std::chrono::milliseconds(absl::ToInt64Milliseconds(config.registration.timeout)));
  {
    absl::MutexLock l(&mu_);
    if (stopped_) return;
    register_ctx_ = &ctx;
  }
  DM_INFO("Registering with the kubelet", {"resource", req.resource_name()},
          {"endpoint", req.endpoint()}, {"kubeletSocket", kubelet_socket});
  v1beta1::Empty resp;
  const grpc::Status status = stub->Register(&ctx, req, &resp);
  {
    absl::MutexLock l(&mu_);
    register_ctx_ = nullptr;
  }
  CallRecord r;
  r.time = absl::Now();
  r.kind = "sent";
  r.method = "Register";
  r.args = {{"version", req.version()},
            {"endpoint", req.endpoint()},
            {"resource_name", req.resource_name()},
            {"options",
             {{"pre_start_required", req.options().pre_start_required()},
              {"get_preferred_allocation_available",
               req.options().get_preferred_allocation_available()}}}};
  if (!status.ok()) {
    r.error = status.error_message();
    r.error_code = CodeName(status.error_code());
  }
  if (status.ok()) {
    DM_INFO("Registered device plugin with the kubelet", {"resource", req.resource_name()});
  } else {
    DM_ERROR(status.error_message(), "Could not register device plugin",
             {"resource", req.resource_name()}, {"code", CodeName(status.error_code())});
  }
  // Outcome first, so that a waiter on the call log sees it.
  core_->RecordRegistration(status.ok(), status.error_message());
  core_->call_log().Add(std::move(r));
}

void SamplePlugin::Enqueue(Pending p) {
  {
    absl::MutexLock l(&mu_);
    pending_.push_back(p);
  }
  if (watcher_) watcher_->Wake();
}

// The registration loop. Real plugins notice a kubelet restart with an
// fsnotify Create on kubelet.sock, or by their own socket being deleted (the
// new kubelet's CleanupPluginDirectory removes every socket before it listens
// on a fresh kubelet.sock), and then serve again and call Register again
// (reference section 4, "Restart implications for plugins"). This loop does
// both, taking care to register exactly once per new kubelet:
//   - own socket gone: serve again at once; register when kubelet.sock is
//     re-created, or after kSocketLossSettle if it is not (only our socket
//     was removed and the kubelet is still there);
//   - kubelet.sock created: serve again (unless just done) and register.
void SamplePlugin::Loop() {
  const Config& config = core_->config();
  LoopState st;
  st.registry_mode = config.registration.mode == RegistrationConfig::Mode::kPluginsRegistry;
  st.kubelet_socket = JoinPath(options_.dir, kKubeletSocketName);
  if (!st.registry_mode) {
    if (Exists(st.kubelet_socket)) {
      st.need_register = true;
    } else {
      DM_INFO("Waiting for the kubelet socket to appear", {"path", st.kubelet_socket});
    }
  }
  ProcessControlFile();

  while (!core_->stopping()) {
    if (ActOnNeeds(st)) continue;  // look at the world again before waiting
    bool woken = false;
    const std::vector<DirWatcher::Event> events = watcher_->Wait(LoopWait(st), &woken);
    if (core_->stopping()) break;
    TakePending(st);
    bool kubelet_created = false;
    // Whether the plugin's own sockets may have gone: after a timeout or a
    // Wake(), lost events, a directory that came back, an event naming one
    // of them, and at least every kLoopPeriod whatever the events. Others
    // (the kubelet's checkpoint writes) need no look.
    const absl::Time now = absl::Now();
    bool look_at_sockets = events.empty() || woken || now - st.sockets_looked_at >= kLoopPeriod;
    for (const DirWatcher::Event& e : events) {
      if (e.overflow || e.name.empty() || NamesOwnSocket(e.dir, e.name)) look_at_sockets = true;
      if (e.dir != options_.dir || !e.created) continue;
      if ((e.name == kKubeletSocketName || (e.name.empty() && Exists(st.kubelet_socket))) &&
          FileIdentity(st.kubelet_socket) != st.registered_kubelet) {
        kubelet_created = true;
      }
    }
    if (look_at_sockets) st.sockets_looked_at = now;
    ProcessControlFile();
    if (!config.registration.reregister || st.need_restart) continue;
    if (config.registration.reregister_delay > absl::ZeroDuration()) {
      DelayedReregistration(st, kubelet_created, look_at_sockets);
    } else {
      ReactToSockets(st, kubelet_created, look_at_sockets);
    }
  }
}

bool SamplePlugin::ActOnNeeds(LoopState& st) {
  const Config& config = core_->config();
  if (st.need_restart) {
    st.need_restart = false;
    DM_INFO("Restarting the device plugin server", {"resource", config.resource});
    RestartServers();
    st.last_restart = absl::Now();
    if (!st.registry_mode && Exists(st.kubelet_socket)) st.need_register = true;
  }
  if (!st.need_register || core_->stopping()) return false;
  st.need_register = false;
  st.registered_kubelet = FileIdentity(st.kubelet_socket);
  Register();
  if (!config.registration.serve_before_register && !dp_server_ && !core_->stopping()) {
    absl::Status s = StartDevicePluginServer();
    if (!s.ok()) DM_ERROR(std::string(s.message()), "Could not serve the device plugin");
  }
  return true;
}

absl::Duration SamplePlugin::LoopWait(const LoopState& st) const {
  absl::Duration wait = kLoopPeriod;
  for (const std::optional<absl::Time>& due : {st.register_after_socket_loss, st.delayed_restart}) {
    if (due) wait = std::max(absl::ZeroDuration(), std::min(wait, *due - absl::Now()));
  }
  return wait;
}

void SamplePlugin::TakePending(LoopState& st) {
  std::vector<Pending> pending;
  {
    absl::MutexLock l(&mu_);
    pending.swap(pending_);
  }
  for (Pending p : pending) {
    switch (p) {
      case Pending::kRestart:
        st.need_restart = true;
        break;
      case Pending::kRegister:
        if (!st.registry_mode) st.need_register = true;
        break;
      case Pending::kStartDevicePluginServer:
        if (!dp_server_) {
          absl::Status s = StartDevicePluginServer();
          if (!s.ok()) DM_ERROR(std::string(s.message()), "Could not serve the device plugin");
        }
        break;
    }
  }
}

void SamplePlugin::DelayedReregistration(LoopState& st, bool kubelet_created,
                                         bool look_at_sockets) {
  // The slow re-registration of the kubernetes e2e sample plugin: any sign of
  // a new kubelet schedules one restart, `reregister_delay` later; nothing is
  // served or registered until then.
  const absl::Duration delay = core_->config().registration.reregister_delay;
  const bool dp_gone = look_at_sockets && dp_server_ && !OwnSocketIntact(dp_server_.get());
  if (!st.delayed_restart && (kubelet_created || dp_gone) && !st.registry_mode) {
    DM_INFO("A new kubelet: restarting the device plugin server later",
            {"delay", absl::FormatDuration(delay)});
    st.delayed_restart = absl::Now() + delay;
  }
  if (st.delayed_restart && absl::Now() >= *st.delayed_restart) {
    st.delayed_restart.reset();
    st.need_restart = true;  // serves again and registers when kubelet.sock exists
  }
}

void SamplePlugin::ReactToSockets(LoopState& st, bool kubelet_created, bool look_at_sockets) {
  const bool dp_lost = look_at_sockets && dp_server_ && !OwnSocketIntact(dp_server_.get());
  const bool registry_lost = look_at_sockets && st.registry_mode && registry_server_ &&
                             !OwnSocketIntact(registry_server_.get());
  if (dp_lost || registry_lost) {
    DM_INFO("The plugin's socket was removed: serving again",
            {"path", dp_lost ? socket_path() : registry_socket_path()});
    RestartServers();
    st.last_restart = absl::Now();
    if (!st.registry_mode && !kubelet_created) {
      st.register_after_socket_loss = absl::Now() + kSocketLossSettle;
    }
  }
  if (kubelet_created && !st.registry_mode) {
    DM_INFO("The kubelet socket was (re)created: registering again", {"path", st.kubelet_socket});
    st.register_after_socket_loss.reset();
    if (absl::Now() - st.last_restart > kSocketLossSettle) {
      RestartServers();
      st.last_restart = absl::Now();
    }
    st.need_register = true;
  }
  if (st.register_after_socket_loss && absl::Now() >= *st.register_after_socket_loss) {
    st.register_after_socket_loss.reset();
    if (Exists(st.kubelet_socket)) st.need_register = true;
  }
}

void SamplePlugin::HealthChanges() {
  auto stopping = [this] { return core_->stopping(); };
  for (const HealthChange& hc : core_->config().health_changes) {
    if (!core_->devices().SleepUntil(start_time_ + hc.after, stopping)) return;
    if (!hc.add.empty()) {
      for (const DeviceConfig& d : hc.add) {
        DM_INFO("Scheduled device addition", {"device", d.id});
        core_->devices().AddDevice(d);
      }
      continue;
    }
    DM_INFO("Scheduled health change", {"device", hc.device}, {"health", hc.health});
    if (!core_->devices().SetHealth(hc.device, hc.health)) {
      DM_WARN("Scheduled health change for an unknown device", {"device", hc.device});
    }
  }
}

void SamplePlugin::ProcessControlFile() {
  if (!control_) return;
  for (const std::string& line : control_->ReadNewLines()) {
    absl::Status s = ApplyControl(line);
    if (!s.ok()) {
      DM_ERROR(std::string(s.message()), "Bad control command", {"line", line},
               {"file", control_->path()});
    }
  }
}

absl::Status SamplePlugin::ApplyControl(const std::string& line) {
  absl::StatusOr<std::optional<ControlCommand>> c = ParseControlLine(line);
  if (!c.ok()) return c.status();
  if (!c->has_value()) return absl::OkStatus();
  DM_INFO("Control command", {"command", line});
  RunCommand(**c);
  return absl::OkStatus();
}

void SamplePlugin::RunCommand(const ControlCommand& c) {
  using Kind = ControlCommand::Kind;
  switch (c.kind) {
    case Kind::kHealth:
      if (!core_->devices().SetHealth(c.device.id, c.device.health)) {
        DM_WARN("Control: unknown device", {"device", c.device.id});
      }
      break;
    case Kind::kAdd:
      core_->devices().AddDevice(c.device);
      break;
    case Kind::kRemove:
      if (!core_->devices().RemoveDevice(c.device.id)) {
        DM_WARN("Control: unknown device", {"device", c.device.id});
      }
      break;
    case Kind::kEndStreams:
      core_->EndStreams();
      break;
    case Kind::kRestart:
      Enqueue(Pending::kRestart);
      break;
    case Kind::kRegister:
      Enqueue(Pending::kRegister);
      break;
  }
}

bool SamplePlugin::SetHealth(const std::string& device_id, const std::string& health) {
  return core_->devices().SetHealth(device_id, health);
}

void SamplePlugin::SetDevices(std::vector<DeviceConfig> devices) {
  core_->devices().SetDevices(std::move(devices));
}

std::vector<DeviceConfig> SamplePlugin::Devices() const { return core_->devices().Devices(); }

void SamplePlugin::EndStreams() { core_->EndStreams(); }

bool SamplePlugin::WaitForRegistered(absl::Duration timeout) const {
  return core_->WaitForRegistrations(1, timeout);
}

bool SamplePlugin::WaitForRegistrations(int n, absl::Duration timeout) const {
  return core_->WaitForRegistrations(n, timeout);
}

int SamplePlugin::registrations() const { return core_->registrations(); }

std::string SamplePlugin::last_registration_error() const {
  return core_->last_registration_error();
}

std::vector<CallRecord> SamplePlugin::CallLog() const { return core_->call_log().Records(); }

bool SamplePlugin::WaitForCalls(const std::string& method, int n, absl::Duration timeout) const {
  return core_->call_log().WaitForCount(method, n, timeout);
}

std::optional<int> SamplePlugin::exit_requested() const { return core_->exit_requested(); }

}  // namespace devmgr::plugin
