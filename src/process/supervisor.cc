#include "process/supervisor.h"

#include <algorithm>

#include "common/logging.h"

namespace devmgr::node {

Supervisor::~Supervisor() { Stop(absl::Seconds(2)); }

void Supervisor::SetChangeCallback(std::function<void()> cb) {
  absl::MutexLock l(&mu_);
  on_change_ = std::move(cb);
}

absl::Status Supervisor::Add(PluginProcessOptions opts) {
  auto e = std::make_unique<Entry>();
  e->process = std::make_unique<PluginProcess>(std::move(opts));
  if (absl::Status s = e->process->Start(); !s.ok()) return s;
  DM_INFO("Started device plugin process", {"command", e->process->options().command},
          {"pid", static_cast<int>(e->process->pid())});
  Entry* raw = e.get();
  absl::MutexLock l(&mu_);
  if (stopping_) {
    e->process->Stop();
    return absl::CancelledError("supervisor is stopping");
  }
  e->watcher = std::thread([this, raw] { Watch(raw); });
  entries_.push_back(std::move(e));
  return absl::OkStatus();
}

void Supervisor::Watch(Entry* e) {
  absl::Duration backoff = absl::Seconds(1);
  for (;;) {
    // Wait for the process to exit, or for Stop.
    while (!e->process->WaitExit(absl::Milliseconds(200))) {
      absl::MutexLock l(&mu_);
      if (stopping_) return;
    }
    std::function<void()> cb;
    {
      absl::MutexLock l(&mu_);
      if (stopping_) return;
      cb = on_change_;
    }
    const auto code = e->process->exit_code();
    DM_WARN("Device plugin process exited; restarting it",
            {"command", e->process->options().command}, {"exitCode", code.value_or(-1)},
            {"backoff", absl::FormatDuration(backoff)});
    for (const std::string& line : e->process->OutputTail(5)) {
      DM_INFO("Device plugin output", {"line", line});
    }
    if (cb) cb();
    // Back off, waking early on Stop.
    {
      absl::MutexLock l(&mu_);
      auto stopping = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping), backoff)) return;
    }
    backoff = std::min(backoff * 2, absl::Seconds(30));
    if (absl::Status s = e->process->Start(); !s.ok()) {
      DM_ERROR(std::string(s.message()), "Failed to restart device plugin process");
      continue;
    }
    {
      absl::MutexLock l(&mu_);
      ++e->restarts;
      cb = on_change_;
    }
    if (cb) cb();
  }
}

void Supervisor::Stop(absl::Duration grace) {
  std::vector<Entry*> entries;
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    for (auto& e : entries_) entries.push_back(e.get());
  }
  for (Entry* e : entries) {
    if (e->watcher.joinable()) e->watcher.join();
    e->process->Stop(grace);
  }
}

std::vector<PluginProcessStatus> Supervisor::Status() const {
  absl::MutexLock l(&mu_);
  std::vector<PluginProcessStatus> out;
  for (const auto& e : entries_) {
    PluginProcessStatus s;
    s.command = e->process->options().command;
    s.pid = e->process->pid();
    s.running = e->process->running();
    s.restarts = e->restarts;
    s.last_exit_code = e->process->exit_code();
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace devmgr::node
