#include "conformance/target.h"

#include <utility>

#include "conformance/plugin_slot.h"
#include "fmt/format.h"
#include "plugin/sample_plugin.h"
#include "process/plugin_process.h"

namespace devmgr::conformance {
namespace {

class ProcessTarget final : public Target {
 public:
  ProcessTarget(std::string command, bool private_mount)
      : command_(std::move(command)), private_mount_(private_mount) {}
  Kind kind() const override { return Kind::kProcess; }
  std::string Describe() const override {
    return fmt::format("--plugin '{}'{}", command_, private_mount_ ? " --private-mount" : "");
  }
  absl::Status Start(const std::string& dir) override {
    node::PluginProcessOptions o;
    o.command = command_;
    o.env["DEVMGR_PLUGIN_DIR"] = dir;
    o.private_mount = private_mount_;
    o.plugin_dir = dir;
    return process_.Start(o);
  }
  bool Stop(absl::Duration grace) override { return process_.Stop(grace); }
  bool Exited(int* code) const override { return process_.Exited(code); }
  std::vector<std::string> OutputTail(size_t n) const override { return process_.OutputTail(n); }

 private:
  const std::string command_;
  const bool private_mount_;
  PluginSlot process_;
};

class InProcessTarget final : public Target {
 public:
  InProcessTarget(plugin::Config config, std::string call_log_path)
      : config_(std::move(config)), call_log_path_(std::move(call_log_path)) {}
  ~InProcessTarget() override { Stop(absl::ZeroDuration()); }
  Kind kind() const override { return Kind::kInProcess; }
  std::string Describe() const override {
    return fmt::format("in-process sample plugin ({})", config_.resource);
  }
  absl::Status Start(const std::string& dir) override {
    Stop(absl::ZeroDuration());
    plugin::PluginOptions o;
    o.dir = dir;
    o.registry_dir = dir;
    o.call_log_path = call_log_path_;
    plugin_ = std::make_unique<plugin::SamplePlugin>(config_, o);
    return plugin_->Start();
  }
  bool Stop(absl::Duration) override {
    if (plugin_) {
      plugin_->Stop();
      plugin_.reset();
    }
    return true;
  }

 private:
  const plugin::Config config_;
  const std::string call_log_path_;
  std::unique_ptr<plugin::SamplePlugin> plugin_;
};

class SocketTarget final : public Target {
 public:
  explicit SocketTarget(std::string path) : path_(std::move(path)) {}
  Kind kind() const override { return Kind::kSocket; }
  std::string Describe() const override { return "--socket " + path_; }
  std::string socket_path() const override { return path_; }

 private:
  const std::string path_;
};

class ResourceTarget final : public Target {
 public:
  explicit ResourceTarget(std::string resource) : resource_(std::move(resource)) {}
  Kind kind() const override { return Kind::kResource; }
  std::string Describe() const override { return "--resource " + resource_; }
  std::string resource() const override { return resource_; }

 private:
  const std::string resource_;
};

}  // namespace

std::unique_ptr<Target> NewProcessTarget(std::string command, bool private_mount) {
  return std::make_unique<ProcessTarget>(std::move(command), private_mount);
}
std::unique_ptr<Target> NewInProcessTarget(plugin::Config config, std::string call_log_path) {
  return std::make_unique<InProcessTarget>(std::move(config), std::move(call_log_path));
}
std::unique_ptr<Target> NewSocketTarget(std::string socket_path) {
  return std::make_unique<SocketTarget>(std::move(socket_path));
}
std::unique_ptr<Target> NewResourceTarget(std::string resource) {
  return std::make_unique<ResourceTarget>(std::move(resource));
}

}  // namespace devmgr::conformance
