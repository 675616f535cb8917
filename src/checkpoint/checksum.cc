// go-spew "%#v" rendering of checkpointData (V2) and checkpointDataV1 (V1,
// renamed as a 1.20+ kubelet does), streamed into a string or into FNV-1a.
// Grammar: docs/checkpoint_format.md.
#include "checkpoint/checksum.h"

#include <array>
#include <charconv>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <string>
#include <string_view>

#include "checkpoint/checkpoint.h"
#include "checkpoint/render.h"

namespace devmgr::checkpoint {
namespace {

// Decimal text of every byte value, for []uint8 elements.
struct ByteDigits {
  std::array<std::array<char, 4>, 256> text{};
  std::array<uint8_t, 256> len{};
  constexpr ByteDigits() {
    for (int v = 0; v < 256; ++v) {
      int n = 0;
      if (v >= 100) text[v][n++] = static_cast<char>('0' + v / 100);
      if (v >= 10) text[v][n++] = static_cast<char>('0' + (v / 10) % 10);
      text[v][n++] = static_cast<char>('0' + v % 10);
      len[v] = static_cast<uint8_t>(n);
    }
  }
};
constexpr ByteDigits kByteDigits;

// Hashing a fixed token faster than byte by byte. One FNV-1a step is
// h' = (h ^ c) * P = h*P + ((l ^ c) - l)*P where l is h's low byte, and the
// low byte of h' depends only on l and c. So for a fixed token t of n bytes:
// h_after = h*P^n + C_t(l) and low8(h_after) = L_t(l), with C_t and L_t
// tabulated over the 256 values of l. The low-byte chain (a table load per
// token) and the h chain (a multiply-add per token) then run side by side.
struct TokenTable {
  uint32_t pn = 1;  // P^n
  std::array<uint32_t, 256> c{};
  std::array<uint8_t, 256> next_low{};

  void Build(std::string_view token) {
    pn = 1;
    for (size_t i = 0; i < token.size(); ++i) pn *= kFnv32Prime;
    for (uint32_t l = 0; l < 256; ++l) {
      const uint32_t h = Fnv1a32Update(l, token.data(), token.size());
      c[l] = h - l * pn;
      next_low[l] = static_cast<uint8_t>(h);
    }
  }
};

// A literal piece of the rendering, with its hash table.
class Literal {
 public:
  explicit Literal(std::string_view text) : text_(text) { table_.Build(text); }
  std::string_view text() const { return text_; }
  const TokenTable& table() const { return table_; }

 private:
  std::string_view text_;
  TokenTable table_;
};

// Tables for the []uint8 element tokens "<decimal> " (byte followed by the
// separating space). The low-byte tables, on the critical path, are kept
// together (64 KiB) apart from the additive terms, so that the rows of the
// byte values in use stay in L1.
struct ByteTokenTables {
  std::array<uint32_t, 256> pn;
  std::array<std::array<uint8_t, 256>, 256> next_low;
  std::array<std::array<uint32_t, 256>, 256> c;
  ByteTokenTables() {
    for (int v = 0; v < 256; ++v) {
      std::string tok(kByteDigits.text[v].data(), kByteDigits.len[v]);
      tok.push_back(' ');
      TokenTable t;
      t.Build(tok);
      pn[v] = t.pn;
      next_low[v] = t.next_low;
      c[v] = t.c;
    }
  }
};
const ByteTokenTables& ByteTables() {
  static const ByteTokenTables* tables = new ByteTokenTables();
  return *tables;
}

class StringSink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  void Put(const char* p, size_t n) { out_->append(p, n); }
  void Put(char c) { out_->push_back(c); }
  void Put(const Literal& lit) { out_->append(lit.text()); }
  // "[b0 b1 ... bn]" for a non-nil []uint8.
  void PutByteList(std::string_view b) {
    // At most 4 characters per byte ("255 "), written in place; the string
    // is cut to the length used.
    const size_t start = out_->size();
    out_->resize(start + 2 + 4 * b.size());
    char* o = out_->data() + start;
    *o++ = '[';
    const auto* p = reinterpret_cast<const unsigned char*>(b.data());
    for (size_t i = 0; i < b.size(); ++i) {
      const auto& text = kByteDigits.text[p[i]];
      std::memcpy(o, text.data(), 4);  // the digits, then overwritten
      o += kByteDigits.len[p[i]];
      *o++ = ' ';
    }
    if (!b.empty()) --o;  // no space after the last element
    *o++ = ']';
    out_->resize(static_cast<size_t>(o - out_->data()));
  }

 private:
  std::string* out_;
};

class HashSink {
 public:
  void Put(const char* p, size_t n) { h_ = Fnv1a32Update(h_, p, n); }
  void Put(char c) {
    h_ ^= static_cast<unsigned char>(c);
    h_ *= kFnv32Prime;
  }
  void Put(const Literal& lit) {
    const TokenTable& t = lit.table();
    h_ = h_ * t.pn + t.c[h_ & 0xFF];
  }
  void PutByteList(std::string_view b) {
    Put('[');
    const size_t n = b.size();
    if (n != 0) {
      const auto* p = reinterpret_cast<const unsigned char*>(b.data());
      const ByteTokenTables& tables = ByteTables();
      uint32_t h = h_;
      uint32_t low = h & 0xFF;
      for (size_t i = 0; i + 1 < n; ++i) {
        const unsigned v = p[i];
        h = h * tables.pn[v] + tables.c[v][low];
        low = tables.next_low[v][low];
      }
      h_ = h;
      Put(kByteDigits.text[p[n - 1]].data(), kByteDigits.len[p[n - 1]]);
    }
    Put(']');
  }
  uint32_t value() const { return h_; }

 private:
  uint32_t h_ = kFnv32Offset;
};

// The fixed pieces of the rendering (built on first use, so that a
// checksum computed during another file's static initialisation is right).
struct Literals {
  Literal registered{" RegisteredDevices:(map[string][]string)"};
  Literal pod_uid{"{PodUID:(string)"};
  Literal container_name{" ContainerName:(string)"};
  Literal resource_name{" ResourceName:(string)"};
  Literal device_ids_v2{" DeviceIDs:(checkpoint.DevicesPerNUMA)"};
  Literal alloc_resp{" AllocResp:([]uint8)"};
  Literal device_ids_v1{" DeviceIDs:([]string)"};
  Literal head{"(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)"};
};
const Literals& Lits() {
  static const Literals* lits = new Literals();
  return *lits;
}

template <class Sink, size_t N>
inline void Lit(Sink& s, const char (&text)[N]) {
  s.Put(text, N - 1);
}

// A user string. In V1 mode every "PodDevicesEntryV1" is rewritten to
// "PodDevicesEntry" (kubelet's strings.Replace over the whole text; no match
// can straddle a string boundary because the separators around strings are
// not part of the pattern).
template <class Sink>
inline void Str(Sink& s, const std::string& v, bool v1_rename) {
  if (!v1_rename) {
    s.Put(v.data(), v.size());
    return;
  }
  static constexpr std::string_view kFrom = "PodDevicesEntryV1";
  size_t pos = 0;
  while (true) {
    const size_t hit = v.find(kFrom, pos);
    if (hit == std::string::npos) break;
    s.Put(v.data() + pos, hit - pos);
    Lit(s, "PodDevicesEntry");
    pos = hit + kFrom.size();
  }
  s.Put(v.data() + pos, v.size() - pos);
}

template <class Sink>
void List(Sink& s, const DeviceList& l, bool v1_rename) {
  if (!l) {
    Lit(s, "<nil>");
    return;
  }
  s.Put('[');
  bool first = true;
  for (const std::string& id : *l) {
    if (!first) s.Put(' ');
    first = false;
    Str(s, id, v1_rename);
  }
  s.Put(']');
}

template <class Sink>
void Bytes(Sink& s, const std::optional<std::string>& b) {
  if (!b) {
    Lit(s, "<nil>");
  } else {
    s.PutByteList(*b);
  }
}

template <class Sink>
void Numa(Sink& s, const DevicesPerNUMA& m) {
  if (!m) {
    Lit(s, "<nil>");
    return;
  }
  Lit(s, "map[");
  bool first = true;
  // std::map<int64_t> iterates in numeric order, as spew sorts int keys.
  for (const auto& [node, ids] : *m) {
    if (!first) s.Put(' ');
    first = false;
    char buf[24];
    const auto res = std::to_chars(buf, buf + sizeof(buf), node);
    s.Put(buf, static_cast<size_t>(res.ptr - buf));
    s.Put(':');
    List(s, ids, false);
  }
  s.Put(']');
}

template <class Sink>
void Registered(Sink& s, const RegisteredDevices& r, bool v1_rename) {
  s.Put(Lits().registered);
  if (!r) {
    Lit(s, "<nil>");
  } else {
    Lit(s, "map[");
    bool first = true;
    // std::map<std::string> iterates bytewise, as spew sorts string keys.
    for (const auto& [name, ids] : *r) {
      if (!first) s.Put(' ');
      first = false;
      Str(s, name, v1_rename);
      s.Put(':');
      List(s, ids, v1_rename);
    }
    s.Put(']');
  }
  s.Put('}');
}

template <class Sink, class Entry>
void EntryHead(Sink& s, const Entry& e, bool v1_rename) {
  s.Put(Lits().pod_uid);
  Str(s, e.pod_uid, v1_rename);
  s.Put(Lits().container_name);
  Str(s, e.container_name, v1_rename);
  s.Put(Lits().resource_name);
  Str(s, e.resource_name, v1_rename);
}

template <class Sink>
void EntryV2(Sink& s, const PodDevicesEntry& e) {
  EntryHead(s, e, false);
  s.Put(Lits().device_ids_v2);
  Numa(s, e.device_ids);
  s.Put(Lits().alloc_resp);
  Bytes(s, e.alloc_resp);
  s.Put('}');
}

template <class Sink>
void RenderV2(Sink& s, const CheckpointData& d) {
  s.Put(Lits().head);
  if (!d.pod_device_entries) {
    Lit(s, "<nil>");
  } else {
    s.Put('[');
    bool first = true;
    for (const PodDevicesEntry& e : *d.pod_device_entries) {
      if (!first) s.Put(' ');
      first = false;
      EntryV2(s, e);
    }
    s.Put(']');
  }
  Registered(s, d.registered_devices, false);
}

// The 1.20+ verifier spews checkpointDataV1/PodDevicesEntryV1 and renames
// them; we emit the renamed type names directly and rename inside strings.
template <class Sink>
void RenderV1(Sink& s, const CheckpointDataV1& d) {
  s.Put(Lits().head);
  if (!d.pod_device_entries) {
    Lit(s, "<nil>");
  } else {
    s.Put('[');
    bool first = true;
    for (const PodDevicesEntryV1& e : *d.pod_device_entries) {
      if (!first) s.Put(' ');
      first = false;
      EntryHead(s, e, true);
      s.Put(Lits().device_ids_v1);
      List(s, e.device_ids, true);
      s.Put(Lits().alloc_resp);
      Bytes(s, e.alloc_resp);
      s.Put('}');
    }
    s.Put(']');
  }
  Registered(s, d.registered_devices, true);
}

}  // namespace

namespace render {

void AppendSpewEntry(std::string* out, const PodDevicesEntry& e) {
  StringSink s(out);
  EntryV2(s, e);
}

void AppendSpewList(std::string* out, const DeviceList& l) {
  StringSink s(out);
  List(s, l, false);
}

}  // namespace render

std::string SpewV2(const CheckpointData& data) {
  std::string out;
  StringSink sink(&out);
  RenderV2(sink, data);
  return out;
}

std::string SpewV1(const CheckpointDataV1& data) {
  std::string out;
  StringSink sink(&out);
  RenderV1(sink, data);
  return out;
}

uint64_t ComputeChecksum(const CheckpointData& data) {
  HashSink sink;
  RenderV2(sink, data);
  return sink.value();
}

uint64_t ComputeChecksumV1(const CheckpointDataV1& data) {
  HashSink sink;
  RenderV1(sink, data);
  return sink.value();
}

// ---- One-pass verification of the form json.Marshal writes ----
namespace {

// Go's base64.StdEncoding alphabet; 0xFF: not in it ('=' included: padding
// is handled apart).
struct Base64Values {
  std::array<uint8_t, 256> v{};
  constexpr Base64Values() {
    for (auto& x : v) x = 0xFF;
    constexpr std::string_view kAlphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < kAlphabet.size(); ++i) {
      v[static_cast<unsigned char>(kAlphabet[i])] = static_cast<uint8_t>(i);
    }
  }
};
constexpr Base64Values kBase64;

// Reads a V2 file token by token in the exact layout json.Marshal gives the
// kubelet's struct (keys in field order, no whitespace but after the end)
// and streams the go-spew text of what encoding/json would decode into the
// hash, as RenderV2 does for decoded data. Strings must be plain ASCII
// without escapes, map keys strictly ascending (in spew's order, so that
// nothing needs sorting), numbers canonical. Anything else makes Run()
// return false: the caller then decodes the general way. Nothing is
// allocated per entry.
class OnePassVerifier {
 public:
  explicit OnePassVerifier(std::string_view b) : p_(b.data()), end_(b.data() + b.size()) {}

  bool Run(uint64_t* stored, uint64_t* computed) {
    const Literals& lits = Lits();
    if (!Eat("{\"Data\":{\"PodDeviceEntries\":")) return false;
    h_.Put(lits.head);
    if (Eat("null")) {
      Lit(h_, "<nil>");
    } else {
      if (!Eat("[")) return false;
      h_.Put('[');
      if (!Eat("]")) {
        while (true) {
          if (!Entry()) return false;
          if (Eat("]")) break;
          if (!Eat(",")) return false;
          h_.Put(' ');
        }
      }
      h_.Put(']');
    }
    if (!Eat(",\"RegisteredDevices\":")) return false;
    h_.Put(lits.registered);
    if (Eat("null")) {
      Lit(h_, "<nil>");
    } else {
      std::string_view prev;
      const bool ok = ListsByKey([&](std::string_view name, bool first) {
        if (!first && !(prev < name)) return false;
        prev = name;
        return true;
      });
      if (!ok) return false;
    }
    h_.Put('}');
    if (!Eat("},\"Checksum\":") || !Uint64(stored)) return false;
    if (Eat(",\"BootID\":")) {
      std::string_view boot_id;
      if (!String(&boot_id)) return false;
    }
    if (!Eat("}")) return false;
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
    if (p_ != end_) return false;
    *computed = h_.value();
    return true;
  }

 private:
  template <size_t N>
  bool Eat(const char (&lit)[N]) {
    constexpr size_t n = N - 1;
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, lit, n) != 0) return false;
    p_ += n;
    return true;
  }

  // A JSON string of printable ASCII without escapes; *out is its text.
  bool String(std::string_view* out) {
    if (p_ == end_ || *p_ != '"') return false;
    const char* start = ++p_;
#if defined(__SSE2__)
    // 16 bytes at a time up to the first '"', '\\', control or non-ASCII
    // byte (a signed compare below 0x20 catches both of the last two).
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'),
                  space = _mm_set1_epi8(0x20);
    while (end_ - p_ >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p_));
      const __m128i stop =
          _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                       _mm_cmplt_epi8(v, space));
      const int mask = _mm_movemask_epi8(stop);
      if (mask != 0) {
        p_ += __builtin_ctz(static_cast<unsigned>(mask));
        break;
      }
      p_ += 16;
    }
#endif
    while (p_ < end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        *out = std::string_view(start, static_cast<size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
      ++p_;
    }
    return false;
  }

  // []string: null, [] or ["a","b"].
  bool List() {
    if (Eat("null")) {
      Lit(h_, "<nil>");
      return true;
    }
    if (!Eat("[")) return false;
    h_.Put('[');
    if (!Eat("]")) {
      while (true) {
        std::string_view id;
        if (!String(&id)) return false;
        h_.Put(id.data(), id.size());
        if (Eat("]")) break;
        if (!Eat(",")) return false;
        h_.Put(' ');
      }
    }
    h_.Put(']');
    return true;
  }

  // A canonical decimal (no sign, no leading zero) that fits uint64.
  bool Uint64(uint64_t* v) {
    const char* start = p_;
    uint64_t x = 0;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      const uint64_t d = static_cast<uint64_t>(*p_ - '0');
      if (x > (UINT64_MAX - d) / 10) return false;
      x = x * 10 + d;
      ++p_;
    }
    const size_t n = static_cast<size_t>(p_ - start);
    if (n == 0 || (n > 1 && *start == '0')) return false;
    *v = x;
    return true;
  }

  // A NUMA key as json.Marshal writes an int64 map key: "0", "7", "-1".
  static bool NumaKey(std::string_view k, int64_t* v) {
    bool neg = false;
    if (!k.empty() && k[0] == '-') {
      neg = true;
      k.remove_prefix(1);
    }
    if (k.empty() || k.size() > 18 || (k.size() > 1 && k[0] == '0') || (neg && k == "0")) {
      return false;
    }
    int64_t x = 0;
    for (char c : k) {
      if (c < '0' || c > '9') return false;
      x = x * 10 + (c - '0');
    }
    *v = neg ? -x : x;
    return true;
  }

  // DevicesPerNUMA: null, {} or {"0":[...],"1":[...]} with ascending keys
  // (spew sorts them numerically; json.Marshal as text, so "10" before "2"
  // is left to the general decoder).
  bool Numa() {
    if (Eat("null")) {
      Lit(h_, "<nil>");
      return true;
    }
    int64_t prev = 0;
    return ListsByKey([&](std::string_view key, bool first) {
      int64_t node;
      if (!NumaKey(key, &node) || (!first && node <= prev)) return false;
      prev = node;
      return true;
    });
  }

  // A JSON object of device lists, {} or {"k":[...],...}, hashed as spew
  // prints the map (map[k:[...] ...]). `in_order(key, first)` accepts each
  // key after the one before it: json.Marshal's order must be spew's.
  template <typename InOrder>
  bool ListsByKey(InOrder in_order) {
    if (!Eat("{")) return false;
    Lit(h_, "map[");
    if (!Eat("}")) {
      for (bool first = true;; first = false) {
        std::string_view key;
        if (!String(&key) || !in_order(key, first) || !Eat(":")) return false;
        if (!first) h_.Put(' ');
        h_.Put(key.data(), key.size());
        h_.Put(':');
        if (!List()) return false;
        if (Eat("}")) break;
        if (!Eat(",")) return false;
      }
    }
    h_.Put(']');
    return true;
  }

  // Padded standard base64 into bytes_; Go's decoder ignores the unused
  // bits of the last group, and so does this.
  bool Base64(std::string_view s) {
    if (s.size() % 4 != 0) return false;
    bytes_.resize(s.size() / 4 * 3);
    auto* out = reinterpret_cast<unsigned char*>(bytes_.data());
    const auto* in = reinterpret_cast<const unsigned char*>(s.data());
    size_t groups = s.size() / 4;
    size_t tail = 0;  // bytes of the last group when it is padded
    if (groups != 0 && in[s.size() - 1] == '=') {
      --groups;
      tail = in[s.size() - 2] == '=' ? 1 : 2;
    }
    uint32_t bad = 0;
    for (size_t g = 0; g < groups; ++g, in += 4, out += 3) {
      const uint32_t a = kBase64.v[in[0]], b = kBase64.v[in[1]], c = kBase64.v[in[2]],
                     d = kBase64.v[in[3]];
      bad |= a | b | c | d;
      const uint32_t x = a << 18 | b << 12 | c << 6 | d;
      out[0] = static_cast<unsigned char>(x >> 16);
      out[1] = static_cast<unsigned char>(x >> 8);
      out[2] = static_cast<unsigned char>(x);
    }
    if (tail != 0) {
      const uint32_t a = kBase64.v[in[0]], b = kBase64.v[in[1]];
      const uint32_t c = tail == 2 ? kBase64.v[in[2]] : 0;
      bad |= a | b | c;
      const uint32_t x = a << 18 | b << 12 | c << 6;
      out[0] = static_cast<unsigned char>(x >> 16);
      if (tail == 2) out[1] = static_cast<unsigned char>(x >> 8);
      out += tail;
    }
    if (bad & 0x80) return false;  // 0xFF marks a character outside the alphabet
    bytes_.resize(static_cast<size_t>(out - reinterpret_cast<unsigned char*>(bytes_.data())));
    return true;
  }

  bool Entry() {
    const Literals& lits = Lits();
    std::string_view v;
    if (!Eat("{\"PodUID\":") || !String(&v)) return false;
    h_.Put(lits.pod_uid);
    h_.Put(v.data(), v.size());
    if (!Eat(",\"ContainerName\":") || !String(&v)) return false;
    h_.Put(lits.container_name);
    h_.Put(v.data(), v.size());
    if (!Eat(",\"ResourceName\":") || !String(&v)) return false;
    h_.Put(lits.resource_name);
    h_.Put(v.data(), v.size());
    if (!Eat(",\"DeviceIDs\":")) return false;
    h_.Put(lits.device_ids_v2);
    if (!Numa()) return false;
    if (!Eat(",\"AllocResp\":")) return false;
    h_.Put(lits.alloc_resp);
    if (Eat("null")) {
      Lit(h_, "<nil>");
    } else {
      if (!String(&v) || !Base64(v)) return false;
      h_.PutByteList(bytes_);
    }
    if (!Eat("}")) return false;
    h_.Put('}');
    return true;
  }

  const char* p_;
  const char* end_;
  HashSink h_;
  std::string bytes_;  // the current AllocResp, decoded (reused)
};

}  // namespace

bool OnePassVerifyV2(std::string_view bytes, uint64_t* stored, uint64_t* computed) {
  OnePassVerifier v(bytes);
  return v.Run(stored, computed);
}

}  // namespace devmgr::checkpoint
