// ManagerImpl: Start, Stop and the checkpoint (devicemanager manager.go
// writeCheckpoint and readCheckpoint; docs/checkpoint_format.md).
#include <utility>

#include "checkpoint/checkpoint.h"
#include "common/go_format.h"
#include "common/logging.h"
#include "fmt/format.h"
#include "manager/manager_impl.h"

namespace devmgr::manager {

absl::Status ManagerImpl::Start(StartOptions opts) {
  DM_VINFO(2, "Starting Device Plugin manager");
  {
    absl::MutexLock l(&mu_);
    start_opts_ = std::move(opts);
  }
  // The kubelet makes the directory when it builds its checkpoint manager
  // (NewCheckpointManager -> NewFileStore), before the registration server
  // starts, and cannot start without it.
  if (absl::Status s = store_.EnsureDirectory(); !s.ok()) {
    return absl::Status(s.code(), fmt::format("failed to initialize checkpoint manager: {}",
                                              std::string(s.message())));
  }
  // Fail-open: a missing, unreadable or corrupt checkpoint leaves the state
  // empty and is only logged; the file is overwritten at the next write.
  absl::Status s = ReadCheckpoint();
  if (!s.ok()) {
    DM_ERROR(std::string(s.message()),
             "Continue after failing to read checkpoint file. Device allocation info may NOT be "
             "up-to-date");
  }
  NotifyChange();
  return absl::OkStatus();
}

void ManagerImpl::Stop() {
  std::vector<std::pair<std::string, PluginClient*>> connected;
  {
    absl::MutexLock l(&mu_);
    if (stopped_) return;
    stopped_ = true;
    for (const auto& [r, info] : endpoints_) {
      if (info.e->client() != nullptr) connected.emplace_back(r, info.e->client());
    }
  }
  // The registration server's Stop disconnects every tracked client.
  for (const auto& [r, client] : connected) PluginDisconnected(r, client);
}

absl::Status ManagerImpl::ReadCheckpoint() {
  absl::StatusOr<std::string> bytes = store_.Read(checkpoint::kCheckpointName);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) {
      // ErrCheckpointNotFound: logged, and Start goes on with empty state.
      DM_INFO("Failed to read data from checkpoint", {"checkpoint", checkpoint::kCheckpointName},
              {"err", "checkpoint is not found"});
      return absl::OkStatus();
    }
    return bytes.status();
  }
  // The current (V2) format; its error is the one reported when the 1.30
  // V1 fallback does not apply or fails too.
  absl::StatusOr<checkpoint::Checkpoint> cp = checkpoint::DecodeV2(*bytes);
  absl::Status err;
  if (!cp.ok()) {
    err = cp.status();
  } else if (!checkpoint::ChecksumMatches(*cp)) {
    err = absl::DataLossError("checkpoint is corrupted");
  }
  if (!err.ok()) {
    if (!opts_.profile.v1_checkpoint_fallback) return err;
    // 1.30 (checkpointv1.go): retry as a pre-1.20 file; every device lands
    // on NUMA node 0.
    absl::StatusOr<checkpoint::Checkpoint> v1 = checkpoint::DecodeV1(*bytes);
    if (!v1.ok() || !checkpoint::ChecksumMatches(*v1)) return err;
    DM_INFO("Read data from a checkpoint V1 file", {"checkpoint", checkpoint::kCheckpointName});
    cp = checkpoint::ConvertV1ToV2(*v1);
  }

  const checkpoint::CheckpointData& data = cp->data;
  {
    absl::MutexLock l(&mu_);
    if (data.pod_device_entries.has_value()) {
      pod_devices_.FromCheckpointData(*data.pod_device_entries);
    }
    allocated_devices_ = pod_devices_.Devices();
    if (data.registered_devices.has_value()) {
      const absl::Time now = clock_->Now();
      for (const auto& [resource, ids] : *data.registered_devices) {
        // The device lists are ignored: the resource waits, at 0/0, for its
        // plugin to register again, or for the grace period to remove it.
        devices_.SetEmpty(resource);
        endpoints_[resource] = EndpointInfo{Endpoint::NewStopped(resource, now), std::nullopt};
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ManagerImpl::WriteCheckpoint() {
  absl::MutexLock w(&checkpoint_mu_);
  std::vector<checkpoint::IncrementalEncoder::Resource> registered;
  {
    absl::MutexLock l(&mu_);
    // The entries by reference: the encoder copies only those it has not
    // rendered at their version (an allocation's one); rendering waits for
    // Render, outside mu_.
    bool nil = false;
    const std::vector<checkpoint::IncrementalEncoder::EntryRef> entries =
        pod_devices_.CheckpointEntryRefs(&nil);
    encoder_.SetEntryRefs(nil, entries);
    // Every resource with a healthy key, unhealthy devices left out; an
    // empty set is written as [] (never null). A list is copied only when
    // its device sets changed since the last write: the encoder keeps the
    // rendering of the others.
    for (const std::string& resource : devices_.HealthyResources()) {
      checkpoint::IncrementalEncoder::Resource& r = registered.emplace_back();
      r.name = resource;
      r.version = devices_.Version(resource);
      if (encoder_.NeedsIds(resource, r.version)) r.ids.emplace(devices_.HealthyIds(resource));
    }
  }
  // Rendered without mu_; the bytes equal Encode(MakeV2(data)).
  encoder_.SetRegistered(/*nil=*/false, std::move(registered));
  const checkpoint::IncrementalEncoder::Output out = encoder_.Render();
  absl::Status s = store_.Write(checkpoint::kCheckpointName, out.bytes);
  if (!s.ok()) {
    return absl::Status(
        s.code(), fmt::format("failed to write checkpoint file {}: {}",
                              GoQuote(checkpoint::kCheckpointName), std::string(s.message())));
  }
  return absl::OkStatus();
}

}  // namespace devmgr::manager
