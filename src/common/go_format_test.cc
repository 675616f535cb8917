// IsValidUtf8: the ASCII fast path and the rune-by-rune check agree with
// Go's utf8.ValidString.
#include "common/go_format.h"

#include <string>

#include "gtest/gtest.h"

namespace devmgr {
namespace {

TEST(IsValidUtf8, AsciiRunsAndRunesAtEveryOffset) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("GPU-6b7e2a41-7f1e-4000-8000-100000000000"));
  // A multi-byte rune, a bad byte and a truncated sequence at every offset
  // around the 8-byte blocks the fast path reads.
  for (size_t pad = 0; pad < 20; ++pad) {
    const std::string a(pad, 'a');
    EXPECT_TRUE(IsValidUtf8(a + "\xc3\xa9" + a)) << pad;
    EXPECT_TRUE(IsValidUtf8(a + "\xf0\x9f\x98\x80"));
    EXPECT_FALSE(IsValidUtf8(a + "\xff" + a)) << pad;
    EXPECT_FALSE(IsValidUtf8(a + "\xe2\x82")) << pad;
    EXPECT_FALSE(IsValidUtf8(a + "\xed\xa0\x80" + a)) << pad;  // a surrogate
    EXPECT_FALSE(IsValidUtf8(a + "\xc0\xaf"));                 // overlong
  }
}

}  // namespace
}  // namespace devmgr
