#include "pod/quantity.h"

#include <cstdlib>
#include <limits>
#include <string_view>

#include "fmt/format.h"

namespace devmgr::pod {
namespace {

using int128 = __int128;

constexpr int64_t kNanosPerUnit = 1000000000;

// The pieces of the text, split as Go's parseQuantityString splits them.
struct Parts {
  bool positive = true;
  std::string num;     // leading zeros removed; "0" when empty
  std::string denom;   // digits after '.'
  std::string suffix;  // everything after the number
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsSuffixLetter(char c) {
  return std::string_view("eEinumkKMGTP").find(c) != std::string_view::npos;
}

// False on a format error.
bool Split(std::string_view s, Parts* out) {
  size_t pos = 0;
  const size_t end = s.size();
  if (pos < end && (s[0] == '-' || s[0] == '+')) {
    out->positive = s[0] == '+';
    ++pos;
  }
  while (pos < end && s[pos] == '0') ++pos;
  if (pos == end) {
    out->num = "0";
    return true;
  }
  size_t start = pos;
  while (pos < end && IsDigit(s[pos])) ++pos;
  out->num = std::string(s.substr(start, pos - start));
  if (out->num.empty()) out->num = "0";
  if (pos == end) return true;
  if (s[pos] == '.') {
    ++pos;
    start = pos;
    while (pos < end && IsDigit(s[pos])) ++pos;
    out->denom = std::string(s.substr(start, pos - start));
    if (pos == end) return true;
  }
  // Suffix: letters, then an optional sign and digits (an exponent).
  const size_t suffix_start = pos;
  while (pos < end && IsSuffixLetter(s[pos])) ++pos;
  if (pos < end && (s[pos] == '-' || s[pos] == '+')) ++pos;
  while (pos < end && IsDigit(s[pos])) ++pos;
  if (pos != end) return false;
  out->suffix = std::string(s.substr(suffix_start));
  return true;
}

struct SuffixMeaning {
  int base = 10;  // 10 or 2
  int exponent = 0;
  Quantity::Format format = Quantity::Format::kDecimalSI;
};

bool InterpretSuffix(const std::string& s, SuffixMeaning* out) {
  static const struct {
    const char* text;
    int base;
    int exponent;
  } kTable[] = {
      {"", 10, 0},   {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"k", 10, 3},  {"M", 10, 6},
      {"G", 10, 9},  {"T", 10, 12}, {"P", 10, 15}, {"E", 10, 18}, {"Ki", 2, 10}, {"Mi", 2, 20},
      {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60},
  };
  for (const auto& e : kTable) {
    if (s == e.text) {
      out->base = e.base;
      out->exponent = e.exponent;
      out->format = e.base == 2 ? Quantity::Format::kBinarySI : Quantity::Format::kDecimalSI;
      return true;
    }
  }
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    // strconv.ParseInt(s[1:], 10, 32): optional sign, then digits only.
    std::string_view digits(s);
    digits.remove_prefix(1);
    bool negative = false;
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
      negative = digits[0] == '-';
      digits.remove_prefix(1);
    }
    if (digits.empty()) return false;
    int64_t v = 0;
    for (char c : digits) {
      if (!IsDigit(c)) return false;
      v = v * 10 + (c - '0');
      if (v > (int64_t{1} << 31)) return false;
    }
    if (negative) v = -v;
    if (v > std::numeric_limits<int32_t>::max() || v < std::numeric_limits<int32_t>::min()) {
      return false;
    }
    out->base = 10;
    out->exponent = static_cast<int>(v);
    out->format = Quantity::Format::kDecimalExponent;
    return true;
  }
  return false;
}

bool MulOverflows(int128 a, int128 b, int128* out) { return __builtin_mul_overflow(a, b, out); }

// Parses a digit string (no sign) into *out; false on overflow.
bool ParseDigits(std::string_view digits, int128* out) {
  int128 v = 0;
  for (char c : digits) {
    if (MulOverflows(v, 10, &v)) return false;
    v += c - '0';
    if (v < 0) return false;
  }
  *out = v;
  return true;
}

// |digits| * 10^k * 2^b in nanounits rounded up, k may be negative.
// False when the result does not fit.
bool ToNanos(std::string digits, int k, int b, int128* out) {
  // Normalize: drop leading zeros; move trailing zeros into k.
  size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) {
    *out = 0;
    return true;
  }
  digits.erase(0, first);
  while (digits.size() > 1 && digits.back() == '0') {
    digits.pop_back();
    ++k;
  }
  if (b == 0 && k < 0) {
    // Pure decimal with a fraction below a nanounit: truncate and round up.
    int keep = static_cast<int>(digits.size()) + k;
    if (keep <= 0) {
      *out = 1;  // nonzero, smaller than a nanounit
      return true;
    }
    int128 v;
    if (!ParseDigits(std::string_view(digits).substr(0, keep), &v)) {
      return false;
    }
    // Trailing zeros were removed, so the dropped tail is nonzero.
    *out = v + 1;
    return *out > 0;
  }
  int128 v;
  if (!ParseDigits(digits, &v)) return false;
  if (b > 0 && MulOverflows(v, static_cast<int128>(1) << b, &v)) return false;
  for (; k > 0; --k) {
    if (MulOverflows(v, 10, &v)) return false;
  }
  if (k < 0) {
    if (-k > 38) {
      *out = 1;
      return true;
    }
    int128 divisor = 1;
    for (int i = 0; i < -k; ++i) divisor *= 10;
    int128 q = v / divisor;
    if (v % divisor != 0) ++q;
    v = q;
  }
  *out = v;
  return true;
}

// Rounds nanos/divisor away from zero and saturates to int64.
int64_t ScaleDownRoundUp(int128 nanos, int64_t divisor) {
  int128 q = nanos / divisor;
  if (nanos % divisor != 0) q += nanos > 0 ? 1 : -1;
  if (q > std::numeric_limits<int64_t>::max()) {
    return std::numeric_limits<int64_t>::max();
  }
  if (q < std::numeric_limits<int64_t>::min()) {
    return std::numeric_limits<int64_t>::min();
  }
  return static_cast<int64_t>(q);
}

std::string Int128ToString(int128 v) {
  if (v == 0) return "0";
  bool negative = v < 0;
  // Magnitudes are below 2^127-1, so negation is safe.
  if (negative) v = -v;
  std::string out;
  while (v > 0) {
    out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  if (negative) out.insert(out.begin(), '-');
  return out;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

absl::StatusOr<Quantity> Quantity::Parse(const std::string& text) {
  if (text.empty()) return absl::InvalidArgumentError(kErrFormatWrong);
  Parts parts;
  if (!Split(text, &parts)) return absl::InvalidArgumentError(kErrFormatWrong);
  SuffixMeaning meaning;
  if (!InterpretSuffix(parts.suffix, &meaning)) {
    return absl::InvalidArgumentError(kErrSuffix);
  }

  Quantity q;
  q.format_ = meaning.format;
  const int denom_len = static_cast<int>(parts.denom.size());
  int k = 9 - denom_len;
  int b = 0;
  if (meaning.base == 10) {
    k += meaning.exponent;
  } else {
    b = meaning.exponent;
  }
  // Guard the loops in ToNanos against absurd exponents.
  if (k > 60) {
    if (parts.num.find_first_not_of('0') == std::string::npos &&
        parts.denom.find_first_not_of('0') == std::string::npos) {
      k = 0;  // zero
    } else {
      return absl::OutOfRangeError(fmt::format("quantity \"{}\" is too large", text));
    }
  }
  int128 magnitude;
  if (!ToNanos(parts.num + parts.denom, k, b, &magnitude)) {
    return absl::OutOfRangeError(fmt::format("quantity \"{}\" is too large", text));
  }
  if (meaning.base == 2) {
    const int128 cap = static_cast<int128>(std::numeric_limits<int64_t>::max()) * kNanosPerUnit;
    if (magnitude > cap) magnitude = cap;
    if (magnitude > 0 && magnitude < kNanosPerUnit) {
      q.format_ = Format::kDecimalSI;
    }
  }
  q.nanos_ = parts.positive ? magnitude : -magnitude;

  // Go keeps the original text when its int64 fast path produced a value
  // already in canonical form.
  const std::string shifted = parts.num + parts.denom;
  if (meaning.base == 10) {
    const int precision = 18 - static_cast<int>(shifted.size());
    const int scale = meaning.exponent - denom_len;
    if (precision >= 0 && scale >= -9 && scale % 3 == 0 && !EndsWith(shifted, "000") &&
        shifted[0] != '0') {
      q.cached_ = text;
    }
  } else if (parts.denom.empty()) {
    const int precision = 15 - static_cast<int>(parts.num.size()) -
                          static_cast<int>(static_cast<float>(meaning.exponent) * 3 / 10) - 1;
    int128 value;
    if (precision >= 0 && ParseDigits(parts.num, &value) &&
        value <= std::numeric_limits<int64_t>::max()) {
      int128 scaled = value << meaning.exponent;
      if (scaled <= std::numeric_limits<int64_t>::max() &&
          (static_cast<int64_t>(value) & 0x07) != 0) {
        q.cached_ = text;
      }
    }
  }
  return q;
}

Quantity Quantity::FromInt64(int64_t units) {
  Quantity q;
  q.nanos_ = static_cast<int128>(units) * kNanosPerUnit;
  return q;
}

int64_t Quantity::Value() const { return ScaleDownRoundUp(nanos_, kNanosPerUnit); }

int64_t Quantity::MilliValue() const { return ScaleDownRoundUp(nanos_, 1000000); }

int Quantity::Cmp(const Quantity& other) const {
  if (nanos_ < other.nanos_) return -1;
  if (nanos_ > other.nanos_) return 1;
  return 0;
}

std::string Quantity::String() const {
  if (!cached_.empty()) return cached_;
  if (nanos_ == 0) return "0";
  Format format = format_;
  if (format == Format::kBinarySI) {
    const int128 unit = kNanosPerUnit;
    if ((nanos_ > -1024 * unit && nanos_ < 1024 * unit) || nanos_ % unit != 0) {
      format = Format::kDecimalSI;
    }
  }
  if (format == Format::kBinarySI) {
    int128 amount = nanos_ / kNanosPerUnit;
    int exponent = 0;
    while (amount % 1024 == 0) {
      amount /= 1024;
      exponent += 10;
    }
    static const char* kBinary[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    return Int128ToString(amount) + kBinary[exponent / 10];
  }
  int128 amount = nanos_;
  int exponent = -9;
  while (amount % 10 == 0) {
    amount /= 10;
    ++exponent;
  }
  while (exponent % 3 != 0) {
    amount *= 10;
    --exponent;
  }
  std::string suffix;
  if (format == Format::kDecimalSI) {
    switch (exponent) {
      case -9:
        suffix = "n";
        break;
      case -6:
        suffix = "u";
        break;
      case -3:
        suffix = "m";
        break;
      case 0:
        break;
      case 3:
        suffix = "k";
        break;
      case 6:
        suffix = "M";
        break;
      case 9:
        suffix = "G";
        break;
      case 12:
        suffix = "T";
        break;
      case 15:
        suffix = "P";
        break;
      case 18:
        suffix = "E";
        break;
      default:
        suffix = fmt::format("e{}", exponent);
    }
  } else if (exponent != 0) {
    suffix = fmt::format("e{}", exponent);
  }
  return Int128ToString(amount) + suffix;
}

}  // namespace devmgr::pod
