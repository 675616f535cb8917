// One handler per step kind: what the step does before its expectations are
// checked. Each is a small function over the RunContext; the runner looks
// the handler up in a table by StepKind.
#ifndef DEVMGR_SCENARIO_STEP_HANDLERS_H_
#define DEVMGR_SCENARIO_STEP_HANDLERS_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "scenario/result.h"
#include "scenario/run_context.h"
#include "scenario/scenario.h"

namespace devmgr::scenario {

// Runs the step's action; notes (e.g. an admission verdict) go to `r`.
// EnvError statuses are environment failures.
using StepHandler = absl::Status (*)(RunContext& ctx, const Step& st, StepResult* r);

// The handler of `kind` (null only for a kind missing from the table).
StepHandler HandlerFor(StepKind kind);

// Checkpoint steps (checkpoint_steps.cc).
absl::Status DeleteCheckpointStep(RunContext& ctx, const Step& st, StepResult* r);
absl::Status TruncateCheckpointStep(RunContext& ctx, const Step& st, StepResult* r);
absl::Status CorruptCheckpointStep(RunContext& ctx, const Step& st, StepResult* r);
absl::Status WriteCheckpointStep(RunContext& ctx, const Step& st, StepResult* r);
// The bytes of a structured write_checkpoint (`uid` maps pod refs to UIDs).
absl::StatusOr<std::string> EncodeCheckpointSpec(
    const CheckpointSpec& spec, const std::function<std::string(const std::string&)>& uid);

// A `run:` step's command (command_step.cc).
absl::Status RunCommandStep(RunContext& ctx, const Step& st, StepResult* r);

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_STEP_HANDLERS_H_
