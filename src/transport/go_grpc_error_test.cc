#include "transport/go_grpc_error.h"

#include "common/status_testutil.h"
#include "gtest/gtest.h"

namespace devmgr::transport {
namespace {

TEST(GoGrpcErrorTest, CodeNamesAreGos) {
  EXPECT_EQ(GoCodeName(0), "OK");
  EXPECT_EQ(GoCodeName(1), "Canceled");
  EXPECT_EQ(GoCodeName(2), "Unknown");
  EXPECT_EQ(GoCodeName(4), "DeadlineExceeded");
  EXPECT_EQ(GoCodeName(8), "ResourceExhausted");
  EXPECT_EQ(GoCodeName(12), "Unimplemented");
  EXPECT_EQ(GoCodeName(14), "Unavailable");
  EXPECT_EQ(GoCodeName(16), "Unauthenticated");
  EXPECT_EQ(GoCodeName(17), "Code(17)");
}

TEST(GoGrpcErrorTest, FormatsLikeGoStatusError) {
  const grpc::Status st(grpc::StatusCode::UNKNOWN, "boom");
  EXPECT_EQ(GoRpcErrorText(st), "rpc error: code = Unknown desc = boom");
  const absl::Status a = FromGrpcStatus(st);
  EXPECT_EQ(a.code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(a.message(), "rpc error: code = Unknown desc = boom");
  EXPECT_OK(FromGrpcStatus(grpc::Status::OK));
}

TEST(GoGrpcErrorTest, PlainErrorsGoBackAsUnknown) {
  const grpc::Status st =
      ToGrpcUnknown(absl::InvalidArgumentError("the ResourceName \"x\" is invalid"));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(st.error_message(), "the ResourceName \"x\" is invalid");
  EXPECT_OK(ToGrpcUnknown(absl::OkStatus()));
}

}  // namespace
}  // namespace devmgr::transport
