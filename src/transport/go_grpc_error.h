// Go gRPC error texts: the kubelet wraps plugin errors with %v, which prints
// a grpc-go status error as "rpc error: code = <Name> desc = <message>".
// devmgr renders C++ gRPC statuses the same way so that wrapped kubelet
// messages come out byte for byte.
#ifndef DEVMGR_TRANSPORT_GO_GRPC_ERROR_H_
#define DEVMGR_TRANSPORT_GO_GRPC_ERROR_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace devmgr::transport {

// Go's codes.Code.String(): "OK", "Canceled", ..., "Unauthenticated";
// "Code(N)" for a number outside 0-16.
std::string GoCodeName(int code);

// "rpc error: code = Unknown desc = boom". Go prints nothing special for OK;
// callers only pass errors.
std::string GoRpcErrorText(const grpc::Status& status);

// An absl::Status with the same canonical code and the Go text as message.
// OK maps to OK.
absl::Status FromGrpcStatus(const grpc::Status& status);

// Go's gRPC server turns a plain (non-status) Go error into code Unknown with
// the error text. OK maps to OK.
grpc::Status ToGrpcUnknown(const absl::Status& status);

// Go's ErrClientConnClosing: what every call on a closed ClientConn returns.
inline constexpr char kClientConnClosing[] = "grpc: the client connection is closing";

}  // namespace devmgr::transport

#endif  // DEVMGR_TRANSPORT_GO_GRPC_ERROR_H_
