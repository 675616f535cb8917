// The reviewed table of known differences between devmgr and the real
// kubelet device manager that `devmgr run --compare-kubelet` reports as
// notes instead of failures. Each entry has its reason; docs/profiles.md
// ("Differential runs against the real kubelet") lists them. An entry is
// added only after review: a difference that is a devmgr fidelity bug is
// fixed instead.
#include "scenario/compare_kubelet.h"

namespace devmgr::scenario {

const std::vector<ExplainedDifference>& ExplainedDifferences() {
  static const std::vector<ExplainedDifference> kTable = {
      {".*", "1.30,1.31,1.32,1.33", R"(^feature_gates\['KubeletPodResourcesListUseActivePods'\]$)",
       "devmgr accepts the gate before 1.34 (default off, stage DEVMGR) for a patch backport "
       "that may carry it; the release's own table has no such gate"},
      {"^topology-best-effort( \\[|$)", "",
       R"(^(allocations\['[^']+'\]\['app'\]\['example\.com/gpu'\]|)"
       R"(checkpoint\['entries'\]\[\d+\]\['devices'\]\['[01]'\]|)"
       R"(calls\['gpu'\]\['received'\]\[\d+\]\['args'\]\['container_requests'\]\[0\]\['devices_ids'\])$)",
       "3 of 4 devices that all lie in the merged affinity {0,1}: the kubelet takes them from a "
       "Go set (allocateRemainingFrom over the aligned set, map order), so whether NUMA node 0 "
       "or 1 gives two devices varies from run to run, on both sides; the pairing of devices "
       "keeps NUMA nodes, so a different split shows here"},
      {"^upstream-container-options-any-order( \\[|$)", "",
       R"(^(options\['[^']+'\]\['app'\]|checkpoint\['entries'\]\[\d+\]\['alloc_resp'\])\['devices'\]\[[01]\]\['host_path'\]$)",
       "the plugin numbers device specs by their position in the Allocate request "
       "(/dev/gpu{{.DeviceIndex}} -> /dev/{{.DeviceID}}), and the kubelet builds the request "
       "from a Go set, so which device is /dev/gpu0 varies from run to run"},
  };
  return kTable;
}

}  // namespace devmgr::scenario
