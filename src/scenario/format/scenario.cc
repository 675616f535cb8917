#include "scenario/format/scenario.h"

#include <regex>

#include "absl/time/time.h"
#include "fmt/format.h"
#include "pod/pod.h"
#include "scenario/expect/expectations.h"

namespace devmgr::scenario {

std::string Location::ToString() const {
  if (line <= 0) return file;
  return fmt::format("{}:{}:{}", file, line, column);
}

bool StringMatcher::Matches(const std::string& s) const {
  if (!regex) return s == value;
  try {
    return std::regex_search(s, std::regex(value, std::regex::ECMAScript));
  } catch (const std::regex_error&) {
    return false;  // validated by the parser
  }
}

std::string StringMatcher::Describe() const {
  if (regex) return fmt::format("regex /{}/", value);
  return fmt::format("\"{}\"", value);
}

const char* StepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::kAdmit:
      return "admit";
    case StepKind::kDeletePod:
      return "delete_pod";
    case StepKind::kSetPhase:
      return "set_phase";
    case StepKind::kRestartContainer:
      return "restart_container";
    case StepKind::kRestartKubelet:
      return "restart_kubelet";
    case StepKind::kRebootNode:
      return "reboot_node";
    case StepKind::kStopKubelet:
      return "stop_kubelet";
    case StepKind::kStartKubelet:
      return "start_kubelet";
    case StepKind::kStartPlugin:
      return "start_plugin";
    case StepKind::kStopPlugin:
      return "stop_plugin";
    case StepKind::kKillPlugin:
      return "kill_plugin";
    case StepKind::kPausePlugin:
      return "pause_plugin";
    case StepKind::kResumePlugin:
      return "resume_plugin";
    case StepKind::kRestartPlugin:
      return "restart_plugin";
    case StepKind::kAdvanceClock:
      return "advance_clock";
    case StepKind::kNodeStatus:
      return "node_status";
    case StepKind::kWaitRegistration:
      return "wait_registration";
    case StepKind::kWaitDevices:
      return "wait_devices";
    case StepKind::kSetHealth:
      return "set_health";
    case StepKind::kControl:
      return "control";
    case StepKind::kDeleteCheckpoint:
      return "delete_checkpoint";
    case StepKind::kTruncateCheckpoint:
      return "truncate_checkpoint";
    case StepKind::kCorruptCheckpoint:
      return "corrupt_checkpoint";
    case StepKind::kWriteCheckpoint:
      return "write_checkpoint";
    case StepKind::kRun:
      return "run";
    case StepKind::kApply:
      return "apply";
    case StepKind::kDeleteObject:
      return "delete_object";
    case StepKind::kWaitDriver:
      return "wait_driver";
    case StepKind::kApiFault:
      return "api_fault";
    case StepKind::kCheck:
      return "check";
  }
  return "?";
}

namespace {

// The DRA steps' descriptions.
std::string DescribeDraStep(const Step& st) {
  switch (st.kind) {
    case StepKind::kApply: {
      std::vector<std::string> names;
      for (const nlohmann::json& o : st.objects) {
        names.push_back(o.value("kind", "?") + " " + o["metadata"].value("name", std::string("?")));
      }
      return "apply " + ListString(names);
    }
    case StepKind::kDeleteObject:
      return fmt::format("delete {} {}{}", st.object_kind,
                         st.object_namespace.empty() ? "" : st.object_namespace + "/",
                         st.object_name);
    case StepKind::kApiFault:
      return "inject API fault(s) " + ListString(st.api_faults);
    default:  // kWaitDriver
      return fmt::format("wait for DRA driver {} and its slices", st.driver);
  }
}

// " (its start must fail with /RE/)" for a start expected to fail.
std::string StartFailing(const Step& st) {
  if (!st.expect_error) return "";
  return fmt::format(" (its start must fail with /{}/)", *st.expect_error);
}

std::string CheckpointWord(const Step& st) {
  if (st.checkpoint_file == CheckpointFile::kDeviceManager) return "the checkpoint";
  return CheckpointFileName(st.checkpoint_file);
}

}  // namespace

const char* CheckpointFileName(CheckpointFile f) {
  return f == CheckpointFile::kDra ? "dra_manager_state" : "kubelet_internal_checkpoint";
}

std::string DescribeStep(const Step& st) {
  switch (st.kind) {
    case StepKind::kAdmit: {
      std::vector<std::string> cs;
      for (const auto* c : pod::AllContainersInKubeletOrder(st.pod)) cs.push_back(c->name);
      return fmt::format("admit pod {}/{} (containers {})", st.pod.namespace_, st.pod.name,
                         ListString(cs));
    }
    case StepKind::kDeletePod:
      return "delete pod " + st.pod_ref;
    case StepKind::kSetPhase:
      return fmt::format("mark pod {} {}", st.pod_ref, pod::PhaseName(st.phase));
    case StepKind::kRestartContainer:
      return fmt::format("restart container {} of pod {}", st.container, st.pod_ref);
    case StepKind::kRestartKubelet:
      return "restart the kubelet" + StartFailing(st);
    case StepKind::kRebootNode:
      return "reboot the node" + StartFailing(st);
    case StepKind::kStopKubelet:
      return "stop the kubelet";
    case StepKind::kStartKubelet:
      return "start the kubelet" + StartFailing(st);
    case StepKind::kStartPlugin:
      return "start plugin " + st.plugin;
    case StepKind::kStopPlugin:
      return "stop plugin " + st.plugin + " (SIGTERM)";
    case StepKind::kKillPlugin:
      return "kill plugin " + st.plugin + " (SIGKILL)";
    case StepKind::kPausePlugin:
      return "pause plugin " + st.plugin + " (SIGSTOP)";
    case StepKind::kResumePlugin:
      return "resume plugin " + st.plugin + " (SIGCONT)";
    case StepKind::kRestartPlugin:
      return "restart plugin " + st.plugin;
    case StepKind::kAdvanceClock:
      return "advance the virtual clock by " + absl::FormatDuration(st.advance);
    case StepKind::kNodeStatus:
      return "node-status update";
    case StepKind::kWaitRegistration:
      return st.count ? fmt::format("wait for registration #{} of {}", *st.count, st.resource)
                      : "wait for registration of " + st.resource;
    case StepKind::kWaitDevices: {
      std::string s = "wait for " + st.resource;
      if (st.capacity) s += fmt::format(" capacity={}", *st.capacity);
      if (st.allocatable) s += fmt::format(" allocatable={}", *st.allocatable);
      if (st.healthy) s += fmt::format(" healthy={}", *st.healthy);
      return s;
    }
    case StepKind::kSetHealth:
      return fmt::format("set device {} {} on plugin {}", st.device, st.health, st.plugin);
    case StepKind::kControl:
      return fmt::format("plugin {}: {}", st.plugin, st.control_line);
    case StepKind::kDeleteCheckpoint:
      return "delete " + CheckpointWord(st);
    case StepKind::kTruncateCheckpoint:
      return fmt::format("truncate {} to {} bytes", CheckpointWord(st), st.truncate_to);
    case StepKind::kCorruptCheckpoint:
      return fmt::format("corrupt {}'s checksum", CheckpointWord(st));
    case StepKind::kWriteCheckpoint:
      if (!st.checkpoint) return "write " + CheckpointWord(st);
      return fmt::format(
          "write a {} checkpoint ({} entries{})", st.checkpoint->v1 ? "V1" : "V2",
          st.checkpoint->entries.size(),
          st.checkpoint->wrong_checksum || st.checkpoint->checksum ? ", a wrong checksum" : "");
    case StepKind::kRun:
      return "run: " + st.command;
    case StepKind::kApply:
    case StepKind::kDeleteObject:
    case StepKind::kWaitDriver:
    case StepKind::kApiFault:
      return DescribeDraStep(st);
    case StepKind::kCheck:
      return "check";
  }
  return "?";
}

bool Scenario::UsesDra() const {
  if (!api_faults.empty()) return true;
  for (const PluginSpec& p : plugins) {
    if (!p.dra_driver.empty()) return true;
  }
  for (const Step& st : steps) {
    if (st.kind == StepKind::kApply || st.kind == StepKind::kDeleteObject ||
        st.kind == StepKind::kWaitDriver || st.kind == StepKind::kApiFault ||
        st.checkpoint_file == CheckpointFile::kDra) {
      return true;
    }
  }
  return false;
}

}  // namespace devmgr::scenario
