// StepBackend: the primitives a scenario step is made of, as one node
// under test offers them. The step interpreter (step_interpreter.h) writes
// every step kind once over this interface; two backends implement it:
// devmgr's emulated kubelet (devmgr_backend.h, over a RunContext) and the
// kubelet oracle of a differential run (compare_kubelet.cc).
//
// A backend that cannot take a primitive returns Refused(reason): the step
// is not taken there, and the caller decides what that means (the
// differential run ends its comparison with the reason as a note). Other
// errors are step failures, EnvError (run_context.h) for the environment's.
// Plugin processes are PluginHost objects (plugin_host.h) on both sides, so
// signals, control lines and stops go to them directly.
//
// Thread-compatible: a backend is driven by one thread, step after step.
#ifndef DEVMGR_SCENARIO_STEPS_STEP_BACKEND_H_
#define DEVMGR_SCENARIO_STEPS_STEP_BACKEND_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "node/status_file.h"
#include "pod/pod.h"
#include "scenario/format/scenario.h"
#include "scenario/run/plugin_host.h"

namespace devmgr::scenario {

// The status a backend returns for a primitive it cannot take.
absl::Status Refused(const std::string& reason);
// The reason of a Refused status; nullopt for any other status.
std::optional<std::string> RefusalReason(const absl::Status& s);

// The status a backend returns when the kubelet it starts fails its start
// (as a real kubelet exits: e.g. on a corrupt dra_manager_state), with the
// kubelet's error; the kubelet is then stopped. A step failure unless the
// step expects it (expect_error).
absl::Status KubeletStartFailed(const std::string& kubelet_error);
// The kubelet's error of a KubeletStartFailed status; nullopt for any other.
std::optional<std::string> KubeletStartError(const absl::Status& s);

// What wait_for_devices waits for: the resource with these counts (unset:
// any).
struct DevicesWanted {
  std::string resource;
  std::optional<int64_t> capacity;
  std::optional<int64_t> allocatable;
  std::optional<int64_t> healthy;
};

// A command that ran to its end.
struct CommandResult {
  int exit_code = -1;
  std::vector<std::string> output_tail;  // its last lines
};

class StepBackend {
 public:
  virtual ~StepBackend() = default;

  // ---- the kubelet ----
  // False only between stop_kubelet and start_kubelet (a backend without a
  // stopped state: always true).
  virtual bool KubeletRunning() const = 0;
  // Stops the kubelet; its pods and directory stay.
  virtual absl::Status StopKubelet() = 0;
  // The kubelet starts below (StartKubelet, RestartKubelet, RebootNode)
  // return KubeletStartFailed when the new kubelet fails its start.
  // Starts the stopped kubelet (FailedPrecondition when it is running);
  // `wait`: until the plugins have registered again.
  virtual absl::Status StartKubelet(bool wait, absl::Duration timeout) = 0;
  // Restarts the kubelet with its containers running; the active pods are
  // admitted again.
  virtual absl::Status RestartKubelet(bool wait, absl::Duration timeout) = 0;
  // Starts the kubelet after a reboot: no container runs, `stopped` (the
  // plugins the reboot stopped) start again, the active pods are admitted
  // again.
  virtual absl::Status RebootNode(const std::vector<PluginHost*>& stopped, bool wait,
                                  absl::Duration timeout) = 0;
  // Moves the clock by `d` and, with a running kubelet, runs the periodic
  // work now due.
  virtual absl::Status AdvanceClock(absl::Duration d) = 0;
  // One node-status pass: the Node's capacity and allocatable after it.
  virtual absl::StatusOr<node::NodeResources> UpdateNodeStatus() = 0;

  // ---- pods (`ref`: a name, namespace/name or UID) ----
  // Admits `pod` and starts its containers; notes on the verdict go to
  // `notes`.
  virtual absl::Status AdmitPod(const pod::Pod& pod, absl::Duration timeout,
                                std::vector<std::string>* notes) = 0;
  virtual absl::Status DeletePod(const std::string& ref) = 0;
  virtual absl::Status SetPodPhase(const std::string& ref, pod::Phase phase) = 0;
  virtual absl::Status RestartContainer(const std::string& ref, const std::string& container,
                                        absl::Duration timeout) = 0;
  // The UID of the pod `ref` names, or `ref` itself when none does.
  virtual std::string PodUidOr(const std::string& ref) = 0;

  // ---- plugins ----
  // The host of the scenario's plugin `name`; the result outlives the step.
  virtual absl::StatusOr<PluginHost*> Host(const std::string& name) = 0;
  // Every plugin host, in the scenario's order.
  virtual std::vector<PluginHost*> Hosts() = 0;
  // Starts `h`; `wait`: until the kubelet has taken its registration.
  virtual absl::Status StartPlugin(PluginHost& h, bool wait) = 0;

  // ---- waits (a backend whose observations settle by themselves: no-ops) ----
  // Until `resource` is registered and connected, or registered `count`
  // times; `h` (may be null): the process whose exit ends the wait.
  virtual absl::Status WaitRegistration(const std::string& resource, std::optional<int64_t> count,
                                        PluginHost* h, absl::Duration timeout) = 0;
  // Until the kubelet's devices are as `want`; `what` describes the wait.
  virtual absl::Status WaitDevices(const DevicesWanted& want, absl::Duration timeout,
                                   const std::string& what) = 0;
  // Until the kubelet sees `device` of `h`'s resource with `health`.
  virtual absl::Status WaitHealthSeen(PluginHost& h, const std::string& device,
                                      const std::string& health, absl::Duration timeout) = 0;

  // ---- the checkpoint files (the device manager's; dra_manager_state) ----
  virtual std::string CheckpointPath(CheckpointFile f) = 0;
  // The file's bytes; nullopt when it cannot be read.
  virtual std::optional<std::string> ReadCheckpoint(CheckpointFile f) = 0;
  virtual absl::Status WriteCheckpoint(CheckpointFile f, const std::string& bytes) = 0;
  // A missing file is no error.
  virtual absl::Status RemoveCheckpoint(CheckpointFile f) = 0;
  virtual absl::Status TruncateCheckpoint(CheckpointFile f, int64_t size) = 0;

  // ---- DRA (docs/dra.md) ----
  // Creates each object (ResourceClaim, ResourceClaimTemplate, DeviceClass)
  // in the API store, or replaces the one of that name, in order.
  virtual absl::Status ApplyObjects(const std::vector<nlohmann::json>& objects) = 0;
  // Deletes the object (`ns` "" for a DeviceClass); NotFound when none.
  virtual absl::Status DeleteObject(const std::string& kind, const std::string& ns,
                                    const std::string& name) = 0;
  // Until `driver` has a connected registered instance and its
  // ResourceSlices for the node list at least `min_devices` devices; `h`
  // (may be null): the process whose exit ends the wait.
  virtual absl::Status WaitDriver(const std::string& driver, int64_t min_devices, PluginHost* h,
                                  absl::Duration timeout) = 0;
  // Adds the fault SPECs (apiserver/faults.h, checked by the parser) to the
  // API endpoint, after the ones it has; they act on the requests from now
  // on.
  virtual absl::Status InjectApiFaults(const std::vector<std::string>& specs) = 0;

  // ---- commands ----
  // Runs `command` to its end within `timeout` (DeadlineExceeded, with its
  // output, after).
  virtual absl::StatusOr<CommandResult> RunCommand(const std::string& command,
                                                   absl::Duration timeout) = 0;
};

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_STEPS_STEP_BACKEND_H_
