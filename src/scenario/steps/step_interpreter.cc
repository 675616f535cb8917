#include "scenario/steps/step_interpreter.h"

#include <signal.h>

#include "absl/strings/cord.h"
#include "checkpoint/checkpoint.h"
#include "common/status_util.h"
#include "fmt/format.h"

namespace devmgr::scenario {
namespace {

// Marks a Refused status (its code alone could be any primitive's).
constexpr char kRefusedPayload[] = "devmgr.scenario/step-refused";
// Marks a KubeletStartFailed status.
constexpr char kStartFailedPayload[] = "devmgr.scenario/kubelet-start-failed";

// The step kinds that act on a live kubelet fail while it is stopped.
absl::Status NeedKubelet(const StepBackend& b, const char* what) {
  if (b.KubeletRunning()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      fmt::format("{} needs a running kubelet: it was stopped by stop_kubelet (add a "
                  "start_kubelet step first)",
                  what));
}

// The context every step kind's function sees.
struct Env {
  const Step& st;
  const Timeouts& timeouts;
  StepBackend& b;
  StepResult* r;

  absl::Duration StepTimeout() const { return st.timeout.value_or(timeouts.step); }
  absl::Duration WaitTimeout() const { return st.timeout.value_or(timeouts.wait); }
};

absl::Status Admit(Env& e) {
  DEVMGR_RETURN_IF_ERROR(NeedKubelet(e.b, "admit"));
  return e.b.AdmitPod(e.st.pod, e.StepTimeout(), &e.r->notes);
}

absl::Status RestartContainer(Env& e) {
  DEVMGR_RETURN_IF_ERROR(NeedKubelet(e.b, "restart_container"));
  return e.b.RestartContainer(e.st.pod_ref, e.st.container, e.StepTimeout());
}

// The plugins stop with the node; the ones that ran start again after it.
absl::Status RebootNode(Env& e) {
  std::vector<PluginHost*> stopped;
  for (PluginHost* h : e.b.Hosts()) {
    if (h->running()) {
      stopped.push_back(h);
      h->Stop();
    }
  }
  return e.b.RebootNode(stopped, e.st.wait_for_registration, e.StepTimeout());
}

absl::Status StopKubelet(Env& e) {
  DEVMGR_RETURN_IF_ERROR(NeedKubelet(e.b, "stop_kubelet"));
  return e.b.StopKubelet();
}

// start_plugin, and restart_plugin after its stop: waits for the
// registration only where a kubelet can take it.
absl::Status StartPlugin(Env& e, PluginHost& h) {
  return e.b.StartPlugin(h, e.st.wait_for_registration && e.b.KubeletRunning());
}

// A step on the plugin the step names.
absl::Status OnHost(Env& e, const std::function<absl::Status(PluginHost&)>& fn) {
  absl::StatusOr<PluginHost*> h = e.b.Host(e.st.plugin);
  if (!h.ok()) return h.status();
  return fn(**h);
}

absl::Status SetHealth(Env& e, PluginHost& h) {
  const Step& st = e.st;
  DEVMGR_RETURN_IF_ERROR(h.Control(fmt::format("health {} {}", st.device, st.health)));
  if (!st.wait || !e.b.KubeletRunning()) return absl::OkStatus();
  return e.b.WaitHealthSeen(h, st.device, st.health, e.WaitTimeout());
}

absl::Status AdvanceClock(Env& e) {
  DEVMGR_RETURN_IF_ERROR(e.b.AdvanceClock(e.st.advance));
  if (!e.b.KubeletRunning()) return absl::OkStatus();
  absl::StatusOr<node::NodeResources> nr = e.b.UpdateNodeStatus();
  if (!nr.ok()) return nr.status();
  std::string s;
  for (const auto& [k, v] : nr->capacity) {
    s += fmt::format("{}{}: capacity {} allocatable {}", s.empty() ? "" : "; ", k, v,
                     nr->allocatable.count(k) ? nr->allocatable.at(k) : v);
  }
  if (!s.empty()) e.r->notes.push_back("node status: " + s);
  return absl::OkStatus();
}

absl::Status NodeStatus(Env& e) {
  DEVMGR_RETURN_IF_ERROR(NeedKubelet(e.b, "node_status"));
  return e.b.UpdateNodeStatus().status();
}

absl::Status WaitRegistration(Env& e) {
  DEVMGR_RETURN_IF_ERROR(NeedKubelet(e.b, "wait_for_registration"));
  PluginHost* h = nullptr;
  if (!e.st.plugin.empty()) {
    absl::StatusOr<PluginHost*> found = e.b.Host(e.st.plugin);
    if (!found.ok()) return found.status();
    h = *found;
  }
  return e.b.WaitRegistration(e.st.resource, e.st.count, h, e.WaitTimeout());
}

absl::Status WaitDevices(Env& e) {
  DEVMGR_RETURN_IF_ERROR(NeedKubelet(e.b, "wait_for_devices"));
  const DevicesWanted want{e.st.resource, e.st.capacity, e.st.allocatable, e.st.healthy};
  return e.b.WaitDevices(want, e.WaitTimeout(), DescribeStep(e.st));
}

absl::Status CorruptCheckpoint(Env& e) {
  const CheckpointFile f = e.st.checkpoint_file;
  std::optional<std::string> bytes = e.b.ReadCheckpoint(f);
  if (!bytes) {
    return absl::FailedPreconditionError(
        fmt::format("no {} to corrupt at {}", CheckpointFileName(f), e.b.CheckpointPath(f)));
  }
  return e.b.WriteCheckpoint(f, CorruptCheckpointBytes(*std::move(bytes)));
}

absl::Status WriteCheckpoint(Env& e) {
  if (!e.st.checkpoint) return e.b.WriteCheckpoint(e.st.checkpoint_file, e.st.content);
  // Pod refs name pods the scenario admitted; anything else is a UID.
  StepBackend& b = e.b;
  auto uid = [&b](const std::string& ref) { return b.PodUidOr(ref); };
  absl::StatusOr<std::string> bytes = EncodeCheckpointSpec(*e.st.checkpoint, uid);
  if (!bytes.ok()) return bytes.status();
  const checkpoint::VerifyResult v = checkpoint::Verify(*bytes);
  e.r->notes.push_back(fmt::format("checksum {} ({})", v.stored, v.valid ? "valid" : "invalid"));
  return e.b.WriteCheckpoint(CheckpointFile::kDeviceManager, *bytes);
}

absl::Status RunCommand(Env& e) {
  absl::StatusOr<CommandResult> c = e.b.RunCommand(e.st.command, e.StepTimeout());
  if (!c.ok()) return c.status();
  for (const auto& l : c->output_tail) e.r->notes.push_back("| " + l);
  if (c->exit_code != e.st.expect_exit) {
    e.r->failures.push_back(Failure{e.st.loc, "exit code", std::to_string(e.st.expect_exit),
                                    std::to_string(c->exit_code)});
    return absl::FailedPreconditionError(
        fmt::format("command exited with {} (expected {})", c->exit_code, e.st.expect_exit));
  }
  return absl::OkStatus();
}

absl::Status WaitDriver(Env& e) {
  DEVMGR_RETURN_IF_ERROR(NeedKubelet(e.b, "wait_driver"));
  PluginHost* h = nullptr;
  if (!e.st.plugin.empty()) {
    absl::StatusOr<PluginHost*> found = e.b.Host(e.st.plugin);
    if (!found.ok()) return found.status();
    h = *found;
  }
  return e.b.WaitDriver(e.st.driver, e.st.min_devices, h, e.WaitTimeout());
}

// restart_kubelet, start_kubelet, reboot_node. With expect_error the
// start must fail with a matching kubelet error: that passes (noted), a
// start that succeeds or fails otherwise fails the step at its line.
absl::Status KubeletStart(Env& e) {
  const Step& st = e.st;
  absl::Status s;
  if (st.kind == StepKind::kRebootNode) {
    s = RebootNode(e);
  } else if (st.kind == StepKind::kStartKubelet) {
    s = e.b.StartKubelet(st.wait_for_registration, e.StepTimeout());
  } else {
    s = e.b.RestartKubelet(st.wait_for_registration, e.StepTimeout());
  }
  const std::optional<std::string> error = KubeletStartError(s);
  if (!st.expect_error) {
    if (!error) return s;
    return absl::FailedPreconditionError(
        fmt::format("the kubelet did not start: {} (expect it with expect_error: REGEX)", *error));
  }
  if (!s.ok() && !error) return s;  // refused, the environment, a timeout
  const StringMatcher want{*st.expect_error, /*regex=*/true};
  const std::string actual = error ? *error : "the kubelet started";
  if (error && want.Matches(*error)) {
    e.r->notes.push_back("the kubelet did not start, as expected: " + *error);
    return absl::OkStatus();
  }
  e.r->failures.push_back(Failure{st.loc, "the kubelet's start error", want.Describe(), actual});
  return absl::FailedPreconditionError(
      error ? fmt::format("the kubelet's start failed otherwise than expected: {}", *error)
            : fmt::format("the kubelet started; its start was expected to fail with /{}/",
                          *st.expect_error));
}

// The steps that act on the plugin the step names.
absl::Status PluginStep(Env& e) {
  return OnHost(e, [&e](PluginHost& h) -> absl::Status {
    switch (e.st.kind) {
      case StepKind::kStartPlugin:
        return StartPlugin(e, h);
      case StepKind::kRestartPlugin:
        h.Stop();
        return StartPlugin(e, h);
      case StepKind::kStopPlugin:
        h.Stop();
        return absl::OkStatus();
      case StepKind::kKillPlugin:
        h.Kill();
        return absl::OkStatus();
      case StepKind::kPausePlugin:
        h.Signal(SIGSTOP);
        return absl::OkStatus();
      case StepKind::kResumePlugin:
        h.Signal(SIGCONT);
        return absl::OkStatus();
      case StepKind::kSetHealth:
        return SetHealth(e, h);
      default:  // kControl
        return h.Control(e.st.control_line);
    }
  });
}

}  // namespace

absl::Status Refused(const std::string& reason) {
  absl::Status s = absl::UnimplementedError(reason);
  s.SetPayload(kRefusedPayload, absl::Cord(reason));
  return s;
}

std::optional<std::string> RefusalReason(const absl::Status& s) {
  if (s.ok() || !s.GetPayload(kRefusedPayload).has_value()) return std::nullopt;
  return std::string(s.message());
}

absl::Status KubeletStartFailed(const std::string& kubelet_error) {
  absl::Status s = absl::FailedPreconditionError(kubelet_error);
  s.SetPayload(kStartFailedPayload, absl::Cord(kubelet_error));
  return s;
}

std::optional<std::string> KubeletStartError(const absl::Status& s) {
  if (s.ok() || !s.GetPayload(kStartFailedPayload).has_value()) return std::nullopt;
  return std::string(s.message());
}

// Every step kind has its case (-Wswitch names a missing one;
// step_interpreter_test runs each on a recording backend).
absl::Status InterpretStep(const Step& st, const Timeouts& timeouts, StepBackend& backend,
                           StepResult* r) {
  Env e{st, timeouts, backend, r};
  switch (st.kind) {
    case StepKind::kAdmit:
      return Admit(e);
    case StepKind::kDeletePod:
      return backend.DeletePod(st.pod_ref);
    case StepKind::kSetPhase:
      return backend.SetPodPhase(st.pod_ref, st.phase);
    case StepKind::kRestartContainer:
      return RestartContainer(e);
    case StepKind::kRestartKubelet:
    case StepKind::kRebootNode:
    case StepKind::kStartKubelet:
      return KubeletStart(e);
    case StepKind::kStopKubelet:
      return StopKubelet(e);
    case StepKind::kStartPlugin:
    case StepKind::kStopPlugin:
    case StepKind::kKillPlugin:
    case StepKind::kPausePlugin:
    case StepKind::kResumePlugin:
    case StepKind::kRestartPlugin:
    case StepKind::kSetHealth:
    case StepKind::kControl:
      return PluginStep(e);
    case StepKind::kAdvanceClock:
      return AdvanceClock(e);
    case StepKind::kNodeStatus:
      return NodeStatus(e);
    case StepKind::kWaitRegistration:
      return WaitRegistration(e);
    case StepKind::kWaitDevices:
      return WaitDevices(e);
    case StepKind::kDeleteCheckpoint:
      return backend.RemoveCheckpoint(st.checkpoint_file);
    case StepKind::kTruncateCheckpoint:
      return backend.TruncateCheckpoint(st.checkpoint_file, st.truncate_to);
    case StepKind::kCorruptCheckpoint:
      return CorruptCheckpoint(e);
    case StepKind::kWriteCheckpoint:
      return WriteCheckpoint(e);
    case StepKind::kRun:
      return RunCommand(e);
    case StepKind::kApply:
      return backend.ApplyObjects(st.objects);
    case StepKind::kDeleteObject:
      return backend.DeleteObject(st.object_kind, st.object_namespace, st.object_name);
    case StepKind::kWaitDriver:
      return WaitDriver(e);
    case StepKind::kApiFault:
      return backend.InjectApiFaults(st.api_faults);
    case StepKind::kCheck:
      return absl::OkStatus();  // expectations only
  }
  return absl::InternalError(
      fmt::format("no interpretation of step kind {}", StepKindName(st.kind)));
}

}  // namespace devmgr::scenario
