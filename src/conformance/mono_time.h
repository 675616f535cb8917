// MonoTime: every instant the conformance tester records (registrations,
// stream messages, plugin and kubelet starts) is read from one monotonic
// clock, std::chrono::steady_clock. absl::Now() is the wall clock: NTP
// steps and manual changes move it, so a difference of two wall-clock
// readings can be negative or wrong. Durations in reports are differences
// of MonoTimes only.
#ifndef DEVMGR_CONFORMANCE_MONO_TIME_H_
#define DEVMGR_CONFORMANCE_MONO_TIME_H_

#include <chrono>

#include "absl/time/time.h"

namespace devmgr::conformance {

using MonoTime = std::chrono::steady_clock::time_point;

inline MonoTime MonoNow() { return std::chrono::steady_clock::now(); }

// to - from as an absl::Duration (negative when `to` is earlier).
inline absl::Duration MonoSub(MonoTime to, MonoTime from) { return absl::FromChrono(to - from); }

// The deadline `d` from now, for loops that poll until a deadline.
inline MonoTime MonoDeadline(absl::Duration d) {
  return MonoNow() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         absl::ToChronoNanoseconds(d));
}

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_MONO_TIME_H_
