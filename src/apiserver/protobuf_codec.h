// Kubernetes protobuf request bodies: the 4-byte magic "k8s\0", a
// runtime.Unknown envelope naming the object's apiVersion and kind, and the
// object's own message in its raw field (k8s.io/apimachinery
// pkg/runtime/serializer/protobuf). Decoded into the same JSON model the
// store keeps, so that a body means the same whether it came as JSON or as
// protobuf.
#ifndef DEVMGR_APISERVER_PROTOBUF_CODEC_H_
#define DEVMGR_APISERVER_PROTOBUF_CODEC_H_

#include <string>
#include <string_view>

#include "apiserver/api_error.h"
#include "nlohmann/json.hpp"

namespace google::protobuf {
class Message;
}

namespace devmgr::apiserver {

inline constexpr char kProtobufContentType[] = "application/vnd.kubernetes.protobuf";

// A decoded body: the envelope's apiVersion and kind and the object as JSON
// (with "apiVersion" and "kind" set from the envelope).
struct DecodedBody {
  std::string api_version;
  std::string kind;
  nlohmann::json object;
};

// Decodes a protobuf body. Kinds understood: ResourceSlice
// (resource.k8s.io/v1) and DeleteOptions (any apiVersion, as every group
// version registers it). BadRequest for a missing magic, a malformed
// envelope or message, another kind, a content encoding, or a field the
// message does not define (kept rather than dropped silently).
ApiOr<DecodedBody> DecodeProtobufBody(std::string_view body);

// The body a client sends for `message` (what client-go's protobuf
// serializer writes); for tests and tools.
std::string EncodeProtobufBody(const google::protobuf::Message& message,
                               const std::string& api_version, const std::string& kind);

// `message` in the JSON model: field names as in the .proto (the API's JSON
// names), int64 as numbers, Quantity as its string, Time as RFC 3339 (the
// zero time left out, as null), raw JSON bytes as JSON. BadRequest for a
// field number the message does not define.
ApiOr<nlohmann::json> MessageToJson(const google::protobuf::Message& message);

}  // namespace devmgr::apiserver

#endif  // DEVMGR_APISERVER_PROTOBUF_CODEC_H_
