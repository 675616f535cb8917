// Go encoding/json compatible checkpoint decoder (the encoder is
// json_encode.cc): a single-pass
// recursive-descent parser that validates exactly what Go's scanner accepts
// (and reports Go's syntax error texts), decoding straight into a model of
// Go's memory (slices with a reusable backing array, maps that merge), so
// that duplicate keys behave as json.Unmarshal makes them behave.
#include "checkpoint/json_codec.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/go_format.h"
#include "fmt/format.h"

namespace devmgr::checkpoint {
namespace {

// ---------------------------------------------------------------------------
// Go memory model of the decode targets.

// A Go slice: nil flag, backing array (elements past `len` are the stale
// ones Go reuses when a later array is decoded into the same slice).
template <class T>
struct GoSlice {
  bool nil = true;
  std::vector<T> buf;
  size_t len = 0;
};
struct GoBytes {
  bool nil = true;
  std::string buf;
  size_t len = 0;
};
template <class K, class V>
struct GoMap {
  bool nil = true;
  std::map<K, V> m;
};
using GoStrings = GoSlice<std::string>;
// Map values are decoded into a fresh (zeroed) value each time in Go, so no
// stale backing array survives in them: store them in the public form.
using GoNuma = GoMap<int64_t, DeviceList>;
using GoRegistered = GoMap<std::string, DeviceList>;

template <class Dev>
struct GoEntry {
  std::string pod_uid;
  std::string container_name;
  std::string resource_name;
  Dev device_ids;
  GoBytes alloc_resp;
};
template <class Dev>
struct GoData {
  GoSlice<GoEntry<Dev>> entries;
  GoRegistered registered;
};
template <class Dev>
struct GoTop {
  GoData<Dev> data;
  uint64_t checksum = 0;
  std::optional<std::string> boot_id;
};

// Go reflect type names used in error texts, per format.
struct TypeNames {
  const char* top;  // Go value of type ...
  const char* data_type;
  const char* data_struct;
  const char* entries_type;
  const char* entry_type;
  const char* entry_struct;
  const char* device_ids_type;
};
constexpr TypeNames kNamesV2 = {"checkpoint.Data",
                                "checkpoint.checkpointData",
                                "checkpointData",
                                "[]checkpoint.PodDevicesEntry",
                                "checkpoint.PodDevicesEntry",
                                "PodDevicesEntry",
                                "checkpoint.DevicesPerNUMA"};
constexpr TypeNames kNamesV1 = {"checkpoint.DataV1",
                                "checkpoint.checkpointDataV1",
                                "checkpointDataV1",
                                "[]checkpoint.PodDevicesEntryV1",
                                "checkpoint.PodDevicesEntryV1",
                                "PodDevicesEntryV1",
                                "[]string"};
// The kubelet's Data.Checksum is of type checksum.Checksum (a uint64).
constexpr char kChecksumType[] = "checksum.Checksum";
constexpr int kMaxDepth = 10000;  // Go's scanner maxNestingDepth

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

DeviceList ToList(GoStrings&& s) {
  if (s.nil) return std::nullopt;
  s.buf.resize(s.len);
  return std::move(s.buf);
}

// ---------------------------------------------------------------------------
// The parser.

enum class Kind { kObject, kArray, kString, kNumber, kTrue, kFalse, kNull };

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kObject:
      return "object";
    case Kind::kArray:
      return "array";
    case Kind::kString:
      return "string";
    case Kind::kNumber:
      return "number";
    default:
      return "bool";
  }
}

class Parser {
 public:
  Parser(std::string_view in, const TypeNames& names)
      : begin_(reinterpret_cast<const unsigned char*>(in.data())),
        p_(begin_),
        end_(begin_ + in.size()),
        names_(names) {}

  // Decodes the whole input into `top`; false on any error (see error()).
  template <class Dev>
  bool Run(GoTop<Dev>* top) {
    SkipWs();
    if (DecodeTop(top)) {
      SkipWs();
      if (p_ != end_) Fail("after top-level value");
    }
    return !syntax_failed_ && !type_failed_;
  }

  absl::Status error() const {
    if (syntax_failed_) {
      return absl::InvalidArgumentError(fmt::format("{} (offset {})", syntax_msg_, syntax_off_));
    }
    return absl::InvalidArgumentError(fmt::format("{} (offset {})", type_msg_, type_off_));
  }

 private:
  // ---- syntax ----
  void SkipWs() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  // Records a syntax error at p_ (or end of input) and returns false.
  bool Fail(std::string_view context) {
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

  bool Peek(Kind* k) {
    SkipWs();
    if (p_ == end_) return Fail("");
    switch (*p_) {
      case '{':
        *k = Kind::kObject;
        return true;
      case '[':
        *k = Kind::kArray;
        return true;
      case '"':
        *k = Kind::kString;
        return true;
      case 't':
        *k = Kind::kTrue;
        return true;
      case 'f':
        *k = Kind::kFalse;
        return true;
      case 'n':
        *k = Kind::kNull;
        return true;
      default:
        if (*p_ == '-' || IsDigit(*p_)) {
          *k = Kind::kNumber;
          return true;
        }
        return Fail("looking for beginning of value");
    }
  }

  bool Literal(std::string_view word) {
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

  bool Number(std::string_view* text) {
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
  bool ScanString(std::string_view* raw, bool* complex) {
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

  bool String(std::string* out) {
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

  // Iterates an object at p_ ('{'); member(key) must consume one value.
  template <class F>
  bool Object(F&& member) {
    if (++depth_ > kMaxDepth) return DepthError();
    ++p_;
    SkipWs();
    if (p_ < end_ && *p_ == '}') {
      ++p_;
      --depth_;
      return true;
    }
    while (true) {
      SkipWs();
      if (p_ == end_ || *p_ != '"') return Fail("looking for beginning of object key string");
      const unsigned char* key_start = p_;
      std::string_view key;
      bool complex;
      if (!ScanString(&key, &complex)) return false;
      if (complex) {
        UnquoteInto(key, &key_);
        key = key_;
      }
      SkipWs();
      if (p_ == end_ || *p_ != ':') return Fail("after object key");
      ++p_;
      if (!member(key, key_start)) return false;
      SkipWs();
      if (p_ < end_ && *p_ == ',') {
        ++p_;
        continue;
      }
      if (p_ < end_ && *p_ == '}') {
        ++p_;
        --depth_;
        return true;
      }
      return Fail("after object key:value pair");
    }
  }

  // Iterates an array at p_ ('['); elem() must consume one value.
  template <class F>
  bool Array(F&& elem) {
    if (++depth_ > kMaxDepth) return DepthError();
    ++p_;
    SkipWs();
    if (p_ < end_ && *p_ == ']') {
      ++p_;
      --depth_;
      return true;
    }
    while (true) {
      if (!elem()) return false;
      SkipWs();
      if (p_ < end_ && *p_ == ',') {
        ++p_;
        continue;
      }
      if (p_ < end_ && *p_ == ']') {
        ++p_;
        --depth_;
        return true;
      }
      return Fail("after array element");
    }
  }

  bool DepthError() { return Fail("exceeded max depth"); }

  bool Skip() {
    Kind k = Kind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    return SkipKind(k);
  }

  bool SkipKind(Kind k) {
    switch (k) {
      case Kind::kObject:
        return Object([this](std::string_view, const unsigned char*) { return Skip(); });
      case Kind::kArray:
        return Array([this] { return Skip(); });
      case Kind::kString: {
        std::string_view raw;
        bool complex;
        return ScanString(&raw, &complex);
      }
      case Kind::kNumber: {
        std::string_view text;
        return Number(&text);
      }
      case Kind::kTrue:
        return Literal("true");
      case Kind::kFalse:
        return Literal("false");
      case Kind::kNull:
        return Literal("null");
    }
    return false;
  }

  // ---- type errors (the first one is kept, decoding continues) ----
  void TypeError(std::string_view value, std::string_view type, const unsigned char* at) {
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
    type_msg_ = fmt::format("json: cannot unmarshal {} into Go struct field {}.{} of type {}",
                            value, ctx_struct_ ? ctx_struct_ : "", path, type);
  }

  void PlainError(std::string msg, const unsigned char* at) {
    if (type_failed_) return;
    type_failed_ = true;
    type_msg_ = std::move(msg);
    type_off_ = static_cast<size_t>(at - begin_);
  }

  bool Mismatch(Kind k, std::string_view type) {
    TypeError(KindName(k), type, p_);
    return SkipKind(k);
  }

  // Go's errorContext while decoding one struct field.
  class FieldScope {
   public:
    FieldScope(Parser* p, const char* st, const char* field) : p_(p), saved_(p->ctx_struct_) {
      p->ctx_struct_ = st;
      p->fields_.push_back(field);
    }
    ~FieldScope() {
      p_->fields_.pop_back();
      p_->ctx_struct_ = saved_;
    }

   private:
    Parser* p_;
    const char* saved_;
  };

  // ---- typed decoding ----
  bool DecodeString(std::string* dst) {
    Kind k = Kind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == Kind::kString) return String(dst);
    if (k == Kind::kNull) return Literal("null");
    return Mismatch(k, "string");
  }

  bool DecodeUint64(uint64_t* dst, const char* type) {
    Kind k = Kind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == Kind::kNull) return Literal("null");
    if (k != Kind::kNumber) return Mismatch(k, type);
    const unsigned char* at = p_;
    std::string_view text;
    if (!Number(&text)) return false;
    uint64_t v;
    if (ParseUint(text, UINT64_MAX, &v)) {
      *dst = v;
    } else {
      TypeError(fmt::format("number {}", text), type, at);
    }
    return true;
  }

  bool DecodeStrings(GoStrings* dst, const char* type) {
    Kind k = Kind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == Kind::kNull) {
      *dst = GoStrings{};
      return Literal("null");
    }
    if (k != Kind::kArray) return Mismatch(k, type);
    dst->nil = false;
    size_t i = 0;
    const bool ok = Array([&] {
      if (i >= dst->buf.size()) dst->buf.emplace_back();
      return DecodeString(&dst->buf[i++]);
    });
    if (i == 0) dst->buf.clear();
    dst->len = i;
    return ok;
  }

  bool DecodeBytes(GoBytes* dst) {
    Kind k = Kind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    switch (k) {
      case Kind::kNull:
        *dst = GoBytes{};
        return Literal("null");
      case Kind::kString: {
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
      case Kind::kArray: {
        dst->nil = false;
        size_t i = 0;
        const bool ok = Array([&] {
          if (i >= dst->buf.size()) dst->buf.push_back('\0');
          const size_t idx = i++;
          Kind ek;
          if (!Peek(&ek)) return false;
          if (ek == Kind::kNull) return Literal("null");
          if (ek != Kind::kNumber) return Mismatch(ek, "uint8");
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

  bool DecodeNuma(GoNuma* dst) {
    Kind k = Kind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == Kind::kNull) {
      *dst = GoNuma{};
      return Literal("null");
    }
    if (k != Kind::kObject) return Mismatch(k, names_.device_ids_type);
    dst->nil = false;
    return Object([&](std::string_view key, const unsigned char* key_at) {
      std::string key_copy(key);
      GoStrings value;
      if (!DecodeStrings(&value, "[]string")) return false;
      int64_t node;
      if (ParseInt64(key_copy, &node)) {
        dst->m[node] = ToList(std::move(value));
      } else {
        TypeError(fmt::format("number {}", key_copy), "int64", key_at);
      }
      return true;
    });
  }

  bool DecodeRegistered(GoRegistered* dst) {
    Kind k = Kind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == Kind::kNull) {
      *dst = GoRegistered{};
      return Literal("null");
    }
    if (k != Kind::kObject) return Mismatch(k, "map[string][]string");
    dst->nil = false;
    return Object([&](std::string_view key, const unsigned char*) {
      std::string key_copy(key);
      GoStrings value;
      if (!DecodeStrings(&value, "[]string")) return false;
      dst->m.insert_or_assign(std::move(key_copy), ToList(std::move(value)));
      return true;
    });
  }

  bool DecodeDeviceIds(GoNuma* dst) { return DecodeNuma(dst); }
  bool DecodeDeviceIds(GoStrings* dst) { return DecodeStrings(dst, "[]string"); }

  template <class Dev>
  bool DecodeEntry(GoEntry<Dev>* e) {
    Kind k = Kind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == Kind::kNull) return Literal("null");
    if (k != Kind::kObject) return Mismatch(k, names_.entry_type);
    const char* st = names_.entry_struct;
    return Object([&](std::string_view key, const unsigned char*) {
      if (FieldMatches(key, "PodUID")) {
        FieldScope s(this, st, "PodUID");
        return DecodeString(&e->pod_uid);
      }
      if (FieldMatches(key, "ContainerName")) {
        FieldScope s(this, st, "ContainerName");
        return DecodeString(&e->container_name);
      }
      if (FieldMatches(key, "ResourceName")) {
        FieldScope s(this, st, "ResourceName");
        return DecodeString(&e->resource_name);
      }
      if (FieldMatches(key, "DeviceIDs")) {
        FieldScope s(this, st, "DeviceIDs");
        return DecodeDeviceIds(&e->device_ids);
      }
      if (FieldMatches(key, "AllocResp")) {
        FieldScope s(this, st, "AllocResp");
        return DecodeBytes(&e->alloc_resp);
      }
      return Skip();
    });
  }

  template <class Dev>
  bool DecodeEntries(GoSlice<GoEntry<Dev>>* dst) {
    Kind k = Kind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == Kind::kNull) {
      *dst = GoSlice<GoEntry<Dev>>{};
      return Literal("null");
    }
    if (k != Kind::kArray) return Mismatch(k, names_.entries_type);
    dst->nil = false;
    size_t i = 0;
    const bool ok = Array([&] {
      if (i >= dst->buf.size()) dst->buf.emplace_back();
      return DecodeEntry(&dst->buf[i++]);
    });
    if (i == 0) dst->buf.clear();
    dst->len = i;
    return ok;
  }

  template <class Dev>
  bool DecodeData(GoData<Dev>* d) {
    Kind k = Kind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == Kind::kNull) return Literal("null");
    if (k != Kind::kObject) return Mismatch(k, names_.data_type);
    const char* st = names_.data_struct;
    return Object([&](std::string_view key, const unsigned char*) {
      if (FieldMatches(key, "PodDeviceEntries")) {
        FieldScope s(this, st, "PodDeviceEntries");
        return DecodeEntries(&d->entries);
      }
      if (FieldMatches(key, "RegisteredDevices")) {
        FieldScope s(this, st, "RegisteredDevices");
        return DecodeRegistered(&d->registered);
      }
      return Skip();
    });
  }

  template <class Dev>
  bool DecodeTop(GoTop<Dev>* top) {
    Kind k = Kind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == Kind::kNull) return Literal("null");
    if (k != Kind::kObject) return Mismatch(k, names_.top);
    const bool v2 = std::is_same_v<Dev, GoNuma>;
    const char* st = v2 ? "Data" : "DataV1";
    return Object([&](std::string_view key, const unsigned char*) {
      if (FieldMatches(key, "Data")) {
        FieldScope s(this, st, "Data");
        return DecodeData(&top->data);
      }
      if (FieldMatches(key, "Checksum")) {
        FieldScope s(this, st, "Checksum");
        return DecodeUint64(&top->checksum, kChecksumType);
      }
      if (v2 && FieldMatches(key, "BootID")) {
        FieldScope s(this, st, "BootID");
        Kind bk;
        if (!Peek(&bk)) return false;
        if (bk == Kind::kString) {
          std::string id;
          if (!String(&id)) return false;
          top->boot_id = std::move(id);
          return true;
        }
        if (bk == Kind::kNull) return Literal("null");
        return Mismatch(bk, "string");
      }
      return Skip();
    });
  }

  const unsigned char* begin_;
  const unsigned char* p_;
  const unsigned char* end_;
  const TypeNames& names_;
  int depth_ = 0;
  std::string key_;
  std::string scratch_;

  bool syntax_failed_ = false;
  std::string syntax_msg_;
  size_t syntax_off_ = 0;
  bool type_failed_ = false;
  std::string type_msg_;
  size_t type_off_ = 0;

  const char* ctx_struct_ = nullptr;
  std::vector<const char*> fields_;
};

// ---------------------------------------------------------------------------
// Go model -> public types.

std::optional<std::string> ToBytes(GoBytes&& b) {
  if (b.nil) return std::nullopt;
  b.buf.resize(b.len);
  return std::move(b.buf);
}

RegisteredDevices ToRegistered(GoRegistered&& r) {
  if (r.nil) return std::nullopt;
  return std::move(r.m);
}

DevicesPerNUMA ToDevices(GoNuma&& n) {
  if (n.nil) return std::nullopt;
  return std::move(n.m);
}
DeviceList ToDevices(GoStrings&& s) { return ToList(std::move(s)); }

template <class Entry, class Dev>
std::optional<std::vector<Entry>> ToEntries(GoSlice<GoEntry<Dev>>&& s) {
  if (s.nil) return std::nullopt;
  std::vector<Entry> out;
  out.reserve(s.len);
  for (size_t i = 0; i < s.len; ++i) {
    GoEntry<Dev>& g = s.buf[i];
    Entry e;
    e.pod_uid = std::move(g.pod_uid);
    e.container_name = std::move(g.container_name);
    e.resource_name = std::move(g.resource_name);
    e.device_ids = ToDevices(std::move(g.device_ids));
    e.alloc_resp = ToBytes(std::move(g.alloc_resp));
    out.push_back(std::move(e));
  }
  return out;
}

template <class Dev>
absl::Status DecodeInto(std::string_view bytes, const TypeNames& names, GoTop<Dev>* top) {
  // The kubelet decodes into a pre-initialised empty list and map.
  top->data.entries.nil = false;
  top->data.registered.nil = false;
  Parser parser(bytes, names);
  if (!parser.Run(top)) return parser.error();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Checkpoint> DecodeJson(std::string_view bytes, FormatVersion format) {
  Checkpoint cp;
  cp.format = format;
  if (format == FormatVersion::kV2) {
    GoTop<GoNuma> top;
    absl::Status s = DecodeInto(bytes, kNamesV2, &top);
    if (!s.ok()) return s;
    cp.data.pod_device_entries = ToEntries<PodDevicesEntry>(std::move(top.data.entries));
    cp.data.registered_devices = ToRegistered(std::move(top.data.registered));
    cp.checksum = top.checksum;
    cp.boot_id = std::move(top.boot_id);
  } else {
    GoTop<GoStrings> top;
    absl::Status s = DecodeInto(bytes, kNamesV1, &top);
    if (!s.ok()) return s;
    cp.data_v1.pod_device_entries = ToEntries<PodDevicesEntryV1>(std::move(top.data.entries));
    cp.data_v1.registered_devices = ToRegistered(std::move(top.data.registered));
    cp.checksum = top.checksum;
  }
  return cp;
}

}  // namespace devmgr::checkpoint
