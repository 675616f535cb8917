// go-spew "%#v" rendering of checkpointData (V2) and checkpointDataV1 (V1,
// renamed as a 1.20+ kubelet does), streamed into a string or into FNV-1a.
// Grammar: shared/checkpoint/README.md and docs/checkpoint_format.md.
#include "checkpoint/checksum.h"

#include <array>
#include <charconv>
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
// separating space).
struct ByteTokenTables {
  std::array<TokenTable, 256> t;
  ByteTokenTables() {
    for (int v = 0; v < 256; ++v) {
      std::string tok(kByteDigits.text[v].data(), kByteDigits.len[v]);
      tok.push_back(' ');
      t[v].Build(tok);
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
  void PutByteList(const std::string& b) {
    out_->push_back('[');
    const auto* p = reinterpret_cast<const unsigned char*>(b.data());
    for (size_t i = 0; i < b.size(); ++i) {
      if (i != 0) out_->push_back(' ');
      out_->append(kByteDigits.text[p[i]].data(), kByteDigits.len[p[i]]);
    }
    out_->push_back(']');
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
  void PutByteList(const std::string& b) {
    Put('[');
    const size_t n = b.size();
    if (n != 0) {
      const auto* p = reinterpret_cast<const unsigned char*>(b.data());
      const ByteTokenTables& tables = ByteTables();
      uint32_t h = h_;
      uint32_t low = h & 0xFF;
      for (size_t i = 0; i + 1 < n; ++i) {
        const TokenTable& t = tables.t[p[i]];
        h = h * t.pn + t.c[low];
        low = t.next_low[low];
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

}  // namespace devmgr::checkpoint
