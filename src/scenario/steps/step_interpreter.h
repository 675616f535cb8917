// The step interpreter: what each step kind does before its expectations
// are checked, written once over the primitives of a StepBackend
// (step_backend.h). The runner interprets a scenario's steps on devmgr's
// backend, the differential run on the kubelet oracle's.
#ifndef DEVMGR_SCENARIO_STEPS_STEP_INTERPRETER_H_
#define DEVMGR_SCENARIO_STEPS_STEP_INTERPRETER_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "scenario/format/scenario.h"
#include "scenario/report/result.h"
#include "scenario/steps/step_backend.h"

namespace devmgr::scenario {

// Takes step `st` on `backend`; notes (an admission verdict, a command's
// output) and failures (a command's exit code) go to `r`. `timeouts` are the
// scenario's (a step's own timeout wins). Returns the first error of the
// primitives it used: Refused (a primitive the backend cannot take), EnvError
// (the environment), any other status (the step failed).
absl::Status InterpretStep(const Step& st, const Timeouts& timeouts, StepBackend& backend,
                           StepResult* r);

// The bytes of a structured write_checkpoint (`uid` maps pod refs to UIDs).
absl::StatusOr<std::string> EncodeCheckpointSpec(
    const CheckpointSpec& spec, const std::function<std::string(const std::string&)>& uid);

// corrupt_checkpoint's edit of a checkpoint's bytes: the stored checksum's
// last digit goes down by one, 0 up to 1 (the JSON stays valid, the number
// in range), else the middle byte flips.
std::string CorruptCheckpointBytes(std::string bytes);

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_STEPS_STEP_INTERPRETER_H_
