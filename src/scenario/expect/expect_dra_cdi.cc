// A container's `dra_cdi_devices`: the CDI device IDs of its DRA claims, as
// the kubelet puts them into the CRI ContainerConfig.CDIDevices (the devices
// whose request names include one the container's resources.claims entry
// names, or every device of the claim when the entry names no request).
#include <algorithm>
#include <string>
#include <vector>

#include "common/status_util.h"
#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

// `dra_cdi_devices: none`, or a list of IDs ({regex} allowed): exactly
// these, in any order.
absl::Status ParseContainer(const ExpectReader& r, const YAML::Node& c, ContainerExpect* out) {
  const YAML::Node n = c["dra_cdi_devices"];
  if (!n) return absl::OkStatus();
  std::vector<StringMatcher> want;
  if (n.IsScalar() && n.Scalar() == "none") {
    out->dra_cdi_devices = std::move(want);
    return absl::OkStatus();
  }
  if (!n.IsSequence()) {
    return r.Error(n,
                   "dra_cdi_devices takes a list of CDI device IDs ({regex: RE} allowed) or none");
  }
  for (const YAML::Node& m : n) {
    StringMatcher sm;
    DEVMGR_RETURN_IF_ERROR(r.Matcher(m, "dra_cdi_devices entries", &sm));
    want.push_back(std::move(sm));
  }
  out->dra_cdi_devices = std::move(want);
  return absl::OkStatus();
}

void CheckContainer(const ContainerCheck& cc, std::vector<Failure>* out) {
  if (!cc.want.dra_cdi_devices) return;
  const std::vector<StringMatcher>& want = *cc.want.dra_cdi_devices;
  const std::vector<std::string>& got = cc.container.cdi_devices;
  const std::string w = cc.where + ".dra_cdi_devices";
  const bool matched = want.size() == got.size() &&
                       MatchUnordered(want, got, [](const StringMatcher& m, const std::string& g) {
                         return m.Matches(g);
                       }).has_value();
  if (matched) return;
  std::string expected;
  for (const StringMatcher& m : want) expected += (expected.empty() ? "" : ", ") + m.Describe();
  Fail(out, cc.want.loc, w,
       want.empty() ? "none" : fmt::format("exactly [{}], in any order", expected),
       got.empty() ? "none" : ListString(got));
}

}  // namespace

const ExpectKind& DraCdiExpectKind() {
  static const ExpectKind kKind = {
      .name = "dra_cdi_devices",
      .container_keys = {"dra_cdi_devices"},
      .parse_container = ParseContainer,
      .check_container = CheckContainer,
  };
  return kKind;
}

}  // namespace devmgr::scenario
