// Observe: a snapshot of everything a step's expectations look at, taken
// from a running emulated node (manager state, pods, topology traces, the
// PodResources answers, the checkpoint file, plugin call logs, devmgr's
// recent log lines). Only what the expectations mention is gathered.
#ifndef DEVMGR_SCENARIO_RUN_OBSERVE_H_
#define DEVMGR_SCENARIO_RUN_OBSERVE_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "apiserver/server.h"
#include "apiserver/store.h"
#include "dra/driver_calls.h"
#include "node/node.h"
#include "node/pod_manager.h"
#include "podresources/options.h"
#include "scenario/expect/expectations.h"
#include "scenario/format/scenario.h"
#include "scenario/run/plugin_host.h"

namespace devmgr::scenario {

struct ObserveContext {
  node::Node* node = nullptr;
  node::PodManager* pods = nullptr;
  const podresources::Options* pod_resources = nullptr;
  std::string checkpoint_path;
  // The plugin of a `calls:` expectation (the parser checked the name).
  std::function<PluginHost*(const std::string&)> host;
  // The last devmgr log line before the step began ("" = none).
  std::string log_mark;
  // DRA (null store: off): the API store, every driver call so far and how
  // many there were when the step began, dra_manager_state's path, the
  // kubelet minor.
  apiserver::Store* dra_store = nullptr;
  std::vector<dra::DriverCallRecord> dra_calls;
  size_t dra_calls_mark = 0;
  std::string dra_checkpoint_path;
  // The API endpoint (null: off) and how many requests it had recorded when
  // the step began.
  const apiserver::ApiServer* api = nullptr;
  uint64_t api_requests_mark = 0;
  int kubelet_minor = 0;
};

// Runs a node-status pass when capacity/allocatable are expected, and
// PodResources List (with its garbage collection) when pod_resources are.
Observed Observe(const Expectations& e, const ObserveContext& ctx);

// devmgr's last `n` log lines, without their line ends.
std::vector<std::string> RecentLogLines(size_t n);

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_RUN_OBSERVE_H_
