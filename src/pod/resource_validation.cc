#include "pod/resource_validation.h"

#include "common/go_format.h"
#include "common/resource_name.h"
#include "fmt/format.h"

namespace devmgr::pod {
namespace {

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

bool IsHugePageResourceName(const std::string& name) { return StartsWith(name, "hugepages-"); }

bool IsStandardContainerResourceName(const std::string& name) {
  return name == "cpu" || name == "memory" || name == "ephemeral-storage" ||
         IsHugePageResourceName(name);
}

bool IsOvercommitAllowed(const std::string& name) {
  return IsNativeResourceName(name) && !IsHugePageResourceName(name);
}

// field.Invalid(path, value, detail).Error() for a string value.
std::string Invalid(const std::string& path, const std::string& value, const std::string& detail) {
  return fmt::format("{}: Invalid value: {}: {}", path, GoQuote(value), detail);
}

// Name and quantity checks shared by limits and requests.
void ValidateEntry(const std::string& name, const Quantity& q, const std::string& key_path,
                   bool in_requests, std::vector<ResourceError>* errors) {
  auto add = [&](std::string text) { errors->push_back({name, in_requests, std::move(text)}); };
  if (name.find('/') == std::string::npos) {
    if (!IsStandardContainerResourceName(name)) {
      add(Invalid(key_path, name, "must be a standard resource for containers"));
      return;
    }
  } else if (!IsNativeResourceName(name) && !IsExtendedResourceName(name)) {
    add(Invalid(key_path, name, "doesn't follow extended resource name standard"));
    return;
  }
  if (q.Sign() < 0) {
    add(Invalid(key_path, q.String(), "must be greater than or equal to 0"));
  }
  if (IsExtendedResourceName(name) && !q.IsInteger()) {
    add(Invalid(key_path, q.String(), "must be an integer"));
  }
}

}  // namespace

bool IsNativeResourceName(const std::string& name) {
  return name.find('/') == std::string::npos || name.find("kubernetes.io/") != std::string::npos;
}

std::vector<ResourceError> ValidateResourceRequirements(
    const std::map<std::string, Quantity>& limits, const std::map<std::string, Quantity>& requests,
    const std::string& resources_path) {
  std::vector<ResourceError> errors;
  const std::string lim_path = resources_path + ".limits";
  const std::string req_path = resources_path + ".requests";
  for (const auto& [name, q] : limits) {
    ValidateEntry(name, q, fmt::format("{}[{}]", lim_path, name), false, &errors);
  }
  for (const auto& [name, q] : requests) {
    ValidateEntry(name, q, fmt::format("{}[{}]", req_path, name), true, &errors);
    auto limit = limits.find(name);
    if (limit != limits.end()) {
      const int cmp = q.Cmp(limit->second);
      if (cmp != 0 && !IsOvercommitAllowed(name)) {
        errors.push_back({name, true,
                          Invalid(req_path, q.String(),
                                  fmt::format("must be equal to {} limit of {}", name,
                                              limit->second.String()))});
      } else if (cmp > 0) {
        errors.push_back({name, true,
                          Invalid(req_path, q.String(),
                                  fmt::format("must be less than or equal to {} limit of {}", name,
                                              limit->second.String()))});
      }
    } else if (!IsOvercommitAllowed(name)) {
      errors.push_back({name, true,
                        fmt::format("{}: Required value: Limit must be set for non "
                                    "overcommitable resources",
                                    lim_path)});
    }
  }
  return errors;
}

}  // namespace devmgr::pod
