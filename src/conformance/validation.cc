#include "conformance/validation.h"

#include <algorithm>

#include "common/go_format.h"
#include "fmt/format.h"
#include "google/protobuf/text_format.h"

namespace devmgr::conformance {
namespace {

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return IsLetter(c) || IsDigit(c); }

std::string NamePartProblem(const std::string& what, const std::string& v, const std::string& extra,
                            bool letter_first) {
  if (v.empty()) return fmt::format("empty {}", what);
  if (letter_first ? !IsLetter(v.front()) : !IsAlnum(v.front())) {
    return fmt::format("{} {} must start with a {}", what, GoQuote(v),
                       letter_first ? "letter" : "letter or digit");
  }
  if (!IsAlnum(v.back())) {
    return fmt::format("{} {} must end with a letter or digit", what, GoQuote(v));
  }
  for (char c : v) {
    if (!IsAlnum(c) && extra.find(c) == std::string::npos) {
      return fmt::format("{} {} holds an invalid character {}", what, GoQuote(v),
                         GoQuote(std::string(1, c)));
    }
  }
  return "";
}

}  // namespace

std::string DeviceIdProblem(const std::string& id) {
  if (!IsValidUtf8(id)) return "not valid UTF-8";
  for (size_t i = 0; i < id.size(); ++i) {
    const auto c = static_cast<unsigned char>(id[i]);
    if (c < 0x20 || c == 0x7f) return fmt::format("control byte 0x{:02x} at offset {}", c, i);
    // C1 controls U+0080..U+009F are encoded as C2 80..C2 9F.
    if (c == 0xc2 && i + 1 < id.size()) {
      const auto n = static_cast<unsigned char>(id[i + 1]);
      if (n >= 0x80 && n <= 0x9f)
        return fmt::format("control character U+{:04X} at offset {}", n, i);
    }
  }
  if (id.find_first_not_of(' ') == std::string::npos) return "only spaces";
  return "";
}

bool IsValidEnvName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = IsLetter(c) || c == '-' || c == '.' || c == '_' || (i > 0 && IsDigit(c));
    if (!ok) return false;
  }
  return true;
}

std::string CdiNameProblem(const std::string& name) {
  const size_t slash = name.find('/');
  const size_t eq = name.find('=');
  if (slash == std::string::npos || eq == std::string::npos || eq < slash) {
    return fmt::format("{} is not of the form <vendor>/<class>=<name>", GoQuote(name));
  }
  const std::string vendor = name.substr(0, slash);
  const std::string cls = name.substr(slash + 1, eq - slash - 1);
  const std::string dev = name.substr(eq + 1);
  if (std::string p = NamePartProblem("vendor", vendor, "._-", true); !p.empty()) return p;
  if (std::string p = NamePartProblem("class", cls, "_-", true); !p.empty()) return p;
  if (std::string p = NamePartProblem("device name", dev, "._:-", false); !p.empty()) return p;
  return "";
}

std::string PermissionsProblem(const std::string& permissions) {
  if (permissions.empty()) return "empty permissions";
  std::string seen;
  for (char c : permissions) {
    if (c != 'r' && c != 'w' && c != 'm') {
      return fmt::format("permissions {} hold {}, not one of r, w, m", GoQuote(permissions),
                         GoQuote(std::string(1, c)));
    }
    if (seen.find(c) != std::string::npos) {
      return fmt::format("permissions {} repeat {}", GoQuote(permissions),
                         GoQuote(std::string(1, c)));
    }
    seen += c;
  }
  return "";
}

std::string CanonicalText(const google::protobuf::Message& m) {
  // Map fields come out of TextFormat sorted by key.
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  std::string out;
  printer.PrintToString(m, &out);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string DeviceListKey(const v1beta1::ListAndWatchResponse& resp) {
  std::vector<std::string> entries;
  entries.reserve(resp.devices_size());
  for (const auto& d : resp.devices()) {
    std::string e = GoQuote(d.id()) + "(" + d.health() + ")";
    if (d.has_topology()) {
      e += "[";
      for (const auto& n : d.topology().nodes()) e += fmt::format("{},", n.id());
      e += "]";
    }
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end());
  std::string out;
  for (const auto& e : entries) out += e + " ";
  return out;
}

std::string FormatBytes(int64_t bytes) {
  return fmt::format("{} B ({:.2f} MiB)", bytes, static_cast<double>(bytes) / (1024.0 * 1024.0));
}

}  // namespace devmgr::conformance
