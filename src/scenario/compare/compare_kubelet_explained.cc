// The reviewed table of known differences between devmgr and the real
// kubelet device manager that `devmgr run --compare-kubelet` reports as
// notes instead of failures. Each entry has its reason; docs/profiles.md
// ("Differential runs against the real kubelet") lists them. An entry is
// added only after review: a difference that is a devmgr fidelity bug is
// fixed instead.
#include "scenario/compare/compare_kubelet.h"

namespace devmgr::scenario {

const std::vector<ExplainedDifference>& ExplainedDifferences() {
  static const std::vector<ExplainedDifference> kTable = {
      {"^upstream-container-options-any-order( \\[|$)", "",
       R"(^(options\['[^']+'\]\['app'\]|checkpoint\['entries'\]\[\d+\]\['alloc_resp'\])\['devices'\]\[[01]\]\['host_path'\]$)",
       "the plugin numbers device specs by their position in the Allocate request "
       "(/dev/gpu{{.DeviceIndex}} -> /dev/{{.DeviceID}}), and the kubelet builds the request "
       "from a Go set, so which device is /dev/gpu0 varies from run to run"},
      {"", "", R"(^kubelet start error: devmgr adds \(offset N\)$)",
       "devmgr's Go JSON errors end in ' (offset N)', the offending byte "
       "(docs/checkpoint_format.md, "
       "'Error texts'; Go's SyntaxError keeps the offset in a field, not in its text): a start on "
       "a "
       "dra_manager_state that is not JSON fails with the kubelet's error plus that suffix"},
  };
  return kTable;
}

}  // namespace devmgr::scenario
