#include "dra/state.h"

#include <utility>

namespace devmgr::dra {

StateLayout LayoutForMinor(int minor) {
  if (minor <= 34) return StateLayout::k134;
  if (minor <= 36) return StateLayout::k135;
  return StateLayout::k137;
}

std::string_view LayoutName(StateLayout layout) {
  switch (layout) {
    case StateLayout::k134:
      return "1.34";
    case StateLayout::k135:
      return "1.35";
    case StateLayout::k137:
      return "1.37";
  }
  return "?";
}

CheckpointData NewCheckpointData(ClaimInfoStateList list) {
  CheckpointData d;
  d.kind = kCheckpointKind;
  d.api_version = kCheckpointAPIVersion;
  d.claim_info_state_list = std::move(list);
  return d;
}

}  // namespace devmgr::dra
