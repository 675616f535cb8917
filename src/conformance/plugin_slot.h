// The plugin process of a conformance target (device plugin or DRA driver):
// started anew for each session, stopped as the tester stops it.
#ifndef DEVMGR_CONFORMANCE_PLUGIN_SLOT_H_
#define DEVMGR_CONFORMANCE_PLUGIN_SLOT_H_

#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "process/plugin_process.h"

namespace devmgr::conformance {

class PluginSlot {
 public:
  PluginSlot() = default;
  PluginSlot(const PluginSlot&) = delete;
  PluginSlot& operator=(const PluginSlot&) = delete;
  ~PluginSlot() {
    if (process_) process_->Stop(absl::Seconds(1));
  }

  // Stops the previous process (if any) and starts one with `o`.
  absl::Status Start(const node::PluginProcessOptions& o) {
    if (process_) process_->Stop(absl::Seconds(1));
    process_ = std::make_unique<node::PluginProcess>(o);
    return process_->Start();
  }
  // SIGTERM, then up to `grace` for the exit; true when it exited in time
  // (it is killed otherwise).
  bool Stop(absl::Duration grace) {
    if (!process_ || !process_->running()) return true;
    process_->Signal(SIGTERM);
    if (process_->WaitExit(grace)) return true;
    process_->Stop(absl::ZeroDuration());
    return false;
  }
  // True (and its exit code) when the process has exited; WaitExit with no
  // timeout reaps it.
  bool Exited(int* code) const {
    if (!process_ || !process_->WaitExit(absl::ZeroDuration())) return false;
    if (code != nullptr) *code = process_->exit_code().value_or(-1);
    return true;
  }
  std::vector<std::string> OutputTail(size_t n) const {
    return process_ ? process_->OutputTail(n) : std::vector<std::string>{};
  }

 private:
  std::unique_ptr<node::PluginProcess> process_;
};

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_PLUGIN_SLOT_H_
