#include "plugin/plugin_core.h"

namespace devmgr::plugin {
namespace {

bool HasEffect(const FaultConfig& f) {
  return f.delay > absl::ZeroDuration() || f.error.has_value() || f.hang ||
         f.exit_code.has_value() || f.empty || f.wrong_count.has_value() ||
         f.end_stream_after.has_value() || f.grow_on_allocate;
}

}  // namespace

PluginCore::PluginCore(Config config) : config_(std::move(config)), devices_(config_.devices) {}

const FaultConfig* PluginCore::CountCall(Rpc rpc) {
  const int n = ++calls_[static_cast<int>(rpc)];
  const FaultConfig& f = config_.fault(rpc);
  const RegisterOverrides& o = config_.register_overrides;
  const bool overrides =
      rpc == Rpc::kRegister && (o.version || o.resource || o.endpoint || o.type || o.skip);
  if (!HasEffect(f) && !overrides) return nullptr;
  if (n <= f.skip_calls) return nullptr;
  if (f.times >= 0 && n > f.skip_calls + f.times) return nullptr;
  return &f;
}

void PluginCore::SetStopping() {
  stopping_ = true;
  devices_.WakeAll();
}

void PluginCore::EndStreams() {
  ++stream_epoch_;
  devices_.WakeAll();
}

void PluginCore::SetExitHandler(std::function<void(int)> handler) {
  absl::MutexLock l(&mu_);
  exit_handler_ = std::move(handler);
}

void PluginCore::RequestExit(int code) {
  std::function<void(int)> handler;
  {
    absl::MutexLock l(&mu_);
    exit_requested_ = code;
    handler = exit_handler_;
  }
  call_log_.Flush();
  if (handler) handler(code);
}

std::optional<int> PluginCore::exit_requested() const {
  absl::MutexLock l(&mu_);
  return exit_requested_;
}

void PluginCore::RecordRegistration(bool ok, const std::string& error) {
  absl::MutexLock l(&mu_);
  if (ok) {
    ++registrations_;
  } else {
    last_registration_error_ = error;
  }
}

int PluginCore::registrations() const {
  absl::MutexLock l(&mu_);
  return registrations_;
}

std::string PluginCore::last_registration_error() const {
  absl::MutexLock l(&mu_);
  return last_registration_error_;
}

bool PluginCore::WaitForRegistrations(int n, absl::Duration timeout) const {
  auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return registrations_ >= n; };
  absl::MutexLock l(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

std::string PluginCore::NextGrownId() { return "grown-" + std::to_string(++grown_); }

}  // namespace devmgr::plugin
