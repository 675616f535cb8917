#include "transport/plugin_watcher.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/fs.h"
#include "common/go_format.h"
#include "common/logging.h"
#include "fmt/format.h"
#include "grpcpp/client_context.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "transport/go_grpc_error.h"
#include "transport/grpc_plugin_client.h"

namespace devmgr::transport {
namespace {

// pluginregistration's type constant for device plugins.
constexpr char kDevicePluginType[] = "DevicePlugin";

void Walk(const std::string& dir, std::map<std::string, std::pair<ino_t, int64_t>>* out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  for (const std::string& name : names) {
    // The plugin watcher ignores every name starting with '.' (and so "."
    // and "..").
    if (name.empty() || name[0] == '.') continue;
    const std::string path = dir + "/" + name;
    struct stat lst {};
    if (::lstat(path.c_str(), &lst) != 0) continue;
    if (S_ISDIR(lst.st_mode)) {
      Walk(path, out);
      continue;
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    const int64_t mtime_ns =
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    (*out)[path] = {st.st_ino, mtime_ns};
  }
}

}  // namespace

PluginWatcher::PluginWatcher(PluginWatcherOptions opts, WatcherPluginHandler* handler)
    : opts_(std::move(opts)), handler_(handler) {}

PluginWatcher::~PluginWatcher() { Stop(); }

absl::Status PluginWatcher::Start() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (started_ || stopping_)
      return absl::FailedPreconditionError("plugin watcher already started");
    started_ = true;
  }
  if (absl::Status s = fs::MkdirAll(*fs::Default(), opts_.dir, 0755); !s.ok()) {
    return absl::InternalError(
        fmt::format("error (re-)creating root {}: {}", opts_.dir, std::string(s.message())));
  }
  DM_INFO("Plugin Watcher Start", {"path", opts_.dir});
  loop_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void PluginWatcher::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  std::map<std::string, std::unique_ptr<Operation>> pending;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (loop_.joinable()) loop_.join();
  {
    absl::MutexLock lock(&mu_);
    pending.swap(pending_);
  }
  for (auto& [path, op] : pending) {
    if (op->thread.joinable()) op->thread.join();
  }
}

std::vector<std::string> PluginWatcher::RegisteredSockets() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [path, reg] : actual_) out.push_back(path);
  return out;
}

void PluginWatcher::Unregister(const std::string& path, const std::string& name,
                               const std::string& endpoint, bool deregister) {
  {
    absl::MutexLock lock(&mu_);
    actual_.erase(path);
  }
  if (deregister) handler_->DeRegisterPlugin(name, endpoint);
}

bool PluginWatcher::Stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

void PluginWatcher::Loop() {
  while (true) {
    Reconcile();
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), opts_.period)) return;
  }
}

std::map<std::string, PluginWatcher::SocketId> PluginWatcher::Scan() const {
  std::map<std::string, std::pair<ino_t, int64_t>> raw;
  Walk(opts_.dir, &raw);
  std::map<std::string, SocketId> out;
  for (const auto& [path, id] : raw) out[path] = SocketId{id.first, id.second};
  return out;
}

void PluginWatcher::ReapDoneOperations() {
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

void PluginWatcher::Reconcile() {
  ReapDoneOperations();
  const std::map<std::string, SocketId> desired = Scan();

  // Sockets gone (or re-created, i.e. a new identity) are deregistered first.
  std::vector<Registered> gone;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = actual_.begin(); it != actual_.end();) {
      auto d = desired.find(it->first);
      if (d == desired.end() || !(d->second == it->second.id)) {
        gone.push_back(it->second);
        it = actual_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = backoff_.begin(); it != backoff_.end();) {
      auto d = desired.find(it->first);
      it = (d == desired.end() || !(d->second == it->second.id)) ? backoff_.erase(it) : ++it;
    }
  }
  for (const Registered& reg : gone) {
    DM_VINFO(2, "DeRegister plugin", {"pluginName", reg.name}, {"endpoint", reg.endpoint});
    handler_->DeRegisterPlugin(reg.name, reg.endpoint);
  }

  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  const absl::Time now = absl::Now();
  for (const auto& [path, id] : desired) {
    if (actual_.count(path) > 0 || pending_.count(path) > 0) continue;
    auto b = backoff_.find(path);
    if (b != backoff_.end() && b->second.id == id && now < b->second.not_before) continue;
    auto op = std::make_unique<Operation>();
    Operation* raw = op.get();
    pending_[path] = std::move(op);
    raw->thread = std::thread([this, path = path, id = id] { RegisterOperation(path, id); });
  }
}

void PluginWatcher::RegisterOperation(const std::string& path, SocketId id) {
  // Returns the operation's error ("" on success) and whether the plugin
  // entered the actual state of the world (then it is not retried).
  bool added = false;
  auto notify = [&](pluginregistration::Registration::Stub* stub, bool registered,
                    const std::string& error) -> grpc::Status {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + opts_.notify_timeout));
    pluginregistration::RegistrationStatus req;
    req.set_plugin_registered(registered);
    req.set_error(error);
    pluginregistration::RegistrationStatusResponse resp;
    return stub->NotifyRegistrationStatus(&ctx, req, &resp);
  };
  auto run = [&]() -> std::string {
    DM_VINFO(2, "RegisterPlugin started", {"path", path});
    auto channel = NewUnixChannel(path, kDefaultMaxRecvMsgSize);
    if (absl::Status s =
            WaitForReady(channel.get(), opts_.dial_timeout, [this] { return Stopping(); });
        !s.ok()) {
      return fmt::format("RegisterPlugin error -- dial failed at socket {}, err: {}", path,
                         std::string(s.message()));
    }
    auto stub = pluginregistration::Registration::NewStub(channel);
    pluginregistration::PluginInfo info;
    {
      grpc::ClientContext ctx;
      ctx.set_deadline(absl::ToChronoTime(absl::Now() + opts_.get_info_timeout));
      const grpc::Status st = stub->GetInfo(&ctx, pluginregistration::InfoRequest(), &info);
      if (!st.ok()) {
        return fmt::format(
            "RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket {}, "
            "err: {}",
            path, GoRpcErrorText(st));
      }
    }
    if (info.type() != kDevicePluginType) {
      const std::string msg = fmt::format(
          "RegisterPlugin error -- no handler registered for plugin type: {} at socket {}",
          info.type(), path);
      if (grpc::Status st = notify(stub.get(), false, msg); !st.ok()) {
        return fmt::format("RegisterPlugin error -- failed to send error at socket {}, err: {}",
                           path, GoRpcErrorText(st));
      }
      return msg;
    }
    const std::string endpoint = info.endpoint().empty() ? path : info.endpoint();
    const std::vector<std::string> versions(info.supported_versions().begin(),
                                            info.supported_versions().end());
    if (absl::Status s = handler_->ValidatePlugin(info.name(), endpoint, versions); !s.ok()) {
      const std::string msg =
          fmt::format("RegisterPlugin error -- plugin validation failed with err: {}",
                      std::string(s.message()));
      if (grpc::Status st = notify(stub.get(), false, msg); !st.ok()) {
        return fmt::format("RegisterPlugin error -- failed to send error at socket {}, err: {}",
                           path, GoRpcErrorText(st));
      }
      return "RegisterPlugin error -- pluginHandler.ValidatePluginFunc failed";
    }
    // The kubelet adds the plugin to its actual state before calling the
    // handler, so a removal during RegisterPlugin becomes a DeRegister.
    {
      absl::MutexLock lock(&mu_);
      actual_[path] = Registered{id, info.name(), endpoint};
      backoff_.erase(path);
      added = true;
    }
    if (absl::Status s = handler_->RegisterPlugin(info.name(), endpoint, versions); !s.ok()) {
      const std::string msg =
          fmt::format("RegisterPlugin error -- plugin registration failed with err: {}",
                      std::string(s.message()));
      grpc::Status st = notify(stub.get(), false, msg);
      if (opts_.deregister_failed_registrations) {
        // 1.36+: out of the actual state, to be retried with backoff.
        Unregister(path, info.name(), endpoint, /*deregister=*/false);
        added = false;
        return st.ok() ? msg : fmt::format("{}: {}", msg, GoRpcErrorText(st));
      }
      if (!st.ok()) return fmt::format("{}: {}", msg, GoRpcErrorText(st));
      return "";
    }
    if (grpc::Status st = notify(stub.get(), true, ""); !st.ok()) {
      if (opts_.deregister_failed_registrations) {
        // 1.36+: the registered plugin is deregistered and retried.
        Unregister(path, info.name(), endpoint, /*deregister=*/true);
        added = false;
      }
      return fmt::format(
          "RegisterPlugin error -- failed to send registration status at socket {}, err: {}", path,
          GoRpcErrorText(st));
    }
    return "";
  };

  const std::string err = run();
  if (!err.empty()) {
    DM_ERROR(err, "OperationExecutor.RegisterPlugin failed", {"path", path});
  }
  absl::MutexLock lock(&mu_);
  if (!added && !err.empty()) {
    Backoff& b = backoff_[path];
    if (b.id == id && b.next > absl::ZeroDuration()) {
      b.next = std::min(b.next * 2, opts_.max_retry_backoff);
    } else {
      b.id = id;
      b.next = opts_.initial_retry_backoff;
    }
    b.not_before = absl::Now() + b.next;
  }
  auto it = pending_.find(path);
  if (it != pending_.end()) it->second->done = true;
}

}  // namespace devmgr::transport
