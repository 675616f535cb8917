// DevmgrBackend: the step primitives (step_backend.h) on devmgr's emulated
// kubelet, over the RunContext of one scenario run. It refuses nothing.
// Thread-compatible, as its RunContext: used from the runner's thread.
#ifndef DEVMGR_SCENARIO_RUN_DEVMGR_BACKEND_H_
#define DEVMGR_SCENARIO_RUN_DEVMGR_BACKEND_H_

#include <optional>
#include <string>
#include <vector>

#include "scenario/run/run_context.h"
#include "scenario/steps/step_backend.h"

namespace devmgr::scenario {

class DevmgrBackend final : public StepBackend {
 public:
  // `ctx` must outlive this backend.
  explicit DevmgrBackend(RunContext& ctx) : ctx_(ctx) {}
  DevmgrBackend(const DevmgrBackend&) = delete;
  DevmgrBackend& operator=(const DevmgrBackend&) = delete;

  bool KubeletRunning() const override { return ctx_.kubelet_running(); }
  absl::Status StopKubelet() override;
  absl::Status StartKubelet(bool wait, absl::Duration timeout) override;
  absl::Status RestartKubelet(bool wait, absl::Duration timeout) override;
  absl::Status RebootNode(const std::vector<PluginHost*>& stopped, bool wait,
                          absl::Duration timeout) override;
  absl::Status AdvanceClock(absl::Duration d) override;
  absl::StatusOr<node::NodeResources> UpdateNodeStatus() override;

  absl::Status AdmitPod(const pod::Pod& pod, absl::Duration timeout,
                        std::vector<std::string>* notes) override;
  absl::Status DeletePod(const std::string& ref) override;
  absl::Status SetPodPhase(const std::string& ref, pod::Phase phase) override;
  absl::Status RestartContainer(const std::string& ref, const std::string& container,
                                absl::Duration timeout) override;
  std::string PodUidOr(const std::string& ref) override;

  absl::StatusOr<PluginHost*> Host(const std::string& name) override;
  std::vector<PluginHost*> Hosts() override;
  absl::Status StartPlugin(PluginHost& h, bool wait) override;

  absl::Status WaitRegistration(const std::string& resource, std::optional<int64_t> count,
                                PluginHost* h, absl::Duration timeout) override;
  absl::Status WaitDevices(const DevicesWanted& want, absl::Duration timeout,
                           const std::string& what) override;
  absl::Status WaitHealthSeen(PluginHost& h, const std::string& device, const std::string& health,
                              absl::Duration timeout) override;

  std::string CheckpointPath(CheckpointFile f) override;
  std::optional<std::string> ReadCheckpoint(CheckpointFile f) override;
  absl::Status WriteCheckpoint(CheckpointFile f, const std::string& bytes) override;
  absl::Status RemoveCheckpoint(CheckpointFile f) override;
  absl::Status TruncateCheckpoint(CheckpointFile f, int64_t size) override;

  absl::StatusOr<CommandResult> RunCommand(const std::string& command,
                                           absl::Duration timeout) override;

  absl::Status ApplyObjects(const std::vector<nlohmann::json>& objects) override;
  absl::Status InjectApiFaults(const std::vector<std::string>& specs) override;
  absl::Status DeleteObject(const std::string& kind, const std::string& ns,
                            const std::string& name) override;
  absl::Status WaitDriver(const std::string& driver, int64_t min_devices, PluginHost* h,
                          absl::Duration timeout) override;

 private:
  // The admission verdict of pod `uid`, its devices per container and
  // failed container starts.
  void AdmissionNotes(const std::string& uid, std::vector<std::string>* notes);

  RunContext& ctx_;
};

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_RUN_DEVMGR_BACKEND_H_
