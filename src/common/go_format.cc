#include "common/go_format.h"

#include <cstdint>
#include <cstring>

#include "fmt/format.h"

namespace devmgr {
namespace {

// Decodes one UTF-8 rune at s[i]. Returns the rune and sets `len`; on an
// invalid sequence returns -1 with len = 1 (Go's RuneError, width 1).
int32_t DecodeRune(std::string_view s, size_t i, size_t* len) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  *len = 1;
  if (b0 < 0x80) return b0;
  int need;
  int32_t r;
  int32_t min;
  if ((b0 & 0xE0) == 0xC0) {
    need = 1, r = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    need = 2, r = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    need = 3, r = b0 & 0x07, min = 0x10000;
  } else {
    return -1;
  }
  for (int k = 1; k <= need; ++k) {
    if (i + k >= s.size()) return -1;
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return -1;
    r = (r << 6) | (b & 0x3F);
  }
  if (r < min || r > 0x10FFFF || (r >= 0xD800 && r <= 0xDFFF)) return -1;
  *len = need + 1;
  return r;
}

// Go's unicode.IsPrint, exact for ASCII and Latin-1 and for the separator
// and format characters listed; other non-ASCII runes count as printable
// (an approximation: Go also rejects unassigned code points).
bool IsPrintRune(int32_t r) {
  if (r < 0x80) return r >= 0x20 && r < 0x7F;
  if (r < 0xA0) return false;                    // C1 controls
  if (r == 0xAD) return false;                   // soft hyphen (Cf)
  if (r == 0x1680) return false;                 // Ogham space (Zs)
  if (r >= 0x2000 && r <= 0x200F) return false;  // Zs spaces and Cf marks
  if (r >= 0x2028 && r <= 0x202F) return false;  // Zl, Zp, Cf, Zs
  if (r == 0x205F || r == 0x3000) return false;  // Zs
  if (r >= 0x2060 && r <= 0x206F) return false;  // Cf
  if (r == 0xFEFF) return false;                 // BOM
  if (r >= 0xFFF9 && r <= 0xFFFB) return false;
  if (r == 0xFFFE || r == 0xFFFF) return false;
  return true;
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  // ASCII runs, eight bytes at a time (device IDs, names, paths): a
  // ListAndWatch list of a million devices is checked on every update.
  size_t i = 0;
  while (i + 8 <= s.size()) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if ((w & 0x8080808080808080ull) != 0) break;
    i += 8;
  }
  while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) ++i;
  for (; i < s.size();) {
    size_t len;
    if (DecodeRune(s, i, &len) < 0) return false;
    i += len;
  }
  return true;
}

std::string GoQuote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    size_t len;
    const int32_t r = DecodeRune(s, i, &len);
    if (r < 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i]));
      i += 1;
      continue;
    }
    switch (r) {
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\v':
        out += "\\v";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        if (IsPrintRune(r)) {
          out.append(s.substr(i, len));
        } else if (r < 0x20 || r == 0x7F) {
          out += fmt::format("\\x{:02x}", r);
        } else if (r < 0x10000) {
          out += fmt::format("\\u{:04x}", r);
        } else {
          out += fmt::format("\\U{:08x}", r);
        }
    }
    i += len;
  }
  out += '"';
  return out;
}

std::string GoQuoteList(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ' ';
    out += GoQuote(v[i]);
  }
  return out + "]";
}

std::string GoList(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ' ';
    out += v[i];
  }
  return out + "]";
}

}  // namespace devmgr
