#include "metrics/go_float.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace devmgr::metrics {

std::string FormatGoFloat(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return "0";
  // Shortest round-trip digits, as d.dddde±X.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string out;
  if (sci[0] == '-') {
    out = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t i = 0; i < e; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  const int exp = std::atoi(sci.c_str() + e + 1);
  const int nd = static_cast<int>(digits.size());
  const int dp = exp + 1;  // decimal point position relative to digits
  // Go: shortest %g switches to %e when exp < -4 || exp >= 6.
  if (exp < -4 || exp >= 6) {
    out += digits[0];
    if (nd > 1) out += "." + digits.substr(1);
    out += exp < 0 ? "e-" : "e+";
    const int a = std::abs(exp);
    if (a < 10) out += '0';
    out += std::to_string(a);
    return out;
  }
  // %f with max(nd - dp, 0) fraction digits.
  if (dp > 0) {
    for (int i = 0; i < dp; ++i) out += i < nd ? digits[i] : '0';
  } else {
    out += '0';
  }
  const int frac = nd - dp > 0 ? nd - dp : 0;
  if (frac > 0) {
    out += '.';
    for (int i = 0; i < frac; ++i) {
      const int idx = dp + i;
      out += idx >= 0 && idx < nd ? digits[idx] : '0';
    }
  }
  return out;
}

}  // namespace devmgr::metrics
