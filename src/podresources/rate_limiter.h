// A token bucket with golang.org/x/time/rate's Allow semantics, as the
// kubelet puts in front of the PodResources API (DefaultQPS = 100,
// DefaultBurstTokens = 10): the bucket starts full, refills at `qps` tokens
// a second up to `burst`, and each call takes one token or is rejected.
#ifndef DEVMGR_PODRESOURCES_RATE_LIMITER_H_
#define DEVMGR_PODRESOURCES_RATE_LIMITER_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace devmgr::podresources {

inline constexpr double kDefaultQps = 100;
inline constexpr int kDefaultBurst = 10;
// The status message of a rejected call (code ResourceExhausted).
inline constexpr char kRateLimited[] = "rejected by rate limit";

// Thread-safe.
class RateLimiter {
 public:
  RateLimiter(double qps, int burst);
  bool Allow();
  // Allow at a given time (tests).
  bool AllowAt(absl::Time now);

 private:
  const double qps_;
  const double burst_;
  absl::Mutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_);
  absl::Time last_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace devmgr::podresources

#endif  // DEVMGR_PODRESOURCES_RATE_LIMITER_H_
