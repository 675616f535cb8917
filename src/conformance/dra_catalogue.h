// The DRA driver catalogue of `devmgr conformance --dra`: checks of a DRA
// driver's node side (registration, ResourceSlices, NodePrepareResources,
// NodeUnprepareResources), each run in a DraSession. Results and reports
// are the device-plugin catalogue's (check.h, report.h).
#ifndef DEVMGR_CONFORMANCE_DRA_CATALOGUE_H_
#define DEVMGR_CONFORMANCE_DRA_CATALOGUE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "conformance/check.h"

namespace devmgr::conformance {

class DraSession;

struct DraCheckInfo {
  std::string id;  // stable, "dra.<area>[.<what>]"
  std::string title;
  Level level = Level::kMust;
  std::vector<std::string> tags;
  std::function<Outcome(DraSession&)> run;
  // As CheckInfo::companion (none of the DRA checks has one yet).
  std::optional<CompanionInfo> companion;
  // Checks that leave the driver as they found it share one session
  // (kShared); a check that restarts the driver or the kubelet gets its own.
  SessionUse session = SessionUse::kShared;
  // Run order inside the shared session, lower first, ties in catalogue order.
  int shared_rank = 0;
};

// The whole DRA catalogue, in report order.
const std::vector<DraCheckInfo>& DraCatalogue();

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_DRA_CATALOGUE_H_
