#include "conformance/dra_target.h"

#include <utility>

#include "conformance/plugin_slot.h"
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
  std::string Describe() const override { return fmt::format("--dra --plugin '{}'", command_); }
  absl::Status Start(const DraEnv& env) override {
    node::PluginProcessOptions o;
    o.command = command_;
    o.env = env.Variables();
    return process_.Start(o);
  }
  bool Stop(absl::Duration grace) override { return process_.Stop(grace); }
  bool Exited(int* code) const override { return process_.Exited(code); }
  std::vector<std::string> OutputTail(size_t n) const override { return process_.OutputTail(n); }

 private:
  const std::string command_;
  PluginSlot process_;
};

}  // namespace

std::unique_ptr<DraTarget> NewDraProcessTarget(std::string command) {
  return std::make_unique<DraProcessTarget>(std::move(command));
}

}  // namespace devmgr::conformance
