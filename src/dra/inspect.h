// Analysis of a decoded dra_manager_state for people debugging a node (the
// `devmgr checkpoint` tools): a semantic diff of two checkpoints.
#ifndef DEVMGR_DRA_INSPECT_H_
#define DEVMGR_DRA_INSPECT_H_

#include <string>
#include <vector>

#include "dra/state.h"

namespace devmgr::dra {

// "<namespace>/<name>" of a claim (the kubelet's claim-info cache key).
std::string ClaimKey(const ClaimInfoState& c);

// A device as one line: "<pool>/<device>" then, when set, " share=<id>",
// " requests=[a b]" and " cdi=[x y]" (nil and empty lists are left out).
std::string DeviceLine(const Device& d);

// The semantic difference between two checkpoints' state, one line per
// change. Claims match by UID; the list order is not compared (the kubelet
// writes its cache in Go map order):
//   "+ claim NS/NAME uid=U pods=[p] drivers=[d]" / "- claim ..."
//   "~ claim NS/NAME: name NS/OLD -> NS/NEW" (same UID, renamed)
//   "~ claim NS/NAME: pod P added" / "... pod P removed"
//   "~ claim NS/NAME: driver D added (N devices)" / "... driver D removed"
//   "~ claim NS/NAME: driver D: + device LINE" / "- device LINE"
//   "~ claim NS/NAME: driver D: skipNodeOperations [a] -> [b]"
//   "~ kind: A -> B", "~ apiVersion: A -> B"
std::vector<std::string> Diff(const CheckpointData& a, const CheckpointData& b);

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_INSPECT_H_
