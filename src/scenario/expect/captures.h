// Captures: the values a step names (`capture:`) for later expectations to
// compare with (`$name`): the devices of a container, a device set of a
// resource, the devices of a checkpoint entry. Pure functions over
// Observed, so they are unit-tested without a node.
#ifndef DEVMGR_SCENARIO_EXPECT_CAPTURES_H_
#define DEVMGR_SCENARIO_EXPECT_CAPTURES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scenario/expect/expectations.h"
#include "scenario/format/scenario.h"

namespace devmgr::scenario {

// The sorted ids `c` names in `o`. NotFound (with what exists) when the pod,
// container, resource or checkpoint entry is not there; a container that
// holds no device of the resource captures the empty set.
absl::StatusOr<std::vector<std::string>> TakeCapture(const CaptureSpec& c, const Observed& o);

// What must be observed for `captures` (the checkpoint, when one reads it).
Expectations CaptureNeeds(const std::vector<CaptureSpec>& captures);

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_EXPECT_CAPTURES_H_
