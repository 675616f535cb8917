#include "scenario/step_handlers.h"

#include "gtest/gtest.h"

namespace devmgr::scenario {
namespace {

TEST(StepHandlersTest, EveryStepKindHasAHandler) {
  for (int k = static_cast<int>(StepKind::kAdmit); k <= static_cast<int>(StepKind::kCheck); ++k) {
    EXPECT_NE(HandlerFor(static_cast<StepKind>(k)), nullptr)
        << "step kind " << StepKindName(static_cast<StepKind>(k));
  }
}

}  // namespace
}  // namespace devmgr::scenario
