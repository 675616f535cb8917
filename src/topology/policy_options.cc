#include "topology/policy_options.h"

#include <limits>

#include "common/go_format.h"
#include "common/logging.h"
#include "fmt/format.h"

namespace devmgr::topology {
namespace {

enum class Level { kUnknown, kAlpha, kBeta, kStable };

Level LevelOf(const std::string& name, const Profile& profile) {
  if (name == kPreferClosestNumaNodes) {
    return profile.prefer_closest_numa_ga ? Level::kStable : Level::kBeta;
  }
  if (name == kMaxAllowableNumaNodes) {
    // Beta from 1.31, GA from 1.35 (#134614).
    if (profile.max_allowable_numa_nodes_ga) return Level::kStable;
    return profile.max_allowable_numa_nodes_option ? Level::kBeta : Level::kUnknown;
  }
  return Level::kUnknown;
}

}  // namespace

absl::StatusOr<bool> GoParseBool(const std::string& s) {
  if (s == "1" || s == "t" || s == "T" || s == "true" || s == "TRUE" || s == "True") return true;
  if (s == "0" || s == "f" || s == "F" || s == "false" || s == "FALSE" || s == "False") {
    return false;
  }
  return absl::InvalidArgumentError(
      fmt::format("strconv.ParseBool: parsing {}: invalid syntax", GoQuote(s)));
}

absl::StatusOr<int64_t> GoAtoi(const std::string& s) {
  auto syntax = [&] {
    return absl::InvalidArgumentError(
        fmt::format("strconv.Atoi: parsing {}: invalid syntax", GoQuote(s)));
  };
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    neg = s[i] == '-';
    ++i;
  }
  if (i == s.size()) return syntax();
  // Digits and single underscores are only allowed in base-prefixed
  // literals, which Atoi (base 10) does not accept: digits only.
  unsigned __int128 v = 0;
  bool overflow = false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return syntax();
    v = v * 10 + static_cast<unsigned>(s[i] - '0');
    if (v > static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max()) + 1) {
      overflow = true;
      v = static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max()) + 1;
    }
  }
  const unsigned __int128 limit =
      static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max()) + (neg ? 1 : 0);
  if (overflow || v > limit) {
    return absl::OutOfRangeError(
        fmt::format("strconv.Atoi: parsing {}: value out of range", GoQuote(s)));
  }
  return neg ? static_cast<int64_t>(-static_cast<__int128>(v)) : static_cast<int64_t>(v);
}

absl::StatusOr<PolicyOptions> NewPolicyOptions(const std::map<std::string, std::string>& options,
                                               const Profile& profile, const OptionGates& gates) {
  PolicyOptions opts;
  for (const auto& [name, value] : options) {
    // CheckPolicyOptionAvailable.
    switch (LevelOf(name, profile)) {
      case Level::kUnknown:
        return absl::InvalidArgumentError(
            fmt::format("unknown Topology Manager Policy option: {}", GoQuote(name)));
      case Level::kAlpha:
        if (!gates.alpha) {
          return absl::InvalidArgumentError(fmt::format(
              "Topology Manager Policy Alpha-level Options not enabled, but option {} provided",
              GoQuote(name)));
        }
        break;
      case Level::kBeta:
        if (!gates.beta) {
          return absl::InvalidArgumentError(fmt::format(
              "Topology Manager Policy Beta-level Options not enabled, but option {} provided",
              GoQuote(name)));
        }
        break;
      case Level::kStable:
        break;
    }
    if (name == kPreferClosestNumaNodes) {
      absl::StatusOr<bool> b = GoParseBool(value);
      if (!b.ok()) {
        return absl::InvalidArgumentError(fmt::format("bad value for option {}: {}", GoQuote(name),
                                                      std::string(b.status().message())));
      }
      opts.prefer_closest_numa = *b;
    } else if (name == kMaxAllowableNumaNodes) {
      absl::StatusOr<int64_t> n = GoAtoi(value);
      if (!n.ok()) {
        return absl::InvalidArgumentError(
            fmt::format("unable to convert policy option to integer {}: {}", GoQuote(name),
                        std::string(n.status().message())));
      }
      if (*n < kDefaultMaxAllowableNumaNodes) {
        return absl::InvalidArgumentError(
            fmt::format("the minimum value of {} should not be less than {}", GoQuote(name),
                        kDefaultMaxAllowableNumaNodes));
      }
      if (*n > kDefaultMaxAllowableNumaNodes) {
        DM_INFO(
            "WARNING: the value of max-allowable-numa-nodes is more than the default "
            "recommended value",
            {"max-allowable-numa-nodes", *n},
            {"defaultMaxAllowableNUMANodes", kDefaultMaxAllowableNumaNodes});
      }
      opts.max_allowable_numa_nodes = *n > std::numeric_limits<int>::max()
                                          ? std::numeric_limits<int>::max()
                                          : static_cast<int>(*n);
    }
  }
  return opts;
}

}  // namespace devmgr::topology
