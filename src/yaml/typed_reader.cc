#include "yaml/typed_reader.h"

#include <algorithm>

#include "common/spellcheck.h"
#include "common/status_util.h"
#include "fmt/format.h"

namespace devmgr::yaml {
bool Contains(const Keys& keys, const std::string& k) {
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

std::string DidYouMean(const std::string& word, const Keys& candidates) {
  const std::string guess = SpellCheck(word, candidates);
  if (guess.empty()) return "";
  return fmt::format(" (did you mean '{}'?)", guess);
}

bool TypedReader::Position(const YAML::Mark& mark, int* line, int* column) const {
  if (mark.is_null()) {
    *line = *column = 0;
    return false;
  }
  *line = mark.line + 1 + options_.line_offset;
  *column = mark.column + 1 + (mark.line == 0 ? options_.column_offset : 0);
  return true;
}

absl::Status TypedReader::ErrorAt(const YAML::Mark& mark, const std::string& what) const {
  int line = 0, column = 0;
  if (!Position(mark, &line, &column)) {
    return absl::InvalidArgumentError(fmt::format("{}: {}", file_, what));
  }
  return absl::InvalidArgumentError(fmt::format("{}:{}:{}: {}", file_, line, column, what));
}

absl::Status TypedReader::Error(const YAML::Node& n, const std::string& what) const {
  return ErrorAt(n.Mark(), what);
}

absl::Status TypedReader::ExceptionError(const YAML::Exception& e) const {
  return ErrorAt(e.mark, e.msg);
}

absl::Status TypedReader::UnknownName(const YAML::Node& n, const std::string& message,
                                      const std::string& word, const Keys& candidates) const {
  return Error(n, message + DidYouMean(word, candidates));
}

absl::Status TypedReader::CheckKeys(const YAML::Node& n, const Keys& allowed,
                                    const std::string& where, const Keys& known_elsewhere) const {
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar()) return Error(it->first, "keys must be strings");
    const std::string key = it->first.Scalar();
    if (Contains(allowed, key)) continue;
    if (Contains(known_elsewhere, key)) {
      return Error(it->first, fmt::format("key '{}' does not apply to {}", key, where));
    }
    return UnknownName(it->first, fmt::format("unknown key '{}' in {}", key, where), key, allowed);
  }
  return absl::OkStatus();
}

absl::Status TypedReader::ExpectMap(const YAML::Node& n, const std::string& where) const {
  if (!n.IsMap()) return Error(n, fmt::format("{} must be a mapping", where));
  return absl::OkStatus();
}

absl::Status TypedReader::ExpectSeq(const YAML::Node& n, const std::string& where) const {
  if (!n.IsSequence()) return Error(n, fmt::format("{} must be a list", where));
  return absl::OkStatus();
}

absl::Status TypedReader::OptionalMap(const YAML::Node& n, const Keys& allowed,
                                      const std::string& where) const {
  if (n.IsNull()) return absl::OkStatus();
  if (!n.IsMap()) return Error(n, fmt::format("{} takes no value or a mapping", where));
  return CheckKeys(n, allowed, where);
}

absl::Status TypedReader::String(const YAML::Node& n, const std::string& where,
                                 std::string* out) const {
  if (!n.IsScalar()) return Error(n, fmt::format("{} must be a string", where));
  *out = n.Scalar();
  return absl::OkStatus();
}

absl::Status TypedReader::NonEmptyString(const YAML::Node& n, const std::string& where,
                                         std::string* out) const {
  DEVMGR_RETURN_IF_ERROR(String(n, where, out));
  if (out->empty()) return Error(n, fmt::format("{} must not be empty", where));
  return absl::OkStatus();
}

bool TypedReader::IsPlainScalar(const YAML::Node& n) const {
  // yaml-cpp tags quoted scalars "!".
  return n.IsScalar() && (!options_.quoted_scalars_are_strings || n.Tag() != "!");
}

absl::Status TypedReader::Bool(const YAML::Node& n, const std::string& where, bool* out) const {
  if (IsPlainScalar(n)) {
    const std::string& s = n.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") {
      *out = true;
      return absl::OkStatus();
    }
    if (s == "false" || s == "False" || s == "FALSE") {
      *out = false;
      return absl::OkStatus();
    }
  }
  return Error(n, fmt::format("{} must be true or false", where));
}

absl::Status TypedReader::OptBool(const YAML::Node& n, const std::string& where,
                                  std::optional<bool>* out) const {
  bool b = false;
  DEVMGR_RETURN_IF_ERROR(Bool(n, where, &b));
  *out = b;
  return absl::OkStatus();
}

absl::Status TypedReader::Int(const YAML::Node& n, const std::string& where, int64_t min,
                              int64_t* out) const {
  if (IsPlainScalar(n)) {
    const std::string& s = n.Scalar();
    size_t used = 0;
    long long v = 0;
    bool ok = !s.empty();
    try {
      v = std::stoll(s, &used, 10);
    } catch (...) {
      ok = false;
    }
    if (ok && used == s.size()) {
      if (v < min) return Error(n, fmt::format("{} must be at least {}", where, min));
      *out = v;
      return absl::OkStatus();
    }
  }
  return Error(n, fmt::format("{} must be an integer", where));
}

absl::Status TypedReader::OptInt(const YAML::Node& n, const std::string& where, int64_t min,
                                 std::optional<int64_t>* out) const {
  int64_t v = 0;
  DEVMGR_RETURN_IF_ERROR(Int(n, where, min, &v));
  *out = v;
  return absl::OkStatus();
}

absl::Status TypedReader::Int32(const YAML::Node& n, const std::string& where, int64_t min,
                                int* out) const {
  int64_t v = 0;
  DEVMGR_RETURN_IF_ERROR(Int(n, where, min, &v));
  if (v > 1'000'000'000) return Error(n, fmt::format("{} is too large", where));
  *out = static_cast<int>(v);
  return absl::OkStatus();
}

absl::Status TypedReader::Duration(const YAML::Node& n, const std::string& where,
                                   absl::Duration* out) const {
  if (n.IsScalar()) {
    absl::Duration d;
    if (absl::ParseDuration(n.Scalar(), &d) && d >= absl::ZeroDuration()) {
      *out = d;
      return absl::OkStatus();
    }
  }
  return Error(n,
               fmt::format("{} must be a duration such as {}", where, options_.duration_examples));
}

absl::Status TypedReader::StringList(const YAML::Node& n, const std::string& where,
                                     std::vector<std::string>* out) const {
  DEVMGR_RETURN_IF_ERROR(ExpectSeq(n, where));
  out->clear();
  for (const YAML::Node& e : n) {
    std::string s;
    DEVMGR_RETURN_IF_ERROR(String(e, where + " entries", &s));
    out->push_back(std::move(s));
  }
  return absl::OkStatus();
}

absl::Status TypedReader::OptStringList(const YAML::Node& n, const std::string& where,
                                        std::optional<std::vector<std::string>>* out) const {
  std::vector<std::string> v;
  DEVMGR_RETURN_IF_ERROR(StringList(n, where, &v));
  *out = std::move(v);
  return absl::OkStatus();
}

absl::Status TypedReader::IntList(const YAML::Node& n, const std::string& where,
                                  std::vector<int64_t>* out) const {
  DEVMGR_RETURN_IF_ERROR(ExpectSeq(n, where));
  for (const YAML::Node& e : n) {
    int64_t v = 0;
    DEVMGR_RETURN_IF_ERROR(Int(e, where + " entries", INT64_MIN, &v));
    out->push_back(v);
  }
  return absl::OkStatus();
}

absl::Status TypedReader::StringMap(const YAML::Node& n, const std::string& where,
                                    std::map<std::string, std::string>* out,
                                    const EntryCheck& check) const {
  DEVMGR_RETURN_IF_ERROR(ExpectMap(n, where));
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string k, v;
    DEVMGR_RETURN_IF_ERROR(String(it->first, where + " keys", &k));
    DEVMGR_RETURN_IF_ERROR(String(it->second, where + " values", &v));
    if (check) DEVMGR_RETURN_IF_ERROR(check(it->first, it->second, k, v));
    (*out)[k] = v;
  }
  return absl::OkStatus();
}

}  // namespace devmgr::yaml
