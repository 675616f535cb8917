// The device manager's checkpoint as Go's encoding/json reads and writes it
// (see checkpoint.h for the public entry points DecodeV2/DecodeV1/Encode,
// which forward here). Go's JSON quirks themselves live in go_json.h, which
// this header includes for the format's users.
#ifndef DEVMGR_CHECKPOINT_JSON_CODEC_H_
#define DEVMGR_CHECKPOINT_JSON_CODEC_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/go_json.h"  // IWYU pragma: export

namespace devmgr::checkpoint {

// Decodes `bytes` as json.Unmarshal would into the kubelet's Data (kV2) or
// DataV1 (kV1) struct, pre-initialised as the kubelet does (empty entries
// list, empty registered map). Syntax errors take precedence over type
// errors (Go validates the whole input first); the first type error wins.
// Error texts are Go's, followed by " (offset N)" where N is the 0-based
// byte offset of the offending character (syntax errors; the input length
// for "unexpected end of JSON input") or of the start of the offending value
// or key (type and base64 errors). Go's SyntaxError.Offset is N + 1.
absl::StatusOr<Checkpoint> DecodeJson(std::string_view bytes, FormatVersion format);

// json.Marshal of Data (or DataV1 when cp.format is kV1).
std::string EncodeJson(const Checkpoint& cp);

}  // namespace devmgr::checkpoint

#endif  // DEVMGR_CHECKPOINT_JSON_CODEC_H_
