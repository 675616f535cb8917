// Go encoding/json compatible reading and writing of checkpoint files.
// This is the one place that knows Go's JSON quirks (see checkpoint.h for
// the public entry points DecodeV2/DecodeV1/Encode, which forward here).
#ifndef DEVMGR_CHECKPOINT_JSON_CODEC_H_
#define DEVMGR_CHECKPOINT_JSON_CODEC_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "checkpoint/checkpoint.h"

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

// Appends s as Go's json encoder writes a string (with the quotes; HTML
// escaping on; invalid UTF-8 as \ufffd; U+2028/U+2029 escaped).
void AppendGoJsonString(std::string* out, std::string_view s);

// Length (2..4) of the valid UTF-8 sequence at q (q < end), 0 when invalid
// (Go's utf8.DecodeRune then returns RuneError with width 1).
inline size_t Utf8SeqLen(const unsigned char* q, const unsigned char* end) {
  const unsigned char b0 = q[0];
  const size_t avail = static_cast<size_t>(end - q);
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < avail && q[i] >= lo && q[i] <= hi;
  };
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (b0 == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (b0 == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (b0 >= 0xF1 && b0 <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b0 == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

// Go's base64.StdEncoding: Encode (padded) and Decode (CR/LF ignored).
// DecodeBase64 returns false and sets *error_offset on corrupt input
// ("illegal base64 data at input byte N").
void AppendBase64(std::string* out, std::string_view bytes);
bool DecodeBase64(std::string_view src, std::string* out, size_t* error_offset);

}  // namespace devmgr::checkpoint

#endif  // DEVMGR_CHECKPOINT_JSON_CODEC_H_
