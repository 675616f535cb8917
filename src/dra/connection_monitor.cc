#include "dra/connection_monitor.h"

#include <utility>

namespace devmgr::dra {
namespace {

void* TagOf(uint64_t id) { return reinterpret_cast<void*>(static_cast<uintptr_t>(id)); }
uint64_t IdOf(void* tag) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(tag)); }

}  // namespace

ConnectionMonitor::ConnectionMonitor(std::function<void(uint64_t, bool)> on_change,
                                     absl::Duration recheck)
    : on_change_(std::move(on_change)), recheck_(recheck), thread_([this] { Loop(); }) {}

ConnectionMonitor::~ConnectionMonitor() { Stop(); }

void ConnectionMonitor::Watch(uint64_t id, std::shared_ptr<grpc::Channel> channel) {
  absl::MutexLock l(&mu_);
  if (stopping_) return;
  Entry& e = entries_[id];
  e.channel = std::move(channel);
  // Kubelet's client connects at registration and keeps the connection up.
  e.last = e.channel->GetState(/*try_to_connect=*/true);
  e.connected = false;
  ArmLocked(id, e);
}

void ConnectionMonitor::Unwatch(uint64_t id) {
  absl::MutexLock l(&mu_);
  // The armed notification still comes; Loop drops it.
  entries_.erase(id);
}

void ConnectionMonitor::Stop() {
  {
    absl::MutexLock l(&mu_);
    if (stopping_) {
      // A second Stop waits for nothing: the first one joins.
      return;
    }
    stopping_ = true;
    entries_.clear();
    // No notification is armed after this (ArmLocked runs under mu_ and
    // checks stopping_); the armed ones drain within recheck_.
    cq_.Shutdown();
  }
  if (thread_.joinable()) thread_.join();
}

void ConnectionMonitor::ArmLocked(uint64_t id, Entry& e) {
  if (stopping_) return;
  e.channel->NotifyOnStateChange(e.last, absl::ToChronoTime(absl::Now() + recheck_), &cq_,
                                 TagOf(id));
}

void ConnectionMonitor::Loop() {
  void* tag = nullptr;
  bool ok = false;
  while (cq_.Next(&tag, &ok)) {
    const uint64_t id = IdOf(tag);
    bool report = false;
    bool connected = false;
    {
      absl::MutexLock l(&mu_);
      auto it = entries_.find(id);
      if (it == entries_.end() || stopping_) continue;
      Entry& e = it->second;
      // Either the state changed (ok) or recheck_ passed; both re-read it.
      // An IDLE channel (what a dropped connection leaves) is asked to
      // reconnect, as the kubelet's client keeps trying.
      e.last = e.channel->GetState(/*try_to_connect=*/true);
      connected = e.last == GRPC_CHANNEL_READY;
      report = connected != e.connected;
      e.connected = connected;
      ArmLocked(id, e);
    }
    if (report) on_change_(id, connected);
  }
}

}  // namespace devmgr::dra
