#include "scenario/run/devmgr_backend.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "apiserver/faults.h"
#include "apiserver/resource_type.h"
#include "common/fs.h"
#include "common/status_util.h"
#include "fmt/format.h"
#include "process/plugin_process.h"
#include "scenario/expect/expectations.h"

namespace devmgr::scenario {

// ---- the kubelet ----

absl::Status DevmgrBackend::StopKubelet() {
  ctx_.StopKubelet();
  return absl::OkStatus();
}

absl::Status DevmgrBackend::StartKubelet(bool wait, absl::Duration timeout) {
  if (ctx_.kubelet_running()) {
    return absl::FailedPreconditionError(
        "start_kubelet: the kubelet is running (stop it with stop_kubelet first, or use "
        "restart_kubelet)");
  }
  return ctx_.StartKubelet(/*rebooted=*/false, {}, wait, timeout);
}

absl::Status DevmgrBackend::RestartKubelet(bool wait, absl::Duration timeout) {
  return ctx_.StartKubelet(/*rebooted=*/false, {}, wait, timeout);
}

absl::Status DevmgrBackend::RebootNode(const std::vector<PluginHost*>& stopped, bool wait,
                                       absl::Duration timeout) {
  return ctx_.StartKubelet(/*rebooted=*/true, stopped, wait, timeout);
}

absl::Status DevmgrBackend::AdvanceClock(absl::Duration d) {
  ctx_.clock.Advance(d);
  if (ctx_.kubelet_running()) ctx_.node->pod_status().SyncDuePods();  // the resyncs now due
  // The DRA retries and reconcile now due.
  return ctx_.DraPeriodicWork(ctx_.sc.timeouts.step);
}

absl::StatusOr<node::NodeResources> DevmgrBackend::UpdateNodeStatus() {
  DEVMGR_RETURN_IF_ERROR(ctx_.NeedKubelet("node_status"));
  return ctx_.node->UpdateNodeStatus();
}

// ---- pods ----

void DevmgrBackend::AdmissionNotes(const std::string& uid, std::vector<std::string>* notes) {
  auto rec = ctx_.pods->Find(uid);
  if (!rec) return;
  if (rec->phase == pod::Phase::kFailed && !rec->reason.empty()) {
    notes->push_back(fmt::format("rejected: reason {}, status message \"{}\"", rec->reason,
                                 RejectedStatusMessage(rec->message)));
    return;
  }
  for (const auto& p : ctx_.node->manager().Allocations()) {
    if (p.pod_uid != uid) continue;
    for (const auto& c : p.containers) {
      std::string s;
      for (const auto& [res, ids] : c.devices) {
        s += fmt::format("{}{}={}", s.empty() ? "" : " ", res, ListString(ids));
      }
      if (!s.empty()) notes->push_back(fmt::format("{}: {}", c.container_name, s));
    }
  }
  for (const auto& c : rec->containers) {
    if (!c.cdi_devices.empty()) {
      notes->push_back(fmt::format("{}: CDI devices {}", c.name, ListString(c.cdi_devices)));
    }
  }
  if (rec->sync_failed) {
    notes->push_back(fmt::format("sync failed (stays {}): reason {}, \"{}\"",
                                 pod::PhaseName(rec->phase), rec->reason, rec->message));
  }
  for (const auto& c : rec->containers) {
    if (!c.start_error.empty()) {
      notes->push_back(fmt::format("{}: start failed: {}", c.name, c.start_error));
    }
  }
}

absl::Status DevmgrBackend::AdmitPod(const pod::Pod& pod, absl::Duration timeout,
                                     std::vector<std::string>* notes) {
  node::PodManager* pods = ctx_.pods.get();
  absl::Status s = ctx_.Bounded([pods, pod] { return pods->AddPod(pod).status(); }, timeout,
                                fmt::format("admission of pod {}/{}", pod.namespace_, pod.name));
  if (!s.ok()) return s;
  AdmissionNotes(pod.uid, notes);
  return absl::OkStatus();
}

absl::Status DevmgrBackend::DeletePod(const std::string& ref) {
  absl::StatusOr<std::string> uid = ctx_.PodUid(ref);
  if (!uid.ok()) return uid.status();
  return ctx_.pods->DeletePod(*uid);
}

absl::Status DevmgrBackend::SetPodPhase(const std::string& ref, pod::Phase phase) {
  absl::StatusOr<std::string> uid = ctx_.PodUid(ref);
  if (!uid.ok()) return uid.status();
  return ctx_.pods->SetPhase(*uid, phase);
}

absl::Status DevmgrBackend::RestartContainer(const std::string& ref, const std::string& container,
                                             absl::Duration timeout) {
  absl::StatusOr<std::string> uid = ctx_.PodUid(ref);
  if (!uid.ok()) return uid.status();
  node::PodManager* pods = ctx_.pods.get();
  const std::string u = *uid, c = container;
  return ctx_.Bounded([pods, u, c] { return pods->RestartContainer(u, c); }, timeout,
                      "container restart");
}

std::string DevmgrBackend::PodUidOr(const std::string& ref) {
  auto rec = ctx_.pods->Find(ref);
  return rec ? rec->pod.uid : ref;
}

// ---- plugins ----

absl::StatusOr<PluginHost*> DevmgrBackend::Host(const std::string& name) {
  PluginHost* h = ctx_.Host(name);
  // The parser admits only the scenario's plugin names.
  if (h == nullptr) return absl::FailedPreconditionError(fmt::format("no plugin '{}'", name));
  return h;
}

std::vector<PluginHost*> DevmgrBackend::Hosts() {
  std::vector<PluginHost*> out;
  for (auto& h : ctx_.hosts) out.push_back(h.get());
  return out;
}

absl::Status DevmgrBackend::StartPlugin(PluginHost& h, bool wait) {
  return ctx_.StartHost(h, wait);
}

// ---- waits ----

absl::Status DevmgrBackend::WaitRegistration(const std::string& resource,
                                             std::optional<int64_t> count, PluginHost* h,
                                             absl::Duration timeout) {
  if (h != nullptr && h->spec().external) h = nullptr;  // no process of ours to watch
  if (count) {
    const int64_t n = *count;
    return ctx_.WaitFor([&] { return ctx_.node->server()->RegistrationCount(resource) >= n; },
                        timeout, fmt::format("registration #{} of {}", n, resource), h,
                        [&] { return ctx_.ResourceState(resource); });
  }
  return ctx_.WaitConnected(resource, 0, timeout, h);
}

absl::Status DevmgrBackend::WaitDevices(const DevicesWanted& want, absl::Duration timeout,
                                        const std::string& what) {
  auto ready = [&] {
    auto all = ctx_.node->manager().Snapshot();
    const auto* s = FindResource(all, want.resource);
    if (s == nullptr) return false;
    if (want.capacity && s->capacity != *want.capacity) return false;
    if (want.allocatable && s->allocatable.value_or(s->capacity) != *want.allocatable) {
      return false;
    }
    if (want.healthy && static_cast<int64_t>(s->healthy.size()) != *want.healthy) return false;
    return true;
  };
  return ctx_.WaitFor(ready, timeout, what, nullptr,
                      [&] { return ctx_.ResourceState(want.resource); });
}

absl::Status DevmgrBackend::WaitHealthSeen(PluginHost& h, const std::string& device,
                                           const std::string& health, absl::Duration timeout) {
  const std::string res = h.spec().resource;
  auto seen = [&] {
    auto all = ctx_.node->manager().Snapshot();
    const auto* s = FindResource(all, res);
    if (s == nullptr) return false;
    for (const auto& d : s->devices) {
      if (d.id == device) return d.health == health;
    }
    return false;
  };
  return ctx_.WaitFor(seen, timeout, fmt::format("the kubelet to see {} {}", device, health), &h,
                      [&] { return ctx_.ResourceState(res); });
}

// ---- the checkpoint files ----

std::string DevmgrBackend::CheckpointPath(CheckpointFile f) {
  return f == CheckpointFile::kDra ? ctx_.DraCheckpointPath() : ctx_.CheckpointPath();
}

std::optional<std::string> DevmgrBackend::ReadCheckpoint(CheckpointFile f) {
  std::ifstream in(CheckpointPath(f), std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::Status DevmgrBackend::WriteCheckpoint(CheckpointFile f, const std::string& bytes) {
  return fs::WriteOutputFile(CheckpointPath(f), bytes);
}

absl::Status DevmgrBackend::RemoveCheckpoint(CheckpointFile f) {
  const std::string path = CheckpointPath(f);
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::FailedPreconditionError(fmt::format("unlink {}: {}", path, std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status DevmgrBackend::TruncateCheckpoint(CheckpointFile f, int64_t size) {
  const std::string path = CheckpointPath(f);
  if (truncate(path.c_str(), size) != 0) {
    return absl::FailedPreconditionError(
        fmt::format("truncate {}: {}", path, std::strerror(errno)));
  }
  return absl::OkStatus();
}

// ---- DRA ----

namespace {

const apiserver::ResourceType* DraType(const std::string& kind) {
  for (const apiserver::ResourceType* t :
       {&apiserver::ResourceClaims(), &apiserver::ResourceClaimTemplates(),
        &apiserver::DeviceClasses()}) {
    if (t->kind == kind) return t;
  }
  return nullptr;
}

absl::Status NoDra(const RunContext& ctx, const char* what) {
  return absl::FailedPreconditionError(
      fmt::format("{}: DRA is off on this node (kubelet {})", what, ctx.profile.name));
}

}  // namespace

absl::Status DevmgrBackend::ApplyObjects(const std::vector<nlohmann::json>& objects) {
  if (ctx_.api == nullptr) return NoDra(ctx_, "apply");
  apiserver::Store& store = ctx_.api->store();
  for (const nlohmann::json& o : objects) {
    const apiserver::ResourceType* type = DraType(o.value("kind", ""));
    if (type == nullptr) return absl::InvalidArgumentError("apply: kind " + o.value("kind", ""));
    const std::string name = o["metadata"].value("name", "");
    const std::string ns =
        type->namespaced ? o["metadata"].value("namespace", std::string("default")) : "";
    apiserver::ApiOr<nlohmann::json> r = store.Get(*type, ns, name);
    if (r.ok()) {
      nlohmann::json replaced = o;
      replaced["metadata"].erase("resourceVersion");  // an unconditional update
      r = store.Update(*type, ns, name, std::move(replaced));
    } else {
      r = store.Create(*type, ns, o);
    }
    if (!r.ok()) {
      return absl::FailedPreconditionError(fmt::format(
          "apply {} {}{}: {}", type->kind, ns.empty() ? "" : ns + "/", name, r.error->message));
    }
  }
  return absl::OkStatus();
}

absl::Status DevmgrBackend::InjectApiFaults(const std::vector<std::string>& specs) {
  if (ctx_.api == nullptr) return NoDra(ctx_, "api_fault");
  return apiserver::AddFaultSpecs(ctx_.api->faults(), specs);
}

absl::Status DevmgrBackend::DeleteObject(const std::string& kind, const std::string& ns,
                                         const std::string& name) {
  if (ctx_.api == nullptr) return NoDra(ctx_, "delete_object");
  const apiserver::ResourceType* type = DraType(kind);
  if (type == nullptr) return absl::InvalidArgumentError("delete_object: kind " + kind);
  apiserver::ApiOr<nlohmann::json> r = ctx_.api->store().Delete(*type, ns, name, {});
  if (!r.ok()) {
    return absl::NotFoundError(fmt::format("delete {} {}{}: {}", kind, ns.empty() ? "" : ns + "/",
                                           name, r.error->message));
  }
  return absl::OkStatus();
}

absl::Status DevmgrBackend::WaitDriver(const std::string& driver, int64_t min_devices,
                                       PluginHost* h, absl::Duration timeout) {
  return ctx_.WaitDraDriver(driver, min_devices, 0, timeout, h);
}

// ---- commands ----

absl::StatusOr<CommandResult> DevmgrBackend::RunCommand(const std::string& command,
                                                        absl::Duration timeout) {
  node::PluginProcessOptions o;
  o.command = command;
  o.env = ctx_.env.Vars();
  o.working_dir = ctx_.sc.dir;
  node::PluginProcess p(o);
  if (absl::Status s = p.Start(); !s.ok()) return EnvError(std::string(s.message()));
  const absl::Time deadline = absl::Now() + timeout;
  while (!p.WaitExit(kPoll)) {
    if (ctx_.Cancelled()) {
      p.Stop(absl::Seconds(1));
      return absl::CancelledError("interrupted");
    }
    if (absl::Now() >= deadline) {
      p.Stop(absl::Seconds(1));
      return absl::DeadlineExceededError(fmt::format("command did not finish within {}; output: {}",
                                                     absl::FormatDuration(timeout),
                                                     ListString(p.OutputTail(5))));
    }
  }
  return CommandResult{p.exit_code().value_or(-1), p.OutputTail(5)};
}

}  // namespace devmgr::scenario
