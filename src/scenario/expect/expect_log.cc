// `expect.log`: regular expressions each of which must match one of devmgr's
// recent log lines.
#include <regex>
#include <string>
#include <vector>

#include "common/status_util.h"
#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

// A regular expression, or a list of them.
absl::Status Parse(const ExpectReader& r, const YAML::Node& n, Expectations* e) {
  if (!n["log"]) return absl::OkStatus();
  const YAML::Node l = n["log"];
  std::vector<YAML::Node> items;
  if (l.IsSequence()) {
    for (const YAML::Node& x : l) items.push_back(x);
  } else {
    items.push_back(l);
  }
  for (const YAML::Node& x : items) {
    std::string re;
    DEVMGR_RETURN_IF_ERROR(r.Regex(x, "log", &re));
    e->log.emplace_back(r.Loc(x), re);
  }
  return absl::OkStatus();
}

void CheckLine(const Location& loc, const std::string& re, const Observed& o,
               std::vector<Failure>* out) {
  std::regex r(re, std::regex::ECMAScript);
  for (const auto& l : o.log_lines) {
    if (std::regex_search(l, r)) return;
  }
  Fail(out, loc, "log", fmt::format("a devmgr log line matching /{}/", re),
       fmt::format("none in the last {} lines", o.log_lines.size()));
}

void Check(const Expectations& e, const Observed& o, std::vector<Failure>* out) {
  for (const auto& [loc, re] : e.log) CheckLine(loc, re, o, out);
}

}  // namespace

const ExpectKind& LogExpectKind() {
  static const ExpectKind kKind = {
      .name = "log",
      .expect_keys = {"log"},
      .parse = Parse,
      .check = Check,
  };
  return kKind;
}

}  // namespace devmgr::scenario
