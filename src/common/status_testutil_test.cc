#include "common/status_testutil.h"

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

namespace devmgr {
namespace {

// Stands for grpc::Status (the common library does not link gRPC).
struct FakeGrpcStatus {
  int code = 0;
  std::string text;
  bool ok() const { return code == 0; }
  int error_code() const { return code; }
  const std::string& error_message() const { return text; }
};

TEST(StatusTestutilTest, PassesOnOk) {
  EXPECT_OK(absl::OkStatus());
  ASSERT_OK(absl::StatusOr<int>(3));
  EXPECT_OK(FakeGrpcStatus{});
}

TEST(StatusTestutilTest, FailureMessageCarriesTheStatus) {
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(absl::NotFoundError("open /x: gone")),
                          "NOT_FOUND: open /x: gone");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(absl::StatusOr<int>(absl::InternalError("boom"))),
                          "INTERNAL: boom");
  EXPECT_NONFATAL_FAILURE(EXPECT_OK((FakeGrpcStatus{14, "connection refused"})),
                          "UNAVAILABLE: (gRPC) connection refused");
  EXPECT_FATAL_FAILURE(ASSERT_OK(absl::UnavailableError("later")), "UNAVAILABLE: later");
}

}  // namespace
}  // namespace devmgr
