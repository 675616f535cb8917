// The Go encoding/json compatible reader (go_json.h): Go's scanner rules
// and error texts, string unquoting, and the decoding of Go's basic types
// into a model of Go's memory (slices with a reusable backing array), so
// that duplicate keys behave as json.Unmarshal makes them behave.
#include "checkpoint/go_json.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "common/go_format.h"
#include "fmt/format.h"

namespace devmgr::checkpoint {
namespace {

// ---------------------------------------------------------------------------
// Character tables and small helpers.

enum CharClass : uint8_t { kPlain = 0, kQuote, kBackslash, kControl, kHigh };
struct StringClasses {
  std::array<uint8_t, 256> c{};
  constexpr StringClasses() {
    for (int i = 0; i < 256; ++i) {
      c[i] = i < 0x20 ? kControl : i >= 0x80 ? kHigh : kPlain;
    }
    c['"'] = kQuote;
    c['\\'] = kBackslash;
  }
};
constexpr StringClasses kStringClasses;

int HexVal(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }

// Advances past plain string bytes (printable ASCII other than '"' and
// '\\'), eight at a time while possible.
const unsigned char* SkipPlain(const unsigned char* q, const unsigned char* end) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  while (end - q >= 8) {
    uint64_t w;
    std::memcpy(&w, q, 8);
    const uint64_t quote = w ^ (kOnes * '"');
    const uint64_t slash = w ^ (kOnes * '\\');
    // A byte is special when it is >= 0x80, < 0x20, '"' or '\\'.
    const uint64_t special =
        (w | ((w - kOnes * 0x20) & ~w) | ((quote - kOnes) & ~quote) | ((slash - kOnes) & ~slash)) &
        kHigh;
    if (special != 0) break;
    q += 8;
  }
  while (q < end && kStringClasses.c[*q] == kPlain) ++q;
  return q;
}

void AppendUtf8(std::string* out, uint32_t r) {
  if (r < 0x80) {
    out->push_back(static_cast<char>(r));
  } else if (r < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (r >> 6)));
    out->push_back(static_cast<char>(0x80 | (r & 0x3F)));
  } else if (r < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (r >> 12)));
    out->push_back(static_cast<char>(0x80 | ((r >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (r & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (r >> 18)));
    out->push_back(static_cast<char>(0x80 | ((r >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((r >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (r & 0x3F)));
  }
}

constexpr char kReplacement[] = "\xEF\xBF\xBD";

// Reads "\uXXXX" at q (Go's getu4); -1 when not there.
int32_t GetU4(const unsigned char* q, const unsigned char* end) {
  if (end - q < 6 || q[0] != '\\' || q[1] != 'u') return -1;
  int32_t r = 0;
  for (int i = 2; i < 6; ++i) {
    const int h = HexVal(q[i]);
    if (h < 0) return -1;
    r = r * 16 + h;
  }
  return r;
}

}  // namespace

// Go's unquote of an already validated string body: escapes resolved,
// invalid UTF-8 bytes and unpaired surrogates become U+FFFD.
void UnquoteInto(std::string_view raw, std::string* out) {
  out->clear();
  out->reserve(raw.size());
  const auto* q = reinterpret_cast<const unsigned char*>(raw.data());
  const auto* end = q + raw.size();
  while (q < end) {
    const unsigned char c = *q;
    if (c == '\\') {
      const unsigned char e = q[1];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out->push_back(static_cast<char>(e));
          q += 2;
          break;
        case 'b':
          out->push_back('\b');
          q += 2;
          break;
        case 'f':
          out->push_back('\f');
          q += 2;
          break;
        case 'n':
          out->push_back('\n');
          q += 2;
          break;
        case 'r':
          out->push_back('\r');
          q += 2;
          break;
        case 't':
          out->push_back('\t');
          q += 2;
          break;
        default: {  // 'u' (validated by the scanner)
          int32_t r = GetU4(q, end);
          q += 6;
          if (r >= 0xD800 && r < 0xE000) {
            const int32_t r2 = GetU4(q, end);
            if (r < 0xDC00 && r2 >= 0xDC00 && r2 < 0xE000) {
              q += 6;
              AppendUtf8(out, 0x10000 + ((static_cast<uint32_t>(r) - 0xD800) << 10) +
                                  (static_cast<uint32_t>(r2) - 0xDC00));
              break;
            }
            r = 0xFFFD;
          }
          AppendUtf8(out, static_cast<uint32_t>(r));
        }
      }
    } else if (c < 0x80) {
      const unsigned char* s = q;
      while (q < end && *q < 0x80 && *q != '\\') ++q;
      out->append(reinterpret_cast<const char*>(s), q - s);
    } else {
      const size_t n = Utf8SeqLen(q, end);
      if (n == 0) {
        out->append(kReplacement, 3);
        ++q;
      } else {
        out->append(reinterpret_cast<const char*>(q), n);
        q += n;
      }
    }
  }
}

namespace {

// Go's quoteChar for syntax errors.
std::string QuoteChar(unsigned char c) {
  if (c == '\'') return "'\\''";
  if (c == '"') return "'\"'";
  std::string q;
  if (c >= 0x80) {
    // string(byte) is the rune U+00XX; %q escapes the non-printable ones.
    if (c < 0xA1 || c == 0xAD) {
      q = fmt::format("\\u{:04x}", c);
    } else {
      AppendUtf8(&q, c);
    }
  } else {
    const std::string g = GoQuote(std::string(1, static_cast<char>(c)));
    q = g.substr(1, g.size() - 2);
  }
  return "'" + q + "'";
}

const char* KindName(GoJsonKind k) {
  switch (k) {
    case GoJsonKind::kObject:
      return "object";
    case GoJsonKind::kArray:
      return "array";
    case GoJsonKind::kString:
      return "string";
    case GoJsonKind::kNumber:
      return "number";
    default:
      return "bool";
  }
}

}  // namespace

// strconv.ParseInt(s, 10, 64).
bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  bool neg = false;
  size_t i = 0;
  if (s[0] == '+' || s[0] == '-') {
    neg = s[0] == '-';
    i = 1;
  }
  if (i == s.size()) return false;
  uint64_t v = 0;
  const uint64_t limit = neg ? (uint64_t{1} << 63) : (uint64_t{1} << 63) - 1;
  for (; i < s.size(); ++i) {
    if (!IsDigit(s[i])) return false;
    const uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (v > (limit - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return true;
}

// strconv.ParseUint(s, 10, 64) with an upper bound.
bool ParseUint(std::string_view s, uint64_t max, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char ch : s) {
    if (!IsDigit(ch)) return false;
    const uint64_t d = static_cast<uint64_t>(ch - '0');
    if (v > (max - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

// Go's fold of a struct field name for case-insensitive matching: ASCII
// letters case-folded, and U+017F (long s) and U+212A (Kelvin) match s/k.
bool FieldMatches(std::string_view key, std::string_view name) {
  if (key == name) return true;
  size_t i = 0;
  size_t j = 0;
  while (i < key.size() && j < name.size()) {
    const auto c = static_cast<unsigned char>(key[i]);
    const char want = static_cast<char>(name[j] | 0x20);  // names are ASCII letters
    if (c < 0x80) {
      if (static_cast<char>(c | 0x20) != want || !((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) {
        return false;
      }
      ++i;
    } else if (key.substr(i, 2) == "\xC5\xBF" && want == 's') {
      i += 2;
    } else if (key.substr(i, 3) == "\xE2\x84\xAA" && want == 'k') {
      i += 3;
    } else {
      return false;
    }
    ++j;
  }
  return i == key.size() && j == name.size();
}

std::optional<std::vector<std::string>> ToStringList(GoStrings&& s) {
  if (s.nil) return std::nullopt;
  s.buf.resize(s.len);
  return std::move(s.buf);
}

absl::Status GoJsonReader::error() const {
  if (syntax_failed_) {
    return absl::InvalidArgumentError(fmt::format("{} (offset {})", syntax_msg_, syntax_off_));
  }
  return absl::InvalidArgumentError(fmt::format("{} (offset {})", type_msg_, type_off_));
}

// Records a syntax error at p_ (or end of input) and returns false.
bool GoJsonReader::Fail(std::string_view context) {
  if (syntax_failed_) return false;
  syntax_failed_ = true;
  if (p_ >= end_) {
    syntax_msg_ = "unexpected end of JSON input";
    syntax_off_ = static_cast<size_t>(end_ - begin_);
  } else {
    syntax_msg_ = fmt::format("invalid character {} {}", QuoteChar(*p_), context);
    syntax_off_ = static_cast<size_t>(p_ - begin_);
  }
  return false;
}

bool GoJsonReader::Peek(GoJsonKind* k) {
  SkipWs();
  if (p_ == end_) return Fail("");
  switch (*p_) {
    case '{':
      *k = GoJsonKind::kObject;
      return true;
    case '[':
      *k = GoJsonKind::kArray;
      return true;
    case '"':
      *k = GoJsonKind::kString;
      return true;
    case 't':
      *k = GoJsonKind::kTrue;
      return true;
    case 'f':
      *k = GoJsonKind::kFalse;
      return true;
    case 'n':
      *k = GoJsonKind::kNull;
      return true;
    default:
      if (*p_ == '-' || IsDigit(*p_)) {
        *k = GoJsonKind::kNumber;
        return true;
      }
      return Fail("looking for beginning of value");
  }
}

bool GoJsonReader::Literal(std::string_view word) {
  for (size_t i = 1; i < word.size(); ++i) {
    ++p_;
    if (p_ == end_) return Fail("");
    if (*p_ != word[i]) {
      return Fail(fmt::format("in literal {} (expecting {})", word,
                              QuoteChar(static_cast<unsigned char>(word[i]))));
    }
  }
  ++p_;
  return true;
}

bool GoJsonReader::Number(std::string_view* text) {
  const unsigned char* s = p_;
  if (*p_ == '-') {
    ++p_;
    if (p_ == end_) return Fail("");
    if (!IsDigit(*p_)) return Fail("in numeric literal");
  }
  if (*p_ == '0') {
    ++p_;
  } else {
    while (p_ < end_ && IsDigit(*p_)) ++p_;
  }
  if (p_ < end_ && *p_ == '.') {
    ++p_;
    if (p_ == end_) return Fail("");
    if (!IsDigit(*p_)) return Fail("after decimal point in numeric literal");
    while (p_ < end_ && IsDigit(*p_)) ++p_;
  }
  if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
    ++p_;
    if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
    if (p_ == end_) return Fail("");
    if (!IsDigit(*p_)) return Fail("in exponent of numeric literal");
    while (p_ < end_ && IsDigit(*p_)) ++p_;
  }
  *text = std::string_view(reinterpret_cast<const char*>(s), p_ - s);
  return true;
}

// Validates a string at p_ ('"'); `raw` is the body between the quotes;
// `complex` is set when it has escapes or non-ASCII bytes.
bool GoJsonReader::ScanString(std::string_view* raw, bool* complex) {
  const unsigned char* q = p_ + 1;
  bool cx = false;
  while (true) {
    q = SkipPlain(q, end_);
    if (q == end_) {
      p_ = q;
      return Fail("");
    }
    switch (kStringClasses.c[*q]) {
      case kQuote:
        *raw = std::string_view(reinterpret_cast<const char*>(p_ + 1), q - p_ - 1);
        *complex = cx;
        p_ = q + 1;
        return true;
      case kHigh:
        cx = true;
        ++q;
        break;
      case kControl:
        p_ = q;
        return Fail("in string literal");
      default: {  // backslash
        cx = true;
        ++q;
        if (q == end_) {
          p_ = q;
          return Fail("");
        }
        const unsigned char e = *q;
        if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
            e == 't') {
          ++q;
        } else if (e == 'u') {
          ++q;
          for (int i = 0; i < 4; ++i, ++q) {
            if (q == end_ || HexVal(*q) < 0) {
              p_ = q;
              return Fail("in \\u hexadecimal character escape");
            }
          }
        } else {
          p_ = q;
          return Fail("in string escape code");
        }
      }
    }
  }
}

bool GoJsonReader::String(std::string* out) {
  std::string_view raw;
  bool complex;
  if (!ScanString(&raw, &complex)) return false;
  if (complex) {
    UnquoteInto(raw, out);
  } else {
    out->assign(raw.data(), raw.size());
  }
  return true;
}

bool GoJsonReader::Skip() {
  GoJsonKind k = GoJsonKind::kNull;  // set by Peek
  if (!Peek(&k)) return false;
  return SkipKind(k);
}

bool GoJsonReader::SkipKind(GoJsonKind k) {
  switch (k) {
    case GoJsonKind::kObject:
      return Object([this](std::string_view, const unsigned char*) { return Skip(); });
    case GoJsonKind::kArray:
      return Array([this] { return Skip(); });
    case GoJsonKind::kString: {
      std::string_view raw;
      bool complex;
      return ScanString(&raw, &complex);
    }
    case GoJsonKind::kNumber: {
      std::string_view text;
      return Number(&text);
    }
    case GoJsonKind::kTrue:
      return Literal("true");
    case GoJsonKind::kFalse:
      return Literal("false");
    case GoJsonKind::kNull:
      return Literal("null");
  }
  return false;
}

// ---- type errors (the first one is kept, decoding continues) ----
void GoJsonReader::TypeError(std::string_view value, std::string_view type,
                             const unsigned char* at) {
  if (type_failed_) return;
  type_failed_ = true;
  type_off_ = static_cast<size_t>(at - begin_);
  if (ctx_struct_ == nullptr && fields_.empty()) {
    type_msg_ = fmt::format("json: cannot unmarshal {} into Go value of type {}", value, type);
    return;
  }
  std::string path;
  for (const char* f : fields_) {
    if (!path.empty()) path += '.';
    path += f;
  }
  type_msg_ = fmt::format("json: cannot unmarshal {} into Go struct field {}.{} of type {}", value,
                          ctx_struct_ ? ctx_struct_ : "", path, type);
}

void GoJsonReader::PlainError(std::string msg, const unsigned char* at) {
  if (type_failed_) return;
  type_failed_ = true;
  type_msg_ = std::move(msg);
  type_off_ = static_cast<size_t>(at - begin_);
}

bool GoJsonReader::Mismatch(GoJsonKind k, std::string_view type) {
  TypeError(KindName(k), type, p_);
  return SkipKind(k);
}

bool GoJsonReader::DecodeString(std::string* dst) {
  GoJsonKind k = GoJsonKind::kNull;  // set by Peek
  if (!Peek(&k)) return false;
  if (k == GoJsonKind::kString) return String(dst);
  if (k == GoJsonKind::kNull) return Literal("null");
  return Mismatch(k, "string");
}

bool GoJsonReader::DecodeUint(uint64_t* dst, uint64_t max, const char* type) {
  GoJsonKind k = GoJsonKind::kNull;  // set by Peek
  if (!Peek(&k)) return false;
  if (k == GoJsonKind::kNull) return Literal("null");
  if (k != GoJsonKind::kNumber) return Mismatch(k, type);
  const unsigned char* at = p_;
  std::string_view text;
  if (!Number(&text)) return false;
  uint64_t v;
  if (ParseUint(text, max, &v)) {
    *dst = v;
  } else {
    TypeError(fmt::format("number {}", text), type, at);
  }
  return true;
}

bool GoJsonReader::DecodeStrings(GoStrings* dst, const char* type) {
  return DecodeSlice(dst, type, [this](std::string* s) { return DecodeString(s); });
}

bool GoJsonReader::DecodeBytes(GoBytes* dst) {
  GoJsonKind k = GoJsonKind::kNull;  // set by Peek
  if (!Peek(&k)) return false;
  switch (k) {
    case GoJsonKind::kNull:
      *dst = GoBytes{};
      return Literal("null");
    case GoJsonKind::kString: {
      const unsigned char* at = p_;
      std::string_view raw;
      bool complex;
      if (!ScanString(&raw, &complex)) return false;
      if (complex) {
        UnquoteInto(raw, &scratch_);
        raw = scratch_;
      }
      std::string out;
      size_t bad;
      if (DecodeBase64(raw, &out, &bad)) {
        dst->nil = false;
        dst->len = out.size();
        dst->buf = std::move(out);
      } else {
        PlainError(fmt::format("illegal base64 data at input byte {}", bad), at);
      }
      return true;
    }
    case GoJsonKind::kArray: {
      dst->nil = false;
      size_t i = 0;
      const bool ok = Array([&] {
        if (i >= dst->buf.size()) dst->buf.push_back('\0');
        const size_t idx = i++;
        GoJsonKind ek;
        if (!Peek(&ek)) return false;
        if (ek == GoJsonKind::kNull) return Literal("null");
        if (ek != GoJsonKind::kNumber) return Mismatch(ek, "uint8");
        const unsigned char* at = p_;
        std::string_view text;
        if (!Number(&text)) return false;
        uint64_t v;
        if (ParseUint(text, 255, &v)) {
          dst->buf[idx] = static_cast<char>(v);
        } else {
          TypeError(fmt::format("number {}", text), "uint8", at);
        }
        return true;
      });
      if (i == 0) dst->buf.clear();
      dst->len = i;
      return ok;
    }
    default:
      return Mismatch(k, "[]uint8");
  }
}

}  // namespace devmgr::checkpoint
