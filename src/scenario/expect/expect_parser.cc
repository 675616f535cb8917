#include "scenario/expect/expect_parser.h"

#include "common/status_util.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {

absl::Status ParseExpect(const ScenarioReader& reader, const YAML::Node& n, const Scenario& sc,
                         Expectations* e) {
  const ExpectReader r(reader, sc);
  e->loc = r.Loc(n);
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(n, "expect"));
  DEVMGR_RETURN_IF_ERROR(r.CheckKeys(n, ExpectKeys(), "expect"));
  if (n["within"]) {
    absl::Duration d;
    DEVMGR_RETURN_IF_ERROR(r.Duration(n["within"], "within", &d));
    e->within = d;
  }
  for (const ExpectKind* kind : ExpectKinds()) {
    if (kind->parse) DEVMGR_RETURN_IF_ERROR(kind->parse(r, n, e));
  }
  if (e->empty() && !n["within"]) return r.Error(n, "expect: has nothing to check");
  return absl::OkStatus();
}

}  // namespace devmgr::scenario
