// Test assertions on statuses that print the status when they fail:
//
//   EXPECT_OK(store.Write(bytes));        // absl::Status
//   ASSERT_OK(ParseQuantity("2Gi"));      // absl::StatusOr<T>
//   EXPECT_OK(stub->Register(&ctx, r, &e));  // grpc::Status (anything with ok(),
//                                            // error_code() and error_message())
//
// A failure reads "Expected: is OK / Actual: NOT_FOUND: open /x: ...", where
// EXPECT_TRUE(s.ok()) only says "false".
#ifndef DEVMGR_COMMON_STATUS_TESTUTIL_H_
#define DEVMGR_COMMON_STATUS_TESTUTIL_H_

#include <ostream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::statustest {

inline absl::Status StatusOf(const absl::Status& s) { return s; }

template <typename T>
absl::Status StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}

// gRPC's Status (kept generic so that this header needs no gRPC include).
template <typename S>
auto StatusOf(const S& s) -> decltype(s.error_code(), s.error_message(), absl::Status()) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(static_cast<int>(s.error_code())),
                      absl::StrCat("(gRPC) ", s.error_message()));
}

MATCHER(IsOk, negation ? "is not OK" : "is OK") {
  if (arg.ok()) return true;
  *result_listener << "the status is " << arg.ToString();
  return false;
}

}  // namespace devmgr::statustest

#define EXPECT_OK(expr) \
  EXPECT_THAT(::devmgr::statustest::StatusOf(expr), ::devmgr::statustest::IsOk()) << #expr
#define ASSERT_OK(expr) \
  ASSERT_THAT(::devmgr::statustest::StatusOf(expr), ::devmgr::statustest::IsOk()) << #expr

#endif  // DEVMGR_COMMON_STATUS_TESTUTIL_H_
