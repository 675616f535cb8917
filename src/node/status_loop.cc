#include "node/status_loop.h"

#include "common/fs.h"
#include "common/logging.h"
#include "node/dra_pods.h"
#include "node/status_file.h"

namespace devmgr::node {

void StatusLoop::Start() {
  thread_ = std::thread([this] { Run(); });
}

void StatusLoop::MarkDirty() {
  absl::MutexLock l(&mu_);
  dirty_ = true;
}

void StatusLoop::Stop() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void StatusLoop::Run() {
  absl::Time next_status = absl::Now();
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return dirty_ || stop_; };
      mu_.AwaitWithDeadline(absl::Condition(&ready), next_status);
      if (stop_) return;
      dirty_ = false;
    }
    if (absl::Now() >= next_status) next_status = absl::Now() + opts_.period;
    Pass();
  }
}

void StatusLoop::Pass() {
  NodeResources res = node_->UpdateNodeStatus();
  if (opts_.status_file.empty()) return;
  StatusInput in;
  in.kubelet_version = node_->options().profile.name;
  in.plugin_dir = node_->options().plugin_dir;
  in.registry_dir = node_->options().registry_dir;
  in.node = std::move(res);
  in.resources = node_->manager().Snapshot();
  in.plugins = sup_->Status();
  in.pods = pods_->Pods();
  in.allocations = node_->manager().Allocations();
  in.resource_health_status = node_->resource_health_status();
  in.pod_statuses = node_->PodResourceStatuses();
  in.now = absl::Now();
  nlohmann::json status = BuildStatus(in);
  if (node_->dra_handler() != nullptr && node_->dra_manager() != nullptr) {
    status["dra"] =
        DraStatusJson(*node_->dra_handler(), *node_->dra_manager(), node_->dra_health());
  }
  if (opts_.extra_sections) status.update(opts_.extra_sections());
  const std::string text =
      status.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (absl::Status s = fs::WriteOutputFile(opts_.status_file, text); !s.ok()) {
    DM_ERROR(std::string(s.message()), "Failed to write the status file",
             {"path", opts_.status_file});
  }
}

}  // namespace devmgr::node
