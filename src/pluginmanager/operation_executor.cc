#include "pluginmanager/operation_executor.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "fmt/format.h"

namespace devmgr::pluginmanager {

// One registration attempt of one socket.
struct OperationExecutor::Attempt {
  std::string path;
  SocketIdentity id;
  std::unique_ptr<RegistrationClient> client;
  RegistrationInfo info;
  // The plugin entered the actual state and was not taken out again.
  bool added = false;
};

OperationExecutor::OperationExecutor(OperationExecutorOptions opts, RegistrationDialer dialer,
                                     const HandlerMap* handlers, ActualStateOfWorld* asw)
    : opts_(opts), dialer_(std::move(dialer)), handlers_(handlers), asw_(asw) {}

OperationExecutor::~OperationExecutor() { Stop(); }

void OperationExecutor::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  std::map<std::string, std::unique_ptr<Operation>> pending;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    pending.swap(pending_);
  }
  for (auto& [path, op] : pending) {
    if (op->thread.joinable()) op->thread.join();
  }
}

bool OperationExecutor::Stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

bool OperationExecutor::IsOperationPending(const std::string& socket_path) const {
  absl::MutexLock lock(&mu_);
  return pending_.count(socket_path) > 0;
}

void OperationExecutor::RegisterPlugin(const std::string& socket_path, SocketIdentity id) {
  absl::MutexLock lock(&mu_);
  if (stopping_ || pending_.count(socket_path) > 0) return;
  auto b = backoff_.find(socket_path);
  if (b != backoff_.end() && b->second.id == id && absl::Now() < b->second.not_before) return;
  auto op = std::make_unique<Operation>();
  Operation* raw = op.get();
  pending_[socket_path] = std::move(op);
  raw->thread = std::thread([this, socket_path, id] { RunOperation(socket_path, id); });
}

void OperationExecutor::UnregisterPlugin(const PluginInfo& info) {
  asw_->RemovePlugin(info.socket_path);
  DM_VINFO(2, "DeRegister plugin", {"pluginName", info.name}, {"endpoint", info.endpoint});
  info.handler->DeRegisterPlugin(info.name, info.endpoint);
}

void OperationExecutor::ForgetBackoffs(const std::map<std::string, SocketIdentity>& desired) {
  absl::MutexLock lock(&mu_);
  for (auto it = backoff_.begin(); it != backoff_.end();) {
    auto d = desired.find(it->first);
    it = (d == desired.end() || !(d->second == it->second.id)) ? backoff_.erase(it) : ++it;
  }
}

void OperationExecutor::ReapDoneOperations() {
  std::vector<std::unique_ptr<Operation>> done;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second->done) {
        done.push_back(std::move(it->second));
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& op : done) op->thread.join();
}

void OperationExecutor::RunOperation(const std::string& socket_path, SocketIdentity id) {
  Attempt attempt{socket_path, id};
  const std::string err = Register(&attempt);
  if (!err.empty()) {
    DM_ERROR(err, "OperationExecutor.RegisterPlugin failed", {"path", socket_path});
  }
  absl::MutexLock lock(&mu_);
  // Known difference before 1.36 (docs/profiles.md, "Plugin-watcher
  // failures"): the kubelet's goroutinemap backs the path off after any
  // failed operation, the plugin added or not, and refuses its
  // UnregisterPlugin meanwhile (k8s.io/kubernetes v1.35.4,
  // pkg/util/goroutinemap/goroutinemap.go, operationComplete).
  if (!attempt.added && !err.empty()) {
    Backoff& b = backoff_[socket_path];
    if (b.id == id && b.next > absl::ZeroDuration()) {
      b.next = std::min(b.next * 2, opts_.max_retry_backoff);
    } else {
      b.id = id;
      b.next = opts_.initial_retry_backoff;
    }
    b.not_before = absl::Now() + b.next;
  }
  auto it = pending_.find(socket_path);
  if (it != pending_.end()) it->second->done = true;
}

std::string OperationExecutor::NotifyFailure(Attempt* a, const std::string& error,
                                             const std::string& reported) {
  if (absl::Status s = a->client->NotifyRegistrationStatus(false, error, opts_.notify_timeout);
      !s.ok()) {
    return fmt::format("RegisterPlugin error -- failed to send error at socket {}, err: {}",
                       a->path, std::string(s.message()));
  }
  return reported;
}

std::string OperationExecutor::Register(Attempt* a) {
  DM_VINFO(2, "RegisterPlugin started", {"path", a->path});
  auto client = dialer_(a->path, opts_.dial_timeout, [this] { return Stopping(); });
  if (!client.ok()) {
    return fmt::format("RegisterPlugin error -- dial failed at socket {}, err: {}", a->path,
                       std::string(client.status().message()));
  }
  a->client = std::move(*client);
  absl::StatusOr<RegistrationInfo> info = a->client->GetInfo(opts_.get_info_timeout);
  if (!info.ok()) {
    return fmt::format(
        "RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket {}, err: {}",
        a->path, std::string(info.status().message()));
  }
  a->info = std::move(*info);
  auto handler = handlers_->find(a->info.type);
  if (handler == handlers_->end()) {
    const std::string msg = fmt::format(
        "RegisterPlugin error -- no handler registered for plugin type: {} at socket {}",
        a->info.type, a->path);
    return NotifyFailure(a, msg, msg);
  }
  return RegisterWithHandler(a, handler->second);
}

std::string OperationExecutor::RegisterWithHandler(Attempt* a, PluginHandler* handler) {
  const RegistrationInfo& info = a->info;
  const std::string endpoint = info.endpoint.empty() ? a->path : info.endpoint;
  if (absl::Status s = handler->ValidatePlugin(info.name, endpoint, info.supported_versions);
      !s.ok()) {
    return NotifyFailure(
        a,
        fmt::format("RegisterPlugin error -- plugin validation failed with err: {}",
                    std::string(s.message())),
        "RegisterPlugin error -- pluginHandler.ValidatePluginFunc failed");
  }
  // The plugin enters the actual state before the handler is called, so that
  // a removal during RegisterPlugin becomes a DeRegisterPlugin.
  asw_->AddPlugin(PluginInfo{a->path, a->id, handler, info.name, endpoint});
  {
    absl::MutexLock lock(&mu_);
    backoff_.erase(a->path);
  }
  a->added = true;
  if (absl::Status s = handler->RegisterPlugin(info.name, endpoint, info.supported_versions);
      !s.ok()) {
    const std::string msg =
        fmt::format("RegisterPlugin error -- plugin registration failed with err: {}",
                    std::string(s.message()));
    const absl::Status sent = a->client->NotifyRegistrationStatus(false, msg, opts_.notify_timeout);
    if (opts_.deregister_failed_registrations) {
      // 1.36+: out of the actual state, to be retried with backoff.
      asw_->RemovePlugin(a->path);
      a->added = false;
      return sent.ok() ? msg : fmt::format("{}: {}", msg, std::string(sent.message()));
    }
    // Known difference (docs/profiles.md): v1.30.0-v1.35.4 return `msg`
    // here too (operation_generator.go, notifyPlugin returns the text sent).
    return sent.ok() ? "" : fmt::format("{}: {}", msg, std::string(sent.message()));
  }
  if (absl::Status s = a->client->NotifyRegistrationStatus(true, "", opts_.notify_timeout);
      !s.ok()) {
    if (opts_.deregister_failed_registrations) {
      // 1.36+: the registered plugin is deregistered and retried.
      asw_->RemovePlugin(a->path);
      handler->DeRegisterPlugin(info.name, endpoint);
      a->added = false;
    }
    return fmt::format(
        "RegisterPlugin error -- failed to send registration status at socket {}, err: {}", a->path,
        std::string(s.message()));
  }
  return "";
}

}  // namespace devmgr::pluginmanager
