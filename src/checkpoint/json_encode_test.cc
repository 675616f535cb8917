// AppendGoJsonString over long strings: the 16-byte run scan stops at every
// character Go escapes, at any offset, and the result is the character-by-
// character encoding.
#include <string>

#include "checkpoint/json_codec.h"
#include "gtest/gtest.h"

namespace devmgr::checkpoint {
namespace {

std::string Quoted(std::string_view s) {
  std::string out;
  AppendGoJsonString(&out, s);
  return out;
}

// The encoding of one character alone, without the quotes.
std::string One(char c) {
  const std::string q = Quoted(std::string(1, c));
  return q.substr(1, q.size() - 2);
}

TEST(AppendGoJsonString, LongRunsStopAtEveryEscapedCharacter) {
  EXPECT_EQ(One('<'), "\\u003c");
  EXPECT_EQ(One('"'), "\\\"");
  EXPECT_EQ(One('\n'), "\\n");
  EXPECT_EQ(One('\x01'), "\\u0001");
  EXPECT_EQ(One('\x7f'), "\x7f");
  for (size_t pad = 0; pad < 40; ++pad) {
    for (char special : {'"', '\\', '<', '>', '&', '\n', '\x01', '\x1f', '\x7f', ' ', '~'}) {
      const std::string s = std::string(pad, 'a') + special + std::string(pad + 3, 'b') + special;
      std::string want = "\"";
      for (char c : s) want += One(c);
      want += "\"";
      EXPECT_EQ(Quoted(s), want) << "pad " << pad << " char " << static_cast<int>(special);
    }
    // Non-ASCII after a long ASCII run: valid runes kept, bad bytes replaced.
    const std::string a(pad, 'x');
    EXPECT_EQ(Quoted(a + "\xc3\xa9" + a), "\"" + a + "\xc3\xa9" + a + "\"");
    EXPECT_EQ(Quoted(a + "\xff" + a), "\"" + a + "\\ufffd" + a + "\"");
    EXPECT_EQ(Quoted(a + "\xe2\x80\xa8" + a), "\"" + a + "\\u2028" + a + "\"");
  }
}

}  // namespace
}  // namespace devmgr::checkpoint
