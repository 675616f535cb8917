// `expect.dra_calls`: the NodePrepareResources and NodeUnprepareResources
// calls the node made to a DRA driver (every instance of it, across kubelet
// restarts), as the node recorded them: a sequence in order (with the claims
// of each call and whether it succeeded), exact or not, and counts per
// method, since the step or since the run began. Any driver, not only the
// reference one: the record is the kubelet's side of the calls.
#include <string>
#include <vector>

#include "common/status_util.h"
#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

using yaml::Contains;

const Keys kKeys = {"since", "exact", "sequence", "counts"};
const Keys kMethods = {"NodePrepareResources", "NodeUnprepareResources"};

absl::Status Method(const ExpectReader& r, const YAML::Node& n, std::string* out) {
  DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(n, "method", out));
  if (Contains(kMethods, *out)) return absl::OkStatus();
  return r.UnknownName(n, fmt::format("unknown DRA method '{}'", *out), *out, kMethods);
}

// A method name, or {method, claims, ok}.
absl::Status ParseCall(const ExpectReader& r, const YAML::Node& n, DraCallExpect* c) {
  c->loc = r.Loc(n);
  if (n.IsScalar()) return Method(r, n, &c->method);
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(n, "a DRA call (a method name or {method, claims, ok})"));
  DEVMGR_RETURN_IF_ERROR(r.CheckKeys(n, {"method", "claims", "ok"}, "a DRA call"));
  if (!n["method"]) return r.Error(n, "a DRA call needs method");
  DEVMGR_RETURN_IF_ERROR(Method(r, n["method"], &c->method));
  if (n["ok"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(n["ok"], "ok", &c->ok));
  if (n["claims"]) {
    DEVMGR_RETURN_IF_ERROR(r.ExpectSeq(n["claims"], "claims"));
    std::vector<StringMatcher> claims;
    for (const YAML::Node& m : n["claims"]) {
      StringMatcher sm;
      DEVMGR_RETURN_IF_ERROR(r.Matcher(m, "claims entries", &sm));
      claims.push_back(std::move(sm));
    }
    c->claims = std::move(claims);
  }
  return absl::OkStatus();
}

absl::Status ParseDriver(const ExpectReader& r, const YAML::Node& v, DraCallsExpect* c) {
  if (v.IsSequence()) {  // shorthand: the sequence
    for (const YAML::Node& e : v) {
      DraCallExpect ce;
      DEVMGR_RETURN_IF_ERROR(ParseCall(r, e, &ce));
      c->sequence.push_back(std::move(ce));
    }
    return absl::OkStatus();
  }
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(v, "dra_calls of a driver"));
  DEVMGR_RETURN_IF_ERROR(r.CheckKeys(v, kKeys, "dra_calls of a driver"));
  if (v["since"]) {
    std::string since;
    DEVMGR_RETURN_IF_ERROR(r.String(v["since"], "since", &since));
    if (since != "step" && since != "start") {
      return r.Error(v["since"], "since must be step or start");
    }
    c->since_start = since == "start";
  }
  if (v["exact"]) DEVMGR_RETURN_IF_ERROR(r.Bool(v["exact"], "exact", &c->exact));
  if (v["sequence"]) {
    DEVMGR_RETURN_IF_ERROR(r.ExpectSeq(v["sequence"], "sequence"));
    for (const YAML::Node& e : v["sequence"]) {
      DraCallExpect ce;
      DEVMGR_RETURN_IF_ERROR(ParseCall(r, e, &ce));
      c->sequence.push_back(std::move(ce));
    }
  }
  if (v["counts"]) {
    DEVMGR_RETURN_IF_ERROR(r.ExpectMap(v["counts"], "counts (method -> number)"));
    for (auto it = v["counts"].begin(); it != v["counts"].end(); ++it) {
      std::string m;
      DEVMGR_RETURN_IF_ERROR(Method(r, it->first, &m));
      DEVMGR_RETURN_IF_ERROR(r.Int(it->second, "count", 0, &c->counts[m]));
    }
  }
  if (c->exact && c->sequence.empty()) return r.Error(v["exact"], "exact needs a sequence");
  return absl::OkStatus();
}

absl::Status Parse(const ExpectReader& r, const YAML::Node& expect, Expectations* e) {
  if (!expect["dra_calls"]) return absl::OkStatus();
  const YAML::Node n = expect["dra_calls"];
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(n, "expect.dra_calls (driver -> calls)"));
  for (auto it = n.begin(); it != n.end(); ++it) {
    DraCallsExpect c;
    c.loc = r.Loc(it->first);
    DEVMGR_RETURN_IF_ERROR(r.DraDriverKey(it->first, &c.driver));
    DEVMGR_RETURN_IF_ERROR(ParseDriver(r, it->second, &c));
    e->dra_calls.push_back(std::move(c));
  }
  return absl::OkStatus();
}

bool CallMatches(const DraCallExpect& want, const dra::DriverCallRecord& got) {
  if (want.method != got.method) return false;
  if (want.ok && *want.ok != got.error.empty()) return false;
  if (!want.claims) return true;
  if (want.claims->size() != got.claims.size()) return false;
  return MatchUnordered(
             *want.claims, got.claims,
             [](const StringMatcher& m, const dra::ClaimRef& c) { return m.Matches(c.name); })
      .has_value();
}

std::string CallString(const dra::DriverCallRecord& c) {
  std::vector<std::string> names;
  for (const dra::ClaimRef& r : c.claims) names.push_back(r.name);
  return fmt::format("{}{}{}", c.method, ListString(names),
                     c.error.empty() ? "" : " (error: " + c.error + ")");
}

std::string CallsString(const std::vector<const dra::DriverCallRecord*>& calls) {
  std::string s;
  for (const dra::DriverCallRecord* c : calls) s += (s.empty() ? "" : ", ") + CallString(*c);
  return "[" + s + "]";
}

void CheckDriver(const DraCallsExpect& c, const Observed& o, std::vector<Failure>* out) {
  const std::vector<dra::DriverCallRecord>& all =
      c.since_start ? o.dra_calls_since_start : o.dra_calls_since_step;
  std::vector<const dra::DriverCallRecord*> calls;
  for (const dra::DriverCallRecord& r : all) {
    if (r.driver == c.driver) calls.push_back(&r);
  }
  const std::string w = fmt::format("dra_calls['{}']", c.driver);
  for (const auto& [method, n] : c.counts) {
    int64_t got = 0;
    for (const dra::DriverCallRecord* r : calls) got += r->method == method;
    if (got != n) {
      Fail(out, c.loc, fmt::format("{}.counts[{}]", w, method), IntString(n),
           fmt::format("{} {}", got, CallsString(calls)));
    }
  }
  if (c.sequence.empty()) return;
  size_t next = 0;
  for (const dra::DriverCallRecord* r : calls) {
    if (next < c.sequence.size() && CallMatches(c.sequence[next], *r)) ++next;
  }
  if (next < c.sequence.size()) {
    const DraCallExpect& missing = c.sequence[next];
    Fail(out, missing.loc, fmt::format("{}.sequence[{}]", w, next),
         fmt::format("a {} call in this order", missing.method), CallsString(calls));
    return;
  }
  if (c.exact && calls.size() != c.sequence.size()) {
    Fail(out, c.loc, w + ".exact", fmt::format("exactly {} call(s)", c.sequence.size()),
         CallsString(calls));
  }
}

void Check(const Expectations& e, const Observed& o, std::vector<Failure>* out) {
  for (const DraCallsExpect& c : e.dra_calls) CheckDriver(c, o, out);
}

}  // namespace

const ExpectKind& DraCallsExpectKind() {
  static const ExpectKind kKind = {
      .name = "dra_calls",
      .expect_keys = {"dra_calls"},
      .parse = Parse,
      .check = Check,
  };
  return kKind;
}

}  // namespace devmgr::scenario
