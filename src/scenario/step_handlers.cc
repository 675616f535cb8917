#include "scenario/step_handlers.h"

#include <signal.h>

#include <array>

#include "fmt/format.h"
#include "process/plugin_process.h"
#include "scenario/expectations.h"

namespace devmgr::scenario {
namespace {

void AdmissionNotes(RunContext& ctx, const std::string& uid, StepResult* r) {
  auto rec = ctx.pods->Find(uid);
  if (!rec) return;
  if (rec->phase == pod::Phase::kFailed && !rec->reason.empty()) {
    r->notes.push_back(fmt::format("rejected: reason {}, status message \"{}\"", rec->reason,
                                   RejectedStatusMessage(rec->message)));
    return;
  }
  for (const auto& p : ctx.node->manager().Allocations()) {
    if (p.pod_uid != uid) continue;
    for (const auto& c : p.containers) {
      std::string s;
      for (const auto& [res, ids] : c.devices) {
        s += fmt::format("{}{}={}", s.empty() ? "" : " ", res, ListString(ids));
      }
      if (!s.empty()) r->notes.push_back(fmt::format("{}: {}", c.container_name, s));
    }
  }
  for (const auto& c : rec->containers) {
    if (!c.start_error.empty()) {
      r->notes.push_back(fmt::format("{}: start failed: {}", c.name, c.start_error));
    }
  }
}

absl::Status Admit(RunContext& ctx, const Step& st, StepResult* r) {
  if (absl::Status s = ctx.NeedKubelet("admit"); !s.ok()) return s;
  const pod::Pod pod = st.pod;
  node::PodManager* pods = ctx.pods.get();
  absl::Status s =
      ctx.Bounded([pods, pod] { return pods->AddPod(pod).status(); }, ctx.StepTimeout(st),
                  fmt::format("admission of pod {}/{}", pod.namespace_, pod.name));
  if (!s.ok()) return s;
  AdmissionNotes(ctx, pod.uid, r);
  return absl::OkStatus();
}

absl::Status DeletePod(RunContext& ctx, const Step& st, StepResult*) {
  absl::StatusOr<std::string> uid = ctx.PodUid(st.pod_ref);
  if (!uid.ok()) return uid.status();
  return ctx.pods->DeletePod(*uid);
}

absl::Status SetPhase(RunContext& ctx, const Step& st, StepResult*) {
  absl::StatusOr<std::string> uid = ctx.PodUid(st.pod_ref);
  if (!uid.ok()) return uid.status();
  return ctx.pods->SetPhase(*uid, st.phase);
}

absl::Status RestartContainer(RunContext& ctx, const Step& st, StepResult*) {
  if (absl::Status s = ctx.NeedKubelet("restart_container"); !s.ok()) return s;
  absl::StatusOr<std::string> uid = ctx.PodUid(st.pod_ref);
  if (!uid.ok()) return uid.status();
  node::PodManager* pods = ctx.pods.get();
  const std::string u = *uid, c = st.container;
  return ctx.Bounded([pods, u, c] { return pods->RestartContainer(u, c); }, ctx.StepTimeout(st),
                     "container restart");
}

absl::Status RestartKubelet(RunContext& ctx, const Step& st, StepResult*) {
  return ctx.StartKubelet(/*rebooted=*/false, {}, st.wait_for_registration, ctx.StepTimeout(st));
}

absl::Status RebootNode(RunContext& ctx, const Step& st, StepResult*) {
  std::vector<PluginHost*> restart;
  for (auto& h : ctx.hosts) {
    if (h->running()) {
      restart.push_back(h.get());
      h->Stop();
    }
  }
  return ctx.StartKubelet(/*rebooted=*/true, restart, st.wait_for_registration,
                          ctx.StepTimeout(st));
}

absl::Status StopKubelet(RunContext& ctx, const Step&, StepResult*) {
  if (absl::Status s = ctx.NeedKubelet("stop_kubelet"); !s.ok()) return s;
  ctx.StopKubelet();
  return absl::OkStatus();
}

absl::Status StartKubelet(RunContext& ctx, const Step& st, StepResult*) {
  if (ctx.kubelet_running()) {
    return absl::FailedPreconditionError(
        "start_kubelet: the kubelet is running (stop it with stop_kubelet first, or use "
        "restart_kubelet)");
  }
  return ctx.StartKubelet(/*rebooted=*/false, {}, st.wait_for_registration, ctx.StepTimeout(st));
}

absl::Status StartPlugin(RunContext& ctx, const Step& st, StepResult*) {
  return ctx.StartHost(*ctx.Host(st.plugin), st.wait_for_registration && ctx.kubelet_running());
}

absl::Status RestartPlugin(RunContext& ctx, const Step& st, StepResult*) {
  PluginHost* h = ctx.Host(st.plugin);
  h->Stop();
  return ctx.StartHost(*h, st.wait_for_registration && ctx.kubelet_running());
}

absl::Status StopPlugin(RunContext& ctx, const Step& st, StepResult*) {
  ctx.Host(st.plugin)->Stop();
  return absl::OkStatus();
}

absl::Status KillPlugin(RunContext& ctx, const Step& st, StepResult*) {
  ctx.Host(st.plugin)->Kill();
  return absl::OkStatus();
}

absl::Status PausePlugin(RunContext& ctx, const Step& st, StepResult*) {
  ctx.Host(st.plugin)->Signal(SIGSTOP);
  return absl::OkStatus();
}

absl::Status ResumePlugin(RunContext& ctx, const Step& st, StepResult*) {
  ctx.Host(st.plugin)->Signal(SIGCONT);
  return absl::OkStatus();
}

absl::Status AdvanceClock(RunContext& ctx, const Step& st, StepResult* r) {
  ctx.clock.Advance(st.advance);
  if (!ctx.kubelet_running()) return absl::OkStatus();
  ctx.node->pod_status().SyncDuePods();  // the periodic pod resyncs now due
  node::NodeResources nr = ctx.node->UpdateNodeStatus();
  std::string s;
  for (const auto& [k, v] : nr.capacity) {
    s += fmt::format("{}{}: capacity {} allocatable {}", s.empty() ? "" : "; ", k, v,
                     nr.allocatable.count(k) ? nr.allocatable.at(k) : v);
  }
  if (!s.empty()) r->notes.push_back("node status: " + s);
  return absl::OkStatus();
}

absl::Status NodeStatus(RunContext& ctx, const Step&, StepResult*) {
  if (absl::Status s = ctx.NeedKubelet("node_status"); !s.ok()) return s;
  ctx.node->UpdateNodeStatus();
  return absl::OkStatus();
}

absl::Status WaitRegistration(RunContext& ctx, const Step& st, StepResult*) {
  if (absl::Status s = ctx.NeedKubelet("wait_for_registration"); !s.ok()) return s;
  PluginHost* h = st.plugin.empty() ? nullptr : ctx.Host(st.plugin);
  if (h != nullptr && h->spec().external) h = nullptr;
  const absl::Duration timeout = st.timeout.value_or(ctx.sc.timeouts.wait);
  if (st.count) {
    const std::string res = st.resource;
    const int64_t n = *st.count;
    return ctx.WaitFor([&] { return ctx.node->server()->RegistrationCount(res) >= n; }, timeout,
                       fmt::format("registration #{} of {}", n, res), h,
                       [&] { return ctx.ResourceState(res); });
  }
  return ctx.WaitConnected(st.resource, 0, timeout, h);
}

absl::Status WaitDevices(RunContext& ctx, const Step& st, StepResult*) {
  if (absl::Status s = ctx.NeedKubelet("wait_for_devices"); !s.ok()) return s;
  auto ready = [&] {
    auto all = ctx.node->manager().Snapshot();
    const auto* s = FindResource(all, st.resource);
    if (s == nullptr) return false;
    if (st.capacity && s->capacity != *st.capacity) return false;
    if (st.allocatable && s->allocatable.value_or(s->capacity) != *st.allocatable) return false;
    if (st.healthy && static_cast<int64_t>(s->healthy.size()) != *st.healthy) return false;
    return true;
  };
  return ctx.WaitFor(ready, st.timeout.value_or(ctx.sc.timeouts.wait), DescribeStep(st), nullptr,
                     [&] { return ctx.ResourceState(st.resource); });
}

absl::Status SetHealth(RunContext& ctx, const Step& st, StepResult*) {
  PluginHost* h = ctx.Host(st.plugin);
  if (absl::Status s = h->Control(fmt::format("health {} {}", st.device, st.health)); !s.ok()) {
    return s;
  }
  if (!st.wait || !ctx.kubelet_running()) return absl::OkStatus();
  const std::string res = h->spec().resource;
  auto seen = [&] {
    auto all = ctx.node->manager().Snapshot();
    const auto* s = FindResource(all, res);
    if (s == nullptr) return false;
    for (const auto& d : s->devices) {
      if (d.id == st.device) return d.health == st.health;
    }
    return false;
  };
  return ctx.WaitFor(seen, st.timeout.value_or(ctx.sc.timeouts.wait),
                     fmt::format("the kubelet to see {} {}", st.device, st.health), h,
                     [&] { return ctx.ResourceState(res); });
}

absl::Status Control(RunContext& ctx, const Step& st, StepResult*) {
  return ctx.Host(st.plugin)->Control(st.control_line);
}

absl::Status RunCommand(RunContext& ctx, const Step& st, StepResult* r) {
  node::PluginProcessOptions o;
  o.command = st.command;
  o.env = ctx.env.Vars();
  o.working_dir = ctx.sc.dir;
  node::PluginProcess p(o);
  if (absl::Status s = p.Start(); !s.ok()) return EnvError(std::string(s.message()));
  const absl::Duration timeout = ctx.StepTimeout(st);
  const absl::Time deadline = absl::Now() + timeout;
  while (!p.WaitExit(kPoll)) {
    if (ctx.Cancelled()) {
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
  const int code = p.exit_code().value_or(-1);
  for (const auto& l : p.OutputTail(5)) r->notes.push_back("| " + l);
  if (code != st.expect_exit) {
    r->failures.push_back(
        Failure{st.loc, "exit code", std::to_string(st.expect_exit), std::to_string(code)});
    return absl::FailedPreconditionError(
        fmt::format("command exited with {} (expected {})", code, st.expect_exit));
  }
  return absl::OkStatus();
}

absl::Status Check(RunContext&, const Step&, StepResult*) { return absl::OkStatus(); }

struct Entry {
  StepKind kind;
  StepHandler handler;
};

constexpr Entry kHandlers[] = {
    {StepKind::kAdmit, Admit},
    {StepKind::kDeletePod, DeletePod},
    {StepKind::kSetPhase, SetPhase},
    {StepKind::kRestartContainer, RestartContainer},
    {StepKind::kRestartKubelet, RestartKubelet},
    {StepKind::kRebootNode, RebootNode},
    {StepKind::kStopKubelet, StopKubelet},
    {StepKind::kStartKubelet, StartKubelet},
    {StepKind::kStartPlugin, StartPlugin},
    {StepKind::kStopPlugin, StopPlugin},
    {StepKind::kKillPlugin, KillPlugin},
    {StepKind::kPausePlugin, PausePlugin},
    {StepKind::kResumePlugin, ResumePlugin},
    {StepKind::kRestartPlugin, RestartPlugin},
    {StepKind::kAdvanceClock, AdvanceClock},
    {StepKind::kNodeStatus, NodeStatus},
    {StepKind::kWaitRegistration, WaitRegistration},
    {StepKind::kWaitDevices, WaitDevices},
    {StepKind::kSetHealth, SetHealth},
    {StepKind::kControl, Control},
    {StepKind::kDeleteCheckpoint, DeleteCheckpointStep},
    {StepKind::kTruncateCheckpoint, TruncateCheckpointStep},
    {StepKind::kCorruptCheckpoint, CorruptCheckpointStep},
    {StepKind::kWriteCheckpoint, WriteCheckpointStep},
    {StepKind::kRun, RunCommand},
    {StepKind::kCheck, Check},
};

}  // namespace

StepHandler HandlerFor(StepKind kind) {
  for (const Entry& e : kHandlers) {
    if (e.kind == kind) return e.handler;
  }
  return nullptr;  // step_handlers_test checks that every kind has one
}

}  // namespace devmgr::scenario
