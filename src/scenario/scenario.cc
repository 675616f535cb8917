#include "scenario/scenario.h"

#include <regex>

#include "fmt/format.h"

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
    case StepKind::kAdmit: return "admit";
    case StepKind::kDeletePod: return "delete_pod";
    case StepKind::kSetPhase: return "set_phase";
    case StepKind::kRestartContainer: return "restart_container";
    case StepKind::kRestartKubelet: return "restart_kubelet";
    case StepKind::kRebootNode: return "reboot_node";
    case StepKind::kStartPlugin: return "start_plugin";
    case StepKind::kStopPlugin: return "stop_plugin";
    case StepKind::kKillPlugin: return "kill_plugin";
    case StepKind::kPausePlugin: return "pause_plugin";
    case StepKind::kResumePlugin: return "resume_plugin";
    case StepKind::kRestartPlugin: return "restart_plugin";
    case StepKind::kAdvanceClock: return "advance_clock";
    case StepKind::kNodeStatus: return "node_status";
    case StepKind::kWaitRegistration: return "wait_registration";
    case StepKind::kWaitDevices: return "wait_devices";
    case StepKind::kSetHealth: return "set_health";
    case StepKind::kControl: return "control";
    case StepKind::kDeleteCheckpoint: return "delete_checkpoint";
    case StepKind::kTruncateCheckpoint: return "truncate_checkpoint";
    case StepKind::kCorruptCheckpoint: return "corrupt_checkpoint";
    case StepKind::kWriteCheckpoint: return "write_checkpoint";
    case StepKind::kRun: return "run";
    case StepKind::kCheck: return "check";
  }
  return "?";
}

}  // namespace devmgr::scenario
