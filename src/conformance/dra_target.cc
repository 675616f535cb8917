#include "conformance/dra_target.h"

#include <signal.h>

#include <utility>

#include "fmt/format.h"
#include "process/plugin_process.h"

namespace devmgr::conformance {

std::map<std::string, std::string> DraEnv::Variables() const {
  return {{"KUBECONFIG", kubeconfig},          {"DEVMGR_NODE_NAME", node_name},
          {"DEVMGR_KUBELET_DIR", root},        {"DEVMGR_REGISTRY_DIR", registry_dir},
          {"DEVMGR_PLUGINS_DIR", plugins_dir}, {"DEVMGR_CDI_DIR", cdi_dir}};
}

namespace {

class DraProcessTarget final : public DraTarget {
 public:
  explicit DraProcessTarget(std::string command) : command_(std::move(command)) {}
  ~DraProcessTarget() override {
    if (process_) process_->Stop(absl::Seconds(1));
  }
  std::string Describe() const override { return fmt::format("--dra --plugin '{}'", command_); }
  absl::Status Start(const DraEnv& env) override {
    if (process_) process_->Stop(absl::Seconds(1));
    node::PluginProcessOptions o;
    o.command = command_;
    o.env = env.Variables();
    process_ = std::make_unique<node::PluginProcess>(o);
    return process_->Start();
  }
  bool Stop(absl::Duration grace) override {
    if (!process_ || !process_->running()) return true;
    process_->Signal(SIGTERM);
    if (process_->WaitExit(grace)) return true;
    process_->Stop(absl::ZeroDuration());
    return false;
  }
  bool Exited(int* code) const override {
    if (!process_ || !process_->WaitExit(absl::ZeroDuration())) return false;
    if (code != nullptr) *code = process_->exit_code().value_or(-1);
    return true;
  }
  std::vector<std::string> OutputTail(size_t n) const override {
    return process_ ? process_->OutputTail(n) : std::vector<std::string>{};
  }

 private:
  const std::string command_;
  std::unique_ptr<node::PluginProcess> process_;
};

}  // namespace

std::unique_ptr<DraTarget> NewDraProcessTarget(std::string command) {
  return std::make_unique<DraProcessTarget>(std::move(command));
}

}  // namespace devmgr::conformance
