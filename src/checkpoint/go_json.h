// The Go encoding/json compatibility core shared by every kubelet checkpoint
// format devmgr reads and writes (the device manager's
// kubelet_internal_checkpoint in json_codec.cc, DRA's dra_manager_state in
// src/dra/): a reader that accepts exactly what Go's scanner accepts, with
// Go's syntax and type error texts, and decodes into a model of Go's memory;
// and the writer pieces (strings as json.Marshal writes them, Go's base64).
// A format is a set of Decode* functions written over GoJsonReader.
#ifndef DEVMGR_CHECKPOINT_GO_JSON_H_
#define DEVMGR_CHECKPOINT_GO_JSON_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace devmgr::checkpoint {

// ---------------------------------------------------------------------------
// Writing.

// Appends s as Go's json encoder writes a string (with the quotes; HTML
// escaping on; invalid UTF-8 as \ufffd; U+2028/U+2029 escaped).
void AppendGoJsonString(std::string* out, std::string_view s);
// Appends a []string as json.Marshal writes it: `["a","b"]`, `[]`, or
// `null` for nil (nullopt).
void AppendGoJsonStringList(std::string* out, const std::optional<std::vector<std::string>>& l);

// Length (2..4) of the valid UTF-8 sequence at q (q < end), 0 when invalid
// (Go's utf8.DecodeRune then returns RuneError with width 1).
inline size_t Utf8SeqLen(const unsigned char* q, const unsigned char* end) {
  const unsigned char b0 = q[0];
  const size_t avail = static_cast<size_t>(end - q);
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < avail && q[i] >= lo && q[i] <= hi;
  };
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (b0 == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (b0 == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (b0 >= 0xF1 && b0 <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b0 == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

// Go's base64.StdEncoding: Encode (padded) and Decode (CR/LF ignored).
// DecodeBase64 returns false and sets *error_offset on corrupt input
// ("illegal base64 data at input byte N").
void AppendBase64(std::string* out, std::string_view bytes);
bool DecodeBase64(std::string_view src, std::string* out, size_t* error_offset);

// ---------------------------------------------------------------------------
// Go memory model of decode targets.

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

// The public form of a decoded []string: nullopt for nil.
std::optional<std::vector<std::string>> ToStringList(GoStrings&& s);

// Go's unquote of an already validated string body: escapes resolved,
// invalid UTF-8 bytes and unpaired surrogates become U+FFFD.
void UnquoteInto(std::string_view raw, std::string* out);

// strconv.ParseInt(s, 10, 64) and ParseUint(s, 10, 64) with an upper bound.
bool ParseInt64(std::string_view s, int64_t* out);
bool ParseUint(std::string_view s, uint64_t max, uint64_t* out);

// Go's fold of a struct field name for case-insensitive matching: ASCII
// letters case-folded, and U+017F (long s) and U+212A (Kelvin) match s/k.
// REQUIRES: `name` is ASCII letters only.
bool FieldMatches(std::string_view key, std::string_view name);

// ---------------------------------------------------------------------------
// Reading.

// The kind of the JSON value at the reader's position.
enum class GoJsonKind { kObject, kArray, kString, kNumber, kTrue, kFalse, kNull };

// A single-pass recursive-descent reader over one JSON document that
// validates exactly what Go's scanner accepts. Syntax errors stop reading;
// type errors (a value that does not fit its Go type) are recorded, the first
// one kept, and reading goes on, as json.Unmarshal does: Go validates the
// whole input first, so a syntax error anywhere wins over a type error.
//
// Error texts are Go's, followed by " (offset N)" where N is the 0-based
// byte offset of the offending character (syntax errors; the input length
// for "unexpected end of JSON input") or of the start of the offending value
// or key (type and base64 errors). Go's SyntaxError.Offset is N + 1.
//
// Every Decode*/Skip/Literal function consumes one value and returns false
// only on a syntax error (the reader is then finished).
// Thread-compatible; `in` must outlive the reader.
class GoJsonReader {
 public:
  explicit GoJsonReader(std::string_view in)
      : begin_(reinterpret_cast<const unsigned char*>(in.data())),
        p_(begin_),
        end_(begin_ + in.size()) {}
  GoJsonReader(const GoJsonReader&) = delete;
  GoJsonReader& operator=(const GoJsonReader&) = delete;

  // Reads the whole input with top() (which consumes the top-level value),
  // then checks that only whitespace follows. False on any error.
  template <class F>
  bool Run(F&& top) {
    SkipWs();
    if (top()) {
      SkipWs();
      if (p_ != end_) Fail("after top-level value");
    }
    return ok();
  }

  bool ok() const { return !syntax_failed_ && !type_failed_; }
  // The error (syntax first); REQUIRES: !ok().
  absl::Status error() const;

  // ---- syntax ----
  // Sets *k to the kind of the next value (after whitespace).
  bool Peek(GoJsonKind* k);
  // Consumes the literal `word` ("true", "false", "null") at the position.
  bool Literal(std::string_view word);
  // Consumes a number; *text is its source text.
  bool Number(std::string_view* text);
  // Consumes a string; *out is its Go value (escapes resolved, invalid UTF-8
  // and unpaired surrogates as U+FFFD).
  bool String(std::string* out);
  // Iterates an object at the position ('{'); member(key, key_start) must
  // consume one value. `key` is valid only during the call.
  template <class F>
  bool Object(F&& member);
  // Iterates an array at the position ('['); elem() must consume one value.
  template <class F>
  bool Array(F&& elem);
  // Consumes any value.
  bool Skip();
  bool SkipKind(GoJsonKind k);

  // ---- type errors (the first one is kept) ----
  // "json: cannot unmarshal <value> into Go struct field S.f.g of type T"
  // (or "into Go value of type T" outside any struct field).
  void TypeError(std::string_view value, std::string_view type, const unsigned char* at);
  // Any other decode error text (base64).
  void PlainError(std::string msg, const unsigned char* at);
  // A value of kind k where `type` was wanted: records the type error and
  // skips the value.
  bool Mismatch(GoJsonKind k, std::string_view type);
  // The position (for TypeError's `at`).
  const unsigned char* position() const { return p_; }

  // Go's errorContext while decoding one struct field: the struct's type
  // name (innermost wins) and the path of field names.
  class FieldScope {
   public:
    FieldScope(GoJsonReader* r, const char* st, const char* field) : r_(r), saved_(r->ctx_struct_) {
      r->ctx_struct_ = st;
      r->fields_.push_back(field);
    }
    ~FieldScope() {
      r_->fields_.pop_back();
      r_->ctx_struct_ = saved_;
    }
    FieldScope(const FieldScope&) = delete;
    FieldScope& operator=(const FieldScope&) = delete;

   private:
    GoJsonReader* r_;
    const char* saved_;
  };

  // ---- typed decoding of Go's basic types ----
  // string (null leaves *dst as it is).
  bool DecodeString(std::string* dst);
  // An unsigned integer no larger than max, of Go type `type` (for errors);
  // null leaves *dst as it is.
  bool DecodeUint(uint64_t* dst, uint64_t max, const char* type);
  // A slice of strings; `type` names it in errors ("[]string").
  bool DecodeStrings(GoStrings* dst, const char* type);
  // A slice whose elements elem(&element) decodes, reusing the backing
  // array as Go does (null: a nil slice; []: a new empty one); `type` names
  // the slice type in errors.
  template <class T, class F>
  bool DecodeSlice(GoSlice<T>* dst, const char* type, F&& elem);
  // []byte: a base64 string or an array of numbers.
  bool DecodeBytes(GoBytes* dst);

 private:
  void SkipWs() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  // Records a syntax error at p_ (or end of input) and returns false.
  bool Fail(std::string_view context);
  bool DepthError() { return Fail("exceeded max depth"); }
  // Validates a string at p_ ('"'); `raw` is the body between the quotes;
  // `complex` is set when it has escapes or non-ASCII bytes.
  bool ScanString(std::string_view* raw, bool* complex);
  // The key of an object member at p_ into *key (backed by key_ when it
  // needs unquoting), through the ':'.
  bool ObjectKey(std::string_view* key, const unsigned char** key_start);
  // After a member or element: true with *more set, or a syntax error.
  bool AfterItem(unsigned char close, std::string_view context, bool* more);

  static constexpr int kMaxDepth = 10000;  // Go's scanner maxNestingDepth

  const unsigned char* begin_;
  const unsigned char* p_;
  const unsigned char* end_;
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

inline bool GoJsonReader::ObjectKey(std::string_view* key, const unsigned char** key_start) {
  SkipWs();
  if (p_ == end_ || *p_ != '"') return Fail("looking for beginning of object key string");
  *key_start = p_;
  bool complex;
  if (!ScanString(key, &complex)) return false;
  if (complex) {
    UnquoteInto(*key, &key_);
    *key = key_;
  }
  SkipWs();
  if (p_ == end_ || *p_ != ':') return Fail("after object key");
  ++p_;
  return true;
}

inline bool GoJsonReader::AfterItem(unsigned char close, std::string_view context, bool* more) {
  SkipWs();
  if (p_ < end_ && *p_ == ',') {
    ++p_;
    *more = true;
    return true;
  }
  if (p_ < end_ && *p_ == close) {
    ++p_;
    --depth_;
    *more = false;
    return true;
  }
  return Fail(context);
}

template <class F>
bool GoJsonReader::Object(F&& member) {
  if (++depth_ > kMaxDepth) return DepthError();
  ++p_;
  SkipWs();
  if (p_ < end_ && *p_ == '}') {
    ++p_;
    --depth_;
    return true;
  }
  while (true) {
    std::string_view key;
    const unsigned char* key_start = nullptr;
    if (!ObjectKey(&key, &key_start)) return false;
    if (!member(key, key_start)) return false;
    bool more = false;
    if (!AfterItem('}', "after object key:value pair", &more)) return false;
    if (!more) return true;
  }
}

template <class T, class F>
bool GoJsonReader::DecodeSlice(GoSlice<T>* dst, const char* type, F&& elem) {
  GoJsonKind k = GoJsonKind::kNull;  // set by Peek
  if (!Peek(&k)) return false;
  if (k == GoJsonKind::kNull) {
    *dst = GoSlice<T>{};
    return Literal("null");
  }
  if (k != GoJsonKind::kArray) return Mismatch(k, type);
  dst->nil = false;
  size_t i = 0;
  const bool ok = Array([&] {
    if (i >= dst->buf.size()) dst->buf.emplace_back();
    return elem(&dst->buf[i++]);
  });
  if (i == 0) dst->buf.clear();
  dst->len = i;
  return ok;
}

template <class F>
bool GoJsonReader::Array(F&& elem) {
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
    bool more = false;
    if (!AfterItem(']', "after array element", &more)) return false;
    if (!more) return true;
  }
}

}  // namespace devmgr::checkpoint

#endif  // DEVMGR_CHECKPOINT_GO_JSON_H_
