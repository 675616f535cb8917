#include "node/pod_manager.h"

#include <set>

#include "common/logging.h"
#include "fmt/format.h"
#include "node/node.h"

namespace devmgr::node {
namespace {

// A container that keeps running once started: app containers and
// restartable init containers (sidecars). Regular init containers run to
// completion.
bool KeepsRunning(const pod::Pod& p, const std::string& name) {
  for (const pod::Container& c : p.init_containers) {
    if (c.name == name) return c.restartable;
  }
  return true;
}

bool Active(const PodRecord& r) {
  return !r.deleted && r.phase != pod::Phase::kFailed && r.phase != pod::Phase::kSucceeded;
}

}  // namespace

PodManager::PodManager(Node* node, PodManagerOptions opts) : opts_(opts), node_(node) {}

PodManager::SlotIt PodManager::FindSlotLocked(const std::string& key) {
  // A "namespace/name" always contains a '/'; a key without one can only be
  // a UID, found through the index. With a '/', the first record in
  // admission order matching either way wins, as a scan finds it.
  if (key.find('/') == std::string::npos) {
    auto it = by_uid_.find(key);
    return it == by_uid_.end() ? pods_.end() : it->second;
  }
  auto is_ns_name = [&key](const pod::Pod& p) {
    const size_t ns = p.namespace_.size();
    return key.size() == ns + 1 + p.name.size() && key.compare(0, ns, p.namespace_) == 0 &&
           key[ns] == '/' && key.compare(ns + 1, std::string::npos, p.name) == 0;
  };
  for (auto it = pods_.begin(); it != pods_.end(); ++it) {
    if (it->rec.pod.uid == key || is_ns_name(it->rec.pod)) return it;
  }
  return pods_.end();
}

PodRecord* PodManager::FindLocked(const std::string& key) {
  SlotIt it = FindSlotLocked(key);
  return it == pods_.end() ? nullptr : &it->rec;
}

void PodManager::UpdateActiveLocked(SlotIt it) {
  if (Active(it->rec)) {
    active_.emplace(it->seq, it);
  } else {
    active_.erase(it->seq);
  }
}

void PodManager::DropDeletedLocked(SlotIt it) {
  if (opts_.keep_deleted || !it->rec.deleted) return;
  active_.erase(it->seq);
  by_uid_.erase(it->rec.pod.uid);
  pods_.erase(it);
}

std::string PodManager::NewContainerId(const std::string& uid, const std::string& name) {
  return fmt::format("devmgr-{:06d}-{}", next_container_id_++, name);
}

absl::StatusOr<PodRecord> PodManager::AddPod(const pod::Pod& p) {
  Node* node;
  {
    absl::MutexLock l(&mu_);
    if (PodRecord* old = FindLocked(p.uid); old != nullptr) {
      if (Active(*old)) {
        return absl::InvalidArgumentError(
            fmt::format("pod {}/{} (uid {}) already exists", p.namespace_, p.name, p.uid));
      }
      // A deleted or terminated pod re-created with the same UID replaces
      // its record; its old allocations stay until garbage collection.
      // (UIDs are unique among the records, so this is the only one.)
      if (auto it = by_uid_.find(p.uid); it != by_uid_.end()) {
        SlotIt slot = it->second;
        active_.erase(slot->seq);
        by_uid_.erase(it);
        pods_.erase(slot);
      }
    }
    Slot slot;
    slot.seq = next_seq_++;
    PodRecord& rec = slot.rec;
    rec.pod = p;
    rec.phase = pod::Phase::kPending;
    for (const pod::Container* c : pod::AllContainersInKubeletOrder(p)) {
      ContainerRecord cr;
      cr.name = c->name;
      rec.containers.push_back(std::move(cr));
    }
    // The pod is in the kubelet's pod manager (and so among the active
    // pods) while it is being admitted.
    pods_.push_back(std::move(slot));
    SlotIt it = std::prev(pods_.end());
    by_uid_[p.uid] = it;
    UpdateActiveLocked(it);
    node = node_;
  }
  AdmitAndStart(node, p.uid, /*start_containers=*/true);
  absl::MutexLock l(&mu_);
  if (const PodRecord* rec = FindLocked(p.uid); rec != nullptr) return *rec;
  return absl::NotFoundError(
      fmt::format("pod {}/{} (uid {}) was deleted while being added", p.namespace_, p.name, p.uid));
}

void PodManager::AdmitAndStart(Node* node, const std::string& uid, bool start_containers) {
  pod::Pod p;
  {
    absl::MutexLock l(&mu_);
    const PodRecord* rec = FindLocked(uid);
    if (rec == nullptr) return;  // deleted meanwhile, record dropped
    p = rec->pod;
  }
  const topology::AdmitResult r = node->AdmitPod(p);
  {
    absl::MutexLock l(&mu_);
    SlotIt slot = FindSlotLocked(uid);
    if (slot == pods_.end()) return;
    PodRecord* rec = &slot->rec;
    for (ContainerRecord& c : rec->containers) c.numa_affinity = node->NumaAffinity(uid, c.name);
    if (!r.admitted) {
      rec->phase = pod::Phase::kFailed;
      UpdateActiveLocked(slot);
      rec->reason = r.reason;
      rec->message = r.message;
      for (ContainerRecord& c : rec->containers) c.running = false;
      DM_INFO("Pod admission failed", {"pod", p.namespace_ + "/" + p.name}, {"reason", r.reason},
              {"message", r.message});
      return;
    }
  }
  // The pod worker's first sync, after the admission (the kubelet's
  // HandlePodAdditions admits, then hands the pod to its worker): it
  // generates the pod's status, device health included, with its phase,
  // before the containers start.
  node->pod_status().PodAdmitted(p);
  if (!SyncDra(node, p)) return;
  Run(node, uid, start_containers);
  node->DraPodStarted(uid);
}

bool PodManager::SyncDra(Node* node, const pod::Pod& p) {
  const topology::AdmitResult r = node->PrepareDynamicResources(p);
  absl::MutexLock l(&mu_);
  PodRecord* rec = FindLocked(p.uid);
  if (rec == nullptr) return true;  // deleted meanwhile: Run cleans up
  rec->sync_failed = !r.admitted;
  rec->reason = r.reason;
  rec->message = r.message;
  if (!r.admitted) {
    DM_INFO("Pod sync failed; retrying later", {"pod", p.namespace_ + "/" + p.name},
            {"reason", r.reason}, {"message", r.message});
  }
  return r.admitted;
}

void PodManager::Run(Node* node, const std::string& uid, bool start_containers) {
  bool deleted;
  {
    absl::MutexLock l(&mu_);
    SlotIt slot = FindSlotLocked(uid);
    deleted = slot == pods_.end() || slot->rec.deleted;
    if (!deleted) {
      slot->rec.phase = pod::Phase::kRunning;
      UpdateActiveLocked(slot);
    }
  }
  if (deleted) {
    // Deleted while being admitted: the deletion's cleanup may have run
    // before the first sync above, which remembered the pod again.
    ForgetOnNode(node, uid);
    return;
  }
  if (start_containers) StartContainers(node, uid);
}

void PodManager::StartContainers(Node* node, const std::string& uid) {
  pod::Pod p;
  {
    absl::MutexLock l(&mu_);
    const PodRecord* rec = FindLocked(uid);
    if (rec == nullptr) return;
    p = rec->pod;
  }
  for (const pod::Container* c : pod::AllContainersInKubeletOrder(p)) {
    auto opts = node->manager().GetDeviceRunContainerOptions(p, *c);
    const std::vector<std::string> cdi = node->DraCdiDevices(uid, c->name);
    absl::MutexLock l(&mu_);
    PodRecord* rec = FindLocked(uid);
    if (rec == nullptr) return;  // deleted meanwhile, record dropped
    for (ContainerRecord& cr : rec->containers) {
      if (cr.name != c->name) continue;
      cr.container_id = NewContainerId(uid, c->name);
      cr.cdi_devices = cdi;
      if (opts.ok()) {
        cr.run_options = *opts;
        cr.start_error.clear();
        cr.running = KeepsRunning(p, c->name);
      } else {
        cr.start_error = std::string(opts.status().message());
        cr.running = false;
        DM_ERROR(cr.start_error, "Error starting container", {"pod", p.namespace_ + "/" + p.name},
                 {"container", c->name});
      }
    }
  }
}

void PodManager::RetryFailedSyncs() {
  Node* node;
  // A failed pod, and whether its containers must start: not when they run
  // already (a kubelet restart's sync failed while they ran on: the sync
  // that succeeds now leaves them alone, as the kubelet's SyncPod does).
  std::vector<std::pair<pod::Pod, bool>> failed;
  {
    absl::MutexLock l(&mu_);
    node = node_;
    for (const auto& [seq, it] : active_) {
      if (!it->rec.sync_failed) continue;
      bool running = false;
      for (const ContainerRecord& c : it->rec.containers) running |= c.running;
      failed.emplace_back(it->rec.pod, !running);
    }
  }
  for (const auto& [p, start] : failed) {
    if (!SyncDra(node, p)) continue;
    Run(node, p.uid, start);
    node->DraPodStarted(p.uid);
  }
}

void PodManager::ReconcileDra() {
  Node* node;
  {
    absl::MutexLock l(&mu_);
    node = node_;
  }
  (void)node->DraReconcile(ActivePodUids());
}

absl::Status PodManager::DeletePod(const std::string& uid) {
  Node* node;
  std::string pod_uid;
  bool terminated = false;
  {
    absl::MutexLock l(&mu_);
    SlotIt slot = FindSlotLocked(uid);
    if (slot == pods_.end()) return absl::NotFoundError(fmt::format("no pod {}", uid));
    PodRecord* rec = &slot->rec;
    terminated = rec->phase == pod::Phase::kSucceeded || rec->phase == pod::Phase::kFailed;
    rec->deleted = true;
    UpdateActiveLocked(slot);
    for (ContainerRecord& c : rec->containers) c.running = false;
    pod_uid = rec->pod.uid;
    DropDeletedLocked(slot);
    node = node_;
  }
  // A pod whose termination was synced already (SetPhase) is not
  // terminated again: no second UnprepareResources is timed.
  ForgetOnNode(node, pod_uid, /*terminated_before=*/terminated);
  return absl::OkStatus();
}

void PodManager::ForgetOnNode(Node* node, const std::string& uid, bool terminated_before) {
  // The kubelet drops a deleted pod's status (the status manager's orphan
  // cleanup) and its containers' topology hints (as they are removed).
  node->pod_status().PodDeleted(uid);
  node->topology_manager()->RemovePod(uid);
  // The kubelet unprepares a pod's claims when the pod terminates; an error
  // is logged, and the claims stay prepared until a later try succeeds.
  (void)node->DraPodGone(uid, /*observe=*/!terminated_before);
}

absl::Status PodManager::SetPhase(const std::string& uid, pod::Phase phase) {
  const bool terminated = phase == pod::Phase::kSucceeded || phase == pod::Phase::kFailed;
  Node* node;
  std::string pod_uid;
  {
    absl::MutexLock l(&mu_);
    SlotIt slot = FindSlotLocked(uid);
    if (slot == pods_.end()) return absl::NotFoundError(fmt::format("no pod {}", uid));
    PodRecord* rec = &slot->rec;
    rec->phase = phase;
    UpdateActiveLocked(slot);
    if (terminated) {
      for (ContainerRecord& c : rec->containers) c.running = false;
    }
    node = node_;
    pod_uid = rec->pod.uid;
  }
  // A terminated pod's claims are unprepared (the kubelet's
  // syncTerminatedPod), without this class's lock.
  if (terminated) (void)node->DraPodGone(pod_uid);
  return absl::OkStatus();
}

absl::Status PodManager::RestartContainer(const std::string& uid, const std::string& container) {
  Node* node;
  pod::Pod p;
  {
    absl::MutexLock l(&mu_);
    PodRecord* rec = FindLocked(uid);
    if (rec == nullptr) return absl::NotFoundError(fmt::format("no pod {}", uid));
    if (!Active(*rec)) {
      return absl::FailedPreconditionError(
          fmt::format("pod {}/{} is not active", rec->pod.namespace_, rec->pod.name));
    }
    p = rec->pod;
    node = node_;
  }
  const pod::Container* c = pod::FindContainer(p, container);
  if (c == nullptr) {
    return absl::NotFoundError(
        fmt::format("pod {}/{} has no container {}", p.namespace_, p.name, container));
  }
  auto opts = node->manager().GetDeviceRunContainerOptions(p, *c);
  const std::vector<std::string> cdi = node->DraCdiDevices(p.uid, container);
  absl::MutexLock l(&mu_);
  PodRecord* rec = FindLocked(p.uid);
  if (rec == nullptr) return absl::NotFoundError(fmt::format("no pod {}", p.uid));
  for (ContainerRecord& cr : rec->containers) {
    if (cr.name != container) continue;
    cr.container_id = NewContainerId(p.uid, container);
    cr.cdi_devices = cdi;
    ++cr.restart_count;
    if (opts.ok()) {
      cr.run_options = *opts;
      cr.start_error.clear();
      cr.running = KeepsRunning(p, container);
    } else {
      cr.start_error = std::string(opts.status().message());
      cr.running = false;
    }
  }
  return opts.ok() ? absl::OkStatus() : opts.status();
}

std::vector<std::string> PodManager::ActivePodUids() const {
  absl::MutexLock l(&mu_);
  std::vector<std::string> out;
  out.reserve(active_.size());
  for (const auto& [seq, it] : active_) out.push_back(it->rec.pod.uid);
  return out;
}

std::vector<PodRecord> PodManager::Pods() const {
  absl::MutexLock l(&mu_);
  std::vector<PodRecord> out;
  out.reserve(pods_.size());
  for (const Slot& s : pods_) out.push_back(s.rec);
  return out;
}

std::optional<PodRecord> PodManager::Find(const std::string& key) const {
  absl::MutexLock l(&mu_);
  SlotIt it = const_cast<PodManager*>(this)->FindSlotLocked(key);
  if (it == pods_.end()) return std::nullopt;
  return it->rec;
}

manager::StartOptions PodManager::MakeStartOptions(bool node_rebooted) {
  manager::StartOptions o;
  o.active_pod_uids = [this] { return ActivePodUids(); };
  o.sources_ready = [this] { return sources_ready_.load(); };
  absl::MutexLock l(&mu_);
  if (node_rebooted) {
    for (Slot& s : pods_) {
      for (ContainerRecord& c : s.rec.containers) c.running = false;
    }
    return o;
  }
  for (const Slot& s : pods_) {
    const PodRecord& r = s.rec;
    for (const ContainerRecord& c : r.containers) {
      if (c.container_id.empty()) continue;
      o.container_map[{r.pod.uid, c.name}] = c.container_id;
      if (c.running) o.running_container_ids.insert(c.container_id);
    }
  }
  return o;
}

void PodManager::ReadmitAfterRestart(Node* new_node) {
  std::vector<std::string> uids;
  {
    absl::MutexLock l(&mu_);
    node_ = new_node;
    for (const auto& [seq, it] : active_) uids.push_back(it->rec.pod.uid);
  }
  // HandlePodAdditions for the pods that already exist, before the pod
  // sources report ready: running containers take the kubelet-restart
  // shortcut in devicesToAllocate.
  sources_ready_ = false;
  for (const std::string& uid : uids) AdmitAndStart(new_node, uid, /*start_containers=*/false);
  sources_ready_ = true;
}

void PodManager::ReadmitAfterReboot(Node* new_node) {
  std::vector<std::string> uids;
  {
    absl::MutexLock l(&mu_);
    node_ = new_node;
    for (Slot& s : pods_) {
      for (ContainerRecord& c : s.rec.containers) c.running = false;
    }
    for (const auto& [seq, it] : active_) uids.push_back(it->rec.pod.uid);
  }
  for (const std::string& uid : uids) AdmitAndStart(new_node, uid, /*start_containers=*/true);
}

}  // namespace devmgr::node
