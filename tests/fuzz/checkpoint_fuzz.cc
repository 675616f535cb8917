// Fuzz target: the checkpoint decoder, verifier and re-encoder (`devmgr checkpoint verify`, the
// manager's restore). Property: whatever Verify parses, Encode turns into bytes that a second
// Verify parses to the same format, stored and computed checksum and validity, and that encode
// to themselves again; a v1 checkpoint converted to v2 is always valid.
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
  const VerifyResult w = Verify(enc);
  FUZZ_CHECK(w.parsed, "re-encoded checkpoint refused: %s\n%s", w.error.c_str(), enc.c_str());
  FUZZ_CHECK(w.format == v.format, "format changed");
  FUZZ_CHECK(w.stored == v.stored, "stored checksum %llu -> %llu",
             static_cast<unsigned long long>(v.stored), static_cast<unsigned long long>(w.stored));
  FUZZ_CHECK(w.computed == v.computed, "computed checksum %llu -> %llu\n%s",
             static_cast<unsigned long long>(v.computed),
             static_cast<unsigned long long>(w.computed), enc.c_str());
  FUZZ_CHECK(w.valid == v.valid, "validity changed");
  FUZZ_CHECK(Encode(w.checkpoint) == enc, "encoding is not stable");
  if (v.format == FormatVersion::kV1) {
    const std::string v2 = Encode(ConvertV1ToV2(v.checkpoint));
    const VerifyResult c = Verify(v2);
    FUZZ_CHECK(c.parsed && c.valid && c.format == FormatVersion::kV2,
               "v1->v2 conversion is not a valid v2 checkpoint: %s", c.error.c_str());
  }
  return 0;
}
