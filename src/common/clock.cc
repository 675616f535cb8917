#include "common/clock.h"

namespace devmgr {

Clock& RealClock::Get() {
  static RealClock* clock = new RealClock();
  return *clock;
}

}  // namespace devmgr
