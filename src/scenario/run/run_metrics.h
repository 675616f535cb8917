// RunMetrics: the kubelet metrics of a whole `devmgr run`, as if one
// kubelet process had lived through every scenario, kubelet restart and
// node reboot. Registration and aligned-resource counts kept by each
// emulated node are summed over the nodes; Allocate durations and
// admissions are observed through the node hooks.
#ifndef DEVMGR_SCENARIO_RUN_RUN_METRICS_H_
#define DEVMGR_SCENARIO_RUN_RUN_METRICS_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "kubelet/profile.h"
#include "metrics/kubelet_metrics.h"
#include "node/node.h"

namespace devmgr::scenario {

// Thread-safe.
class RunMetrics {
 public:
  // Metric families as `profile`'s kubelet registers them; the PodResources
  // Get counters when `pod_resources_get` (the gate is on in some run).
  RunMetrics(const Profile& profile, bool pod_resources_get);
  ~RunMetrics();
  RunMetrics(const RunMetrics&) = delete;
  RunMetrics& operator=(const RunMetrics&) = delete;

  // Sets the hooks of NodeOptions (Allocate durations, admissions).
  void Hook(node::NodeOptions* o);
  // Counts `n` from now on (until Detach). One node at a time.
  void Attach(node::Node* n);
  // Folds the attached node's counts into the totals; call it after the
  // node stopped and before it is destroyed. No-op when `n` is not attached.
  void Detach(node::Node* n);

  metrics::KubeletMetrics& metrics() { return metrics_; }
  std::string Render() const { return metrics_.Render(); }

 private:
  metrics::KubeletMetrics metrics_;
  mutable absl::Mutex mu_;
  node::Node* node_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::map<std::string, int64_t> registrations_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> aligned_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_RUN_RUN_METRICS_H_
