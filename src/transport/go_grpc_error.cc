#include "transport/go_grpc_error.h"

#include "fmt/format.h"

namespace devmgr::transport {

std::string GoCodeName(int code) {
  static constexpr const char* kNames[] = {
      "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
      "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
      "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
      "DataLoss", "Unauthenticated"};
  if (code >= 0 && code < static_cast<int>(std::size(kNames))) return kNames[code];
  return fmt::format("Code({})", code);
}

std::string GoRpcErrorText(const grpc::Status& status) {
  return fmt::format("rpc error: code = {} desc = {}", GoCodeName(status.error_code()),
                     status.error_message());
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  // grpc::StatusCode and absl::StatusCode share the canonical numbering.
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), GoRpcErrorText(status));
}

grpc::Status ToGrpcUnknown(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::UNKNOWN, std::string(status.message()));
}

}  // namespace devmgr::transport
