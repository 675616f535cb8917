// AdmitResult: the verdict of the pod admit handler (the kubelet's
// lifecycle.PodAdmitResult as the topology manager returns it).
#ifndef DEVMGR_TOPOLOGY_ADMIT_RESULT_H_
#define DEVMGR_TOPOLOGY_ADMIT_RESULT_H_

#include <string>

namespace devmgr::topology {

struct AdmitResult {
  bool admitted = true;
  // "TopologyAffinityError", or "UnexpectedAdmissionError" on an
  // allocation error.
  std::string reason;
  // "Resources cannot be allocated with Topology locality", or
  // "Allocate failed due to <err>, which is unexpected".
  std::string message;
};

}  // namespace devmgr::topology

#endif  // DEVMGR_TOPOLOGY_ADMIT_RESULT_H_
