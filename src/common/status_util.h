// Small helpers around absl::Status used across module boundaries.
#ifndef DEVMGR_COMMON_STATUS_UTIL_H_
#define DEVMGR_COMMON_STATUS_UTIL_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns from the enclosing function when `expr` yields a non-OK status.
#define DEVMGR_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::absl::Status devmgr_status_ = (expr);          \
    if (!devmgr_status_.ok()) return devmgr_status_; \
  } while (0)

#endif  // DEVMGR_COMMON_STATUS_UTIL_H_
