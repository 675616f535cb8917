#include "scenario/run/plugin_host.h"

#include <signal.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "checkpoint/checkpoint.h"
#include "common/fs.h"
#include "fmt/format.h"

namespace devmgr::scenario {
namespace {

std::string SafeName(const std::string& name) {
  std::string s = name;
  for (char& c : s) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '-';
  }
  return s;
}

}  // namespace

node::PluginProcessOptions HostEnv::ProcessDirs(bool private_mount) const {
  node::PluginProcessOptions o;
  o.private_mount = private_mount;
  o.plugin_dir = plugin_dir;
  o.registry_dir = registry_dir;
  o.plugins_dir = dra_plugin_dir;
  o.cdi_dir = cdi_dir;
  return o;
}

std::map<std::string, std::string> HostEnv::Vars() const {
  std::map<std::string, std::string> vars = {
      {"DEVMGR_BIN", devmgr_bin},
      {"DEVMGR_PLUGIN_DIR", plugin_dir},
      {"DEVMGR_REGISTRY_DIR", registry_dir},
      {"DEVMGR_WORK_DIR", work_dir},
      {"DEVMGR_SCENARIO_DIR", scenario_dir},
      {"DEVMGR_CHECKPOINT", plugin_dir + "/" + checkpoint::kCheckpointName},
      {"DEVMGR_KUBELET_VERSION", kubelet_version},
      {"DEVMGR_POD_RESOURCES_SOCKET", pod_resources_socket},
      {"DEVMGR_METRICS_URL", metrics_url},
  };
  if (!kubeconfig.empty()) {
    vars["KUBECONFIG"] = kubeconfig;
    vars["DEVMGR_NODE_NAME"] = node_name;
    vars["DEVMGR_DRA_PLUGIN_DIR"] = dra_plugin_dir;
    vars["DEVMGR_CDI_DIR"] = cdi_dir;
    vars["DEVMGR_DRA_CHECKPOINT"] = dra_checkpoint;
  }
  return vars;
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

PluginHost::PluginHost(const PluginSpec& spec, const HostEnv& env) : spec_(spec), env_(env) {
  const std::string base = env_.work_dir + "/plugins/" + SafeName(spec_.name);
  if (!spec_.sample_plugin_config.empty()) {
    config_path_ = base + ".yaml";
    control_ = base + ".control";
    call_log_ = base + ".calls.jsonl";
    command_ =
        fmt::format("{} sample-plugin --config {} --dir {} --control {} --call-log {}",
                    ShellQuote(env_.devmgr_bin), ShellQuote(config_path_),
                    ShellQuote(env_.plugin_dir), ShellQuote(control_), ShellQuote(call_log_));
    if (!env_.registry_dir.empty()) command_ += " --registry-dir " + ShellQuote(env_.registry_dir);
  } else {
    command_ = spec_.command;
    for (const std::string& a : spec_.args) command_ += " " + ShellQuote(a);
    auto resolve = [&](const std::string& p) {
      if (p.empty() || p[0] == '/') return p;
      return env_.work_dir + "/" + p;
    };
    control_ = resolve(spec_.control);
    call_log_ = resolve(spec_.call_log);
    // A DRA driver without a call log of its own gets one through
    // $DEVMGR_DRA_CALL_LOG (`devmgr sample-dra-driver` writes it;
    // docs/sample-dra-driver.md): what the differential run compares.
    if (call_log_.empty() && !spec_.dra_driver.empty()) {
      call_log_ = base + ".dra-calls.jsonl";
      dra_call_log_env_ = true;
    }
  }
}

PluginHost::~PluginHost() { Stop(absl::Seconds(1)); }

absl::Status PluginHost::Prepare() {
  if (!config_path_.empty()) {
    if (absl::Status s = fs::WriteOutputFile(config_path_, spec_.sample_plugin_config); !s.ok())
      return s;
  }
  if (!control_.empty()) {
    if (absl::Status s = fs::WriteOutputFile(control_, ""); !s.ok()) return s;
  }
  if (!call_log_.empty() && !spec_.sample_plugin_config.empty()) {
    if (absl::Status s = fs::WriteOutputFile(call_log_, ""); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status PluginHost::Start() {
  if (spec_.external) {
    return absl::FailedPreconditionError(
        fmt::format("plugin '{}' is external: devmgr does not start it", spec_.name));
  }
  if (process_ && process_->running()) {
    return absl::FailedPreconditionError(fmt::format("plugin '{}' is already running", spec_.name));
  }
  if (process_) {
    for (std::string& l : process_->OutputTail(50)) old_output_.push_back(std::move(l));
    if (old_output_.size() > 50) old_output_.erase(old_output_.begin(), old_output_.end() - 50);
  }
  node::PluginProcessOptions o = env_.ProcessDirs(spec_.private_mount);
  o.command = command_;
  o.env = env_.Vars();
  if (dra_call_log_env_) o.env["DEVMGR_DRA_CALL_LOG"] = call_log_;
  for (const auto& [k, v] : spec_.env) o.env[k] = v;
  o.working_dir = spec_.working_dir.empty()     ? ""
                  : spec_.working_dir[0] == '/' ? spec_.working_dir
                                                : env_.scenario_dir + "/" + spec_.working_dir;
  o.extra_binds = spec_.binds;
  process_ = std::make_unique<node::PluginProcess>(o);
  paused_ = false;
  absl::Status s = process_->Start();
  if (s.ok()) started_once_ = true;
  return s;
}

void PluginHost::Stop(absl::Duration grace) {
  if (process_) process_->Stop(grace);
  paused_ = false;
}

void PluginHost::Kill() {
  if (!process_) return;
  process_->Signal(SIGKILL);
  process_->WaitExit(absl::Seconds(5));
  paused_ = false;
}

void PluginHost::Signal(int sig) {
  if (!process_) return;
  process_->Signal(sig);
  if (sig == SIGSTOP) paused_ = true;
  if (sig == SIGCONT) paused_ = false;
}

bool PluginHost::running() const {
  // running() alone does not notice an exit nobody waited for.
  return process_ && !process_->WaitExit(absl::ZeroDuration());
}

absl::Status PluginHost::Control(const std::string& line) {
  if (control_.empty()) {
    return absl::FailedPreconditionError(
        fmt::format("plugin '{}' has no control file", spec_.name));
  }
  std::ofstream out(control_, std::ios::app);
  if (!out) return absl::UnavailableError(fmt::format("{}: {}", control_, std::strerror(errno)));
  out << line << "\n";
  out.flush();
  if (!out) return absl::UnavailableError(fmt::format("{}: write failed", control_));
  return absl::OkStatus();
}

std::vector<nlohmann::json> PluginHost::Calls() const {
  std::vector<nlohmann::json> out;
  if (call_log_.empty()) return out;
  std::ifstream in(call_log_, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a line still being written (no '\n' yet)
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) continue;
    out.push_back(std::move(j));
  }
  return out;
}

void PluginHost::MarkCalls() { mark_ = Calls().size(); }

std::vector<nlohmann::json> PluginHost::CallsSinceMark() const {
  std::vector<nlohmann::json> all = Calls();
  if (mark_ >= all.size()) return {};
  return std::vector<nlohmann::json>(all.begin() + static_cast<std::ptrdiff_t>(mark_), all.end());
}

std::vector<std::string> PluginHost::OutputTail(size_t n) const {
  std::vector<std::string> out = old_output_;
  if (process_) {
    for (std::string& l : process_->OutputTail(n)) out.push_back(std::move(l));
  }
  if (out.size() > n) out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(n));
  return out;
}

std::string PluginHost::Describe() const {
  if (spec_.external) return "external";
  if (!process_) return "not started";
  if (running()) {
    return fmt::format("pid {}, {}", process_->pid(), paused_ ? "stopped (SIGSTOP)" : "running");
  }
  const std::optional<int> code = process_->exit_code();
  if (!code) return "not running";
  if (*code > 128)
    return fmt::format("killed by signal {} ({})", *code - 128, strsignal(*code - 128));
  return fmt::format("exited with code {}", *code);
}

}  // namespace devmgr::scenario
