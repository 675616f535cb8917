// The writing half of the Go encoding/json compatibility core (go_json.h):
// strings exactly as json.Marshal writes them (HTML escaping, U+FFFD for
// invalid UTF-8, U+2028/U+2029 escaped) and Go's standard base64.
#include <array>
#include <cstdint>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/go_json.h"

namespace devmgr::checkpoint {
namespace {

struct JsonSafe {
  std::array<bool, 128> safe{};
  constexpr JsonSafe() {
    for (int c = 0x20; c < 0x80; ++c) safe[c] = true;
    safe['"'] = safe['\\'] = safe['<'] = safe['>'] = safe['&'] = false;
  }
};
constexpr JsonSafe kJsonSafe;

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

struct B64Decode {
  std::array<uint8_t, 256> v{};
  constexpr B64Decode() {
    for (auto& x : v) x = 0xFF;
    for (int i = 0; i < 64; ++i) v[static_cast<unsigned char>(kB64[i])] = static_cast<uint8_t>(i);
  }
};
constexpr B64Decode kB64Decode;

}  // namespace

void AppendBase64(std::string* out, std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  const size_t start = out->size();
  out->resize(start + (n + 2) / 3 * 4);
  char* o = out->data() + start;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8) | p[i + 2];
    *o++ = kB64[v >> 18];
    *o++ = kB64[(v >> 12) & 63];
    *o++ = kB64[(v >> 6) & 63];
    *o++ = kB64[v & 63];
  }
  if (i < n) {
    uint32_t v = uint32_t{p[i]} << 16;
    if (i + 1 < n) v |= uint32_t{p[i + 1]} << 8;
    *o++ = kB64[v >> 18];
    *o++ = kB64[(v >> 12) & 63];
    *o++ = i + 1 < n ? kB64[(v >> 6) & 63] : '=';
    *o++ = '=';
  }
}

bool DecodeBase64(std::string_view src, std::string* out, size_t* error_offset) {
  const auto* s = reinterpret_cast<const unsigned char*>(src.data());
  const size_t n = src.size();
  size_t si = 0;
  // Fast path: whole quanta of four alphabet characters.
  out->resize(n / 4 * 3);
  char* o = out->data();
  while (n - si >= 4) {
    const uint8_t a = kB64Decode.v[s[si]], b = kB64Decode.v[s[si + 1]], c = kB64Decode.v[s[si + 2]],
                  d = kB64Decode.v[s[si + 3]];
    if ((a | b | c | d) == 0xFF) break;
    const uint32_t v = (uint32_t{a} << 18) | (uint32_t{b} << 12) | (uint32_t{c} << 6) | d;
    o[0] = static_cast<char>(v >> 16);
    o[1] = static_cast<char>(v >> 8);
    o[2] = static_cast<char>(v);
    o += 3;
    si += 4;
  }
  out->resize(static_cast<size_t>(o - out->data()));
  // General path (Go's decodeQuantum): CR/LF skipped, padding required.
  while (si < n) {
    uint8_t q[4] = {0, 0, 0, 0};
    size_t j = 0;
    size_t dlen = 4;
    bool trailing = false;
    size_t trailing_at = 0;
    while (j < 4) {
      if (si == n) {
        if (j == 0) return true;
        *error_offset = si - j;
        return false;
      }
      const unsigned char c = s[si++];
      const uint8_t v = kB64Decode.v[c];
      if (v != 0xFF) {
        q[j++] = v;
        continue;
      }
      if (c == '\n' || c == '\r') continue;
      if (c != '=') {
        *error_offset = si - 1;
        return false;
      }
      if (j < 2) {
        *error_offset = si - 1;
        return false;
      }
      if (j == 2) {  // "==" expected
        while (si < n && (s[si] == '\n' || s[si] == '\r')) ++si;
        if (si == n) {
          *error_offset = n;
          return false;
        }
        if (s[si] != '=') {
          *error_offset = si - 1;
          return false;
        }
        ++si;
      }
      while (si < n && (s[si] == '\n' || s[si] == '\r')) ++si;
      if (si < n) {
        trailing = true;
        trailing_at = si;
      }
      dlen = j;
      break;
    }
    const uint32_t v =
        (uint32_t{q[0]} << 18) | (uint32_t{q[1]} << 12) | (uint32_t{q[2]} << 6) | q[3];
    const char o[3] = {static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
    out->append(o, dlen - 1);
    if (trailing) {
      *error_offset = trailing_at;
      return false;
    }
    if (dlen < 4) return true;
  }
  return true;
}

// The first of the 16 bytes at p that Go's encoder does not copy as it
// is: below 0x20 or above 0x7F (one signed compare), '"', '\\', '<', '>'
// or '&'; p + 16 when there is none.
static const unsigned char* SkipPlainRun16(const unsigned char* p) {
#if defined(__SSE2__)
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  __m128i stop = _mm_cmplt_epi8(v, _mm_set1_epi8(0x20));
  for (const char special : {'"', '\\', '<', '>', '&'}) {
    stop = _mm_or_si128(stop, _mm_cmpeq_epi8(v, _mm_set1_epi8(special)));
  }
  const int mask = _mm_movemask_epi8(stop);
  return mask == 0 ? p + 16 : p + __builtin_ctz(static_cast<unsigned>(mask));
#else
  return p;  // byte by byte below
#endif
}

void AppendGoJsonStringList(std::string* out, const std::optional<std::vector<std::string>>& l) {
  if (!l) {
    out->append("null");
    return;
  }
  out->push_back('[');
  bool first = true;
  for (const std::string& s : *l) {
    if (!first) out->push_back(',');
    first = false;
    AppendGoJsonString(out, s);
  }
  out->push_back(']');
}

void AppendGoJsonString(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  const unsigned char* run = p;
  auto flush = [&](const unsigned char* upto) {
    out->append(reinterpret_cast<const char*>(run), upto - run);
  };
  while (p < end) {
    if (end - p >= 16) {
      const unsigned char* stop = SkipPlainRun16(p);
      const bool whole_run = stop == p + 16;
      p = stop;
      if (whole_run) continue;
    }
    const unsigned char c = *p;
    if (c < 0x80) {
      if (kJsonSafe.safe[c]) {
        ++p;
        continue;
      }
      flush(p);
      switch (c) {
        case '"':
          out->append("\\\"");
          break;
        case '\\':
          out->append("\\\\");
          break;
        case '\b':
          out->append("\\b");
          break;  // Go >= 1.22 (kubelet 1.30+)
        case '\f':
          out->append("\\f");
          break;
        case '\n':
          out->append("\\n");
          break;
        case '\r':
          out->append("\\r");
          break;
        case '\t':
          out->append("\\t");
          break;
        default:
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xF]);
      }
      run = ++p;
      continue;
    }
    const size_t n = Utf8SeqLen(p, end);
    if (n == 0) {
      flush(p);
      out->append("\\ufffd");
      run = ++p;
      continue;
    }
    if (n == 3 && c == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) {
      flush(p);
      out->append(p[2] == 0xA8 ? "\\u2028" : "\\u2029");
      p += 3;
      run = p;
      continue;
    }
    p += n;
  }
  flush(p);
  out->push_back('"');
}

}  // namespace devmgr::checkpoint
