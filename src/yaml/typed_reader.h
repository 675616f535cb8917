// Typed access to a parsed YAML document (yaml-cpp), with errors of the form
//   <file>:<line>:<col>: <message>
// e.g. "c.yaml:3:1: unknown key 'devcies' in the config (did you mean 'devices'?)".
// Shared by the file formats of devmgr (the sample plugin's config, `devmgr
// run` scenarios). Every accessor returns InvalidArgument naming the node's
// position; `where` is the human name of the value ("node.fsync", "a mount").
#ifndef DEVMGR_YAML_TYPED_READER_H_
#define DEVMGR_YAML_TYPED_READER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "yaml-cpp/yaml.h"

namespace devmgr::yaml {

using Keys = std::vector<std::string>;

// Whether `k` is one of `keys`.
bool Contains(const Keys& keys, const std::string& k);

// " (did you mean 'x'?)" for the candidate closest to `word`, or "".
std::string DidYouMean(const std::string& word, const Keys& candidates);

class TypedReader {
 public:
  // The wording choices of a file format.
  struct Options {
    // The examples in "... must be a duration such as <examples>".
    std::string duration_examples = "500ms, 2s or 1m30s";
    // When true, a quoted scalar ("5", 'true') is a string only: Int and
    // Bool reject it. When false, quoting makes no difference.
    bool quoted_scalars_are_strings = false;
    // Added to positions: for a document embedded in a bigger file, its
    // line 1 is file line 1 + line_offset, and its first line's columns are
    // shifted by column_offset (later lines keep their columns).
    int line_offset = 0;
    int column_offset = 0;
  };

  explicit TypedReader(std::string file) : TypedReader(std::move(file), Options()) {}
  TypedReader(std::string file, Options options)
      : file_(std::move(file)), options_(std::move(options)) {}

  const std::string& file() const { return file_; }

  // The 1-based position of `mark` in the file; false (and 0, 0) when unknown.
  bool Position(const YAML::Mark& mark, int* line, int* column) const;

  // "<file>:<line>:<col>: <what>", or "<file>: <what>" when the node (or
  // mark) has no position.
  absl::Status Error(const YAML::Node& n, const std::string& what) const;
  absl::Status ErrorAt(const YAML::Mark& mark, const std::string& what) const;
  // A yaml-cpp exception (syntax error, bad access) as an error.
  absl::Status ExceptionError(const YAML::Exception& e) const;
  // `message` + DidYouMean(word, candidates), at `n`.
  absl::Status UnknownName(const YAML::Node& n, const std::string& message, const std::string& word,
                           const Keys& candidates) const;

  // Every key of mapping `n` must be a string in `allowed`; the first that is
  // not gives "unknown key 'k' in <where>" (with a did-you-mean among
  // `allowed`), or, when it is in `known_elsewhere`, "key 'k' does not apply
  // to <where>".
  absl::Status CheckKeys(const YAML::Node& n, const Keys& allowed, const std::string& where,
                         const Keys& known_elsewhere = {}) const;
  absl::Status ExpectMap(const YAML::Node& n, const std::string& where) const;
  absl::Status ExpectSeq(const YAML::Node& n, const std::string& where) const;
  // Null, or a mapping whose keys are checked against `allowed`.
  absl::Status OptionalMap(const YAML::Node& n, const Keys& allowed,
                           const std::string& where) const;

  absl::Status String(const YAML::Node& n, const std::string& where, std::string* out) const;
  absl::Status NonEmptyString(const YAML::Node& n, const std::string& where,
                              std::string* out) const;
  // true/True/TRUE or false/False/FALSE.
  absl::Status Bool(const YAML::Node& n, const std::string& where, bool* out) const;
  absl::Status OptBool(const YAML::Node& n, const std::string& where,
                       std::optional<bool>* out) const;
  // A decimal integer >= min.
  absl::Status Int(const YAML::Node& n, const std::string& where, int64_t min, int64_t* out) const;
  absl::Status OptInt(const YAML::Node& n, const std::string& where, int64_t min,
                      std::optional<int64_t>* out) const;
  // An integer in [min, 1000000000].
  absl::Status Int32(const YAML::Node& n, const std::string& where, int64_t min, int* out) const;
  // A non-negative Go-style duration ("1m30s").
  absl::Status Duration(const YAML::Node& n, const std::string& where, absl::Duration* out) const;

  // A list of strings (replaces *out).
  absl::Status StringList(const YAML::Node& n, const std::string& where,
                          std::vector<std::string>* out) const;
  absl::Status OptStringList(const YAML::Node& n, const std::string& where,
                             std::optional<std::vector<std::string>>* out) const;
  // A list of integers (appended to *out); entries are named "<where> entries".
  absl::Status IntList(const YAML::Node& n, const std::string& where,
                       std::vector<int64_t>* out) const;

  // Checks one entry of a StringMap after its key and value were read.
  using EntryCheck = std::function<absl::Status(const YAML::Node& key, const YAML::Node& value,
                                                const std::string& k, const std::string& v)>;
  // A mapping of strings to strings (merged into *out); `check` (optional)
  // runs on each entry in order.
  absl::Status StringMap(const YAML::Node& n, const std::string& where,
                         std::map<std::string, std::string>* out,
                         const EntryCheck& check = nullptr) const;

 private:
  bool IsPlainScalar(const YAML::Node& n) const;

  std::string file_;
  Options options_;
};

}  // namespace devmgr::yaml

#endif  // DEVMGR_YAML_TYPED_READER_H_
