#include "podresources/rate_limiter.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace devmgr::podresources {

RateLimiter::RateLimiter(double qps, int burst) : qps_(qps), burst_(burst), tokens_(burst) {}

bool RateLimiter::Allow() { return AllowAt(absl::Now()); }

bool RateLimiter::AllowAt(absl::Time now) {
  absl::MutexLock l(&mu_);
  if (last_ != absl::InfinitePast() && now > last_) {
    tokens_ = std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
  }
  if (last_ == absl::InfinitePast() || now > last_) last_ = now;
  if (tokens_ >= 1) {
    tokens_ -= 1;
    return true;
  }
  return false;
}

}  // namespace devmgr::podresources
