// Fuzz target: the checkpoint decoder, verifier and re-encoder (`devmgr checkpoint verify`, the
// manager's restore). Properties:
//  - whatever Verify parses, Encode turns into bytes that the SAME format's decoder reads back
//    to the same stored and computed checksum and validity, and that encode to themselves;
//  - Verify of the re-encoded bytes keeps the kubelet's verdict (valid or not) and, for a valid
//    file, the format;
//  - a v1 checkpoint converted to v2 is always valid.
// The format label of a file that verifies under neither rule may change on re-encoding, but
// only when the re-encoded bytes parse as both v1 and v2: a v1 file with no device list left
// and a v2 file with no device map are the same JSON (e.g. every "DeviceIDs" null), and the
// kubelet does not tell them apart either (it tries v2, then v1, and reports the v2 error).
// See docs/reliability.md and tests/fuzz/regressions/checkpoint/.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "checkpoint/checkpoint.h"
#include "fuzz_check.h"

using namespace devmgr::checkpoint;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const VerifyResult v = Verify(bytes);
  if (!v.parsed) {
    FUZZ_CHECK(!v.error.empty(), "a refused checkpoint has no error message");
    return 0;
  }
  const std::string enc = Encode(v.checkpoint);
  const absl::StatusOr<Checkpoint> same =
      v.format == FormatVersion::kV1 ? DecodeV1(enc) : DecodeV2(enc);
  FUZZ_CHECK(same.ok(), "re-encoded checkpoint refused by its own format's decoder: %s\n%s",
             std::string(same.status().message()).c_str(), enc.c_str());
  FUZZ_CHECK(same->checksum == v.stored, "stored checksum %llu -> %llu",
             static_cast<unsigned long long>(v.stored),
             static_cast<unsigned long long>(same->checksum));
  FUZZ_CHECK(ComputedChecksum(*same) == v.computed, "computed checksum %llu -> %llu\n%s",
             static_cast<unsigned long long>(v.computed),
             static_cast<unsigned long long>(ComputedChecksum(*same)), enc.c_str());
  FUZZ_CHECK(Encode(*same) == enc, "encoding is not stable");

  const VerifyResult w = Verify(enc);
  FUZZ_CHECK(w.parsed, "re-encoded checkpoint refused: %s\n%s", w.error.c_str(), enc.c_str());
  FUZZ_CHECK(w.valid == v.valid, "validity changed");
  if (w.format != v.format) {
    FUZZ_CHECK(!v.valid && DecodeV1(enc).ok() && DecodeV2(enc).ok(),
               "format changed for a valid or unambiguous checkpoint\n%s", enc.c_str());
  }
  if (v.format == FormatVersion::kV1) {
    const std::string v2 = Encode(ConvertV1ToV2(v.checkpoint));
    const VerifyResult c = Verify(v2);
    FUZZ_CHECK(c.parsed && c.valid && c.format == FormatVersion::kV2,
               "v1->v2 conversion is not a valid v2 checkpoint: %s", c.error.c_str());
  }
  return 0;
}
