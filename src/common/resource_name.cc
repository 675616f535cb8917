#include "common/resource_name.h"

#include <cstddef>
#include <string>

namespace devmgr {
namespace {

constexpr std::string_view kNativePrefix = "kubernetes.io/";  // ResourceDefaultNamespacePrefix
constexpr std::string_view kRequestsPrefix = "requests.";     // DefaultResourceRequestsPrefix
constexpr size_t kDns1123SubdomainMaxLength = 253;
constexpr size_t kQualifiedNameMaxLength = 63;

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

// One DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])? (no length limit here;
// the subdomain check limits the whole).
bool IsLabel(std::string_view label) {
  if (label.empty()) return false;
  if (!IsLowerAlnum(label.front()) || !IsLowerAlnum(label.back())) return false;
  for (char c : label) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool MatchesQualifiedNamePart(std::string_view name) {
  if (name.empty()) return false;
  if (!IsAlnum(name.front()) || !IsAlnum(name.back())) return false;
  for (char c : name) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

}  // namespace

bool IsDns1123Subdomain(std::string_view value) {
  if (value.empty() || value.size() > kDns1123SubdomainMaxLength) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = value.find('.', start);
    const std::string_view label =
        value.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (!IsLabel(label)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool IsQualifiedName(std::string_view value) {
  std::string_view name = value;
  const size_t slash = value.find('/');
  if (slash != std::string_view::npos) {
    if (value.find('/', slash + 1) != std::string_view::npos) return false;  // > 2 parts
    const std::string_view prefix = value.substr(0, slash);
    if (prefix.empty() || !IsDns1123Subdomain(prefix)) return false;
    name = value.substr(slash + 1);
  }
  if (name.empty() || name.size() > kQualifiedNameMaxLength) return false;
  return MatchesQualifiedNamePart(name);
}

bool IsExtendedResourceName(std::string_view name) {
  // IsNativeResource: no '/' at all, or a "kubernetes.io/" anywhere.
  if (name.find('/') == std::string_view::npos) return false;
  if (name.find(kNativePrefix) != std::string_view::npos) return false;
  if (name.substr(0, kRequestsPrefix.size()) == kRequestsPrefix) return false;
  // The name must also be valid as a quota key, "requests." + name.
  std::string quota_name(kRequestsPrefix);
  quota_name.append(name);
  return IsQualifiedName(quota_name);
}

}  // namespace devmgr
