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
  DraProcessTarget(std::string command, bool private_mount)
      : command_(std::move(command)), private_mount_(private_mount) {}
  std::string Describe() const override {
    return fmt::format("--dra{} --plugin '{}'", private_mount_ ? " --private-mount" : "", command_);
  }
  absl::Status Start(const DraEnv& env) override { return process_.Start(Options(env)); }
  bool Stop(absl::Duration grace) override { return process_.Stop(grace); }
  bool Exited(int* code) const override { return process_.Exited(code); }
  std::vector<std::string> OutputTail(size_t n) const override { return process_.OutputTail(n); }
  std::vector<BindPath> Binds(const DraEnv& env) const override {
    return node::PrivateMountBinds(Options(env));
  }

 private:
  node::PluginProcessOptions Options(const DraEnv& env) const {
    node::PluginProcessOptions o;
    o.command = command_;
    o.env = env.Variables();
    o.private_mount = private_mount_;
    o.registry_dir = env.registry_dir;
    o.plugins_dir = env.plugins_dir;
    o.cdi_dir = env.cdi_dir;
    return o;
  }

  const std::string command_;
  const bool private_mount_;
  PluginSlot process_;
};

}  // namespace

std::unique_ptr<DraTarget> NewDraProcessTarget(std::string command, bool private_mount) {
  return std::make_unique<DraProcessTarget>(std::move(command), private_mount);
}

}  // namespace devmgr::conformance
