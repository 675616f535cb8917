// `expect.api_requests`: the requests the DRA drivers made to the embedded
// API endpoint, as the endpoint recorded them (method, path, User-Agent,
// status answered, whether an injected fault fired on it): a sequence in
// order (other requests between) and counts of matching requests, since the
// step or since the endpoint started. With `api_fault` (docs/scenarios.md)
// it shows how a driver reacted to an injected error: the failed call, then
// its retry. The endpoint records every client; `user_agent` tells drivers
// apart when they send different User-Agent headers.
#include <string>
#include <vector>

#include "common/status_util.h"
#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

using yaml::Contains;

const Keys kKeys = {"since", "sequence", "counts"};
const Keys kRequestKeys = {"method", "path", "user_agent", "code", "fault", "watch"};
const Keys kMethods = {"GET", "POST", "PUT", "DELETE", "PATCH"};

// {method, path, user_agent, code, fault, watch} (+ count in counts).
absl::Status ParseRequest(const ExpectReader& r, const YAML::Node& n, bool counted,
                          ApiRequestExpect* q) {
  q->loc = r.Loc(n);
  const char* what = counted ? "an api_requests count ({method, path, ..., count})"
                             : "an API request ({method, path, user_agent, code, fault, watch})";
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(n, what));
  Keys keys = kRequestKeys;
  if (counted) keys.push_back("count");
  DEVMGR_RETURN_IF_ERROR(r.CheckKeys(n, keys, "an API request"));
  if (n["method"]) {
    std::string m;
    DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(n["method"], "method", &m));
    if (!Contains(kMethods, m)) {
      return r.UnknownName(n["method"], fmt::format("unknown HTTP method '{}'", m), m, kMethods);
    }
    q->method = m;
  }
  if (n["path"]) DEVMGR_RETURN_IF_ERROR(r.OptMatcher(n["path"], "path", &q->path));
  if (n["user_agent"]) {
    DEVMGR_RETURN_IF_ERROR(r.OptMatcher(n["user_agent"], "user_agent", &q->user_agent));
  }
  if (n["code"]) {
    int64_t code = 0;
    DEVMGR_RETURN_IF_ERROR(r.Int(n["code"], "code", 100, &code));
    if (code > 599) return r.Error(n["code"], "code must be an HTTP status (100-599)");
    q->code = code;
  }
  if (n["fault"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(n["fault"], "fault", &q->fault));
  if (n["watch"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(n["watch"], "watch", &q->watch));
  if (!counted) return absl::OkStatus();
  if (!n["count"]) return r.Error(n, "an api_requests count needs count");
  return r.Int(n["count"], "count", 0, &q->count);
}

absl::Status ParseSeq(const ExpectReader& r, const YAML::Node& n, bool counted,
                      std::vector<ApiRequestExpect>* out) {
  DEVMGR_RETURN_IF_ERROR(r.ExpectSeq(n, counted ? "counts" : "sequence"));
  for (const YAML::Node& e : n) {
    ApiRequestExpect q;
    DEVMGR_RETURN_IF_ERROR(ParseRequest(r, e, counted, &q));
    out->push_back(std::move(q));
  }
  return absl::OkStatus();
}

absl::Status Parse(const ExpectReader& r, const YAML::Node& expect, Expectations* e) {
  if (!expect["api_requests"]) return absl::OkStatus();
  const YAML::Node n = expect["api_requests"];
  ApiRequestsExpect a;
  a.loc = r.Loc(n);
  if (n.IsSequence()) {  // shorthand: the sequence
    DEVMGR_RETURN_IF_ERROR(ParseSeq(r, n, false, &a.sequence));
    e->api_requests = std::move(a);
    return absl::OkStatus();
  }
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(n, "expect.api_requests ({since, sequence, counts})"));
  DEVMGR_RETURN_IF_ERROR(r.CheckKeys(n, kKeys, "expect.api_requests"));
  if (n["since"]) {
    std::string since;
    DEVMGR_RETURN_IF_ERROR(r.String(n["since"], "since", &since));
    if (since != "step" && since != "start") {
      return r.Error(n["since"], "since must be step or start");
    }
    a.since_start = since == "start";
  }
  if (n["sequence"]) DEVMGR_RETURN_IF_ERROR(ParseSeq(r, n["sequence"], false, &a.sequence));
  if (n["counts"]) DEVMGR_RETURN_IF_ERROR(ParseSeq(r, n["counts"], true, &a.counts));
  if (a.sequence.empty() && a.counts.empty()) {
    return r.Error(n, "expect.api_requests needs sequence or counts");
  }
  e->api_requests = std::move(a);
  return absl::OkStatus();
}

std::string PathOf(const std::string& target) { return target.substr(0, target.find('?')); }

bool IsWatch(const std::string& target) {
  const size_t q = target.find('?');
  if (q == std::string::npos) return false;
  const std::string query = "&" + target.substr(q + 1) + "&";
  return query.find("&watch=true&") != std::string::npos ||
         query.find("&watch=1&") != std::string::npos;
}

bool Matches(const ApiRequestExpect& want, const apiserver::RequestRecord& got) {
  if (want.method && *want.method != got.method) return false;
  if (want.path && !want.path->Matches(PathOf(got.target))) return false;
  if (want.user_agent && !want.user_agent->Matches(got.user_agent)) return false;
  if (want.code && *want.code != got.status) return false;
  if (want.fault && *want.fault == got.fault.empty()) return false;
  if (want.watch && *want.watch != IsWatch(got.target)) return false;
  return true;
}

// "GET /path?query 500 (fault)" per request, the last `kShown` of them.
std::string RequestsString(const std::vector<apiserver::RequestRecord>& reqs) {
  constexpr size_t kShown = 12;
  std::string s;
  const size_t from = reqs.size() > kShown ? reqs.size() - kShown : 0;
  if (from > 0) s = fmt::format("... {} earlier, ", from);
  for (size_t i = from; i < reqs.size(); ++i) {
    const apiserver::RequestRecord& q = reqs[i];
    s += fmt::format("{}{} {} {}{}", i > from ? ", " : "", q.method, q.target, q.status,
                     q.fault.empty() ? "" : " (injected)");
  }
  return "[" + s + "]";
}

// "a request {method GET, path regex /x/, code 500}".
std::string Describe(const ApiRequestExpect& q) {
  std::vector<std::string> parts;
  if (q.method) parts.push_back("method " + *q.method);
  if (q.path) parts.push_back("path " + q.path->Describe());
  if (q.user_agent) parts.push_back("user_agent " + q.user_agent->Describe());
  if (q.code) parts.push_back(fmt::format("code {}", *q.code));
  if (q.fault) parts.push_back(*q.fault ? "a fault fired" : "no fault fired");
  if (q.watch) parts.push_back(*q.watch ? "a watch" : "not a watch");
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return "{" + s + "}";
}

void Check(const Expectations& e, const Observed& o, std::vector<Failure>* out) {
  if (!e.api_requests) return;
  const ApiRequestsExpect& a = *e.api_requests;
  const std::vector<apiserver::RequestRecord>& reqs =
      a.since_start ? o.api_requests_since_start : o.api_requests_since_step;
  for (size_t i = 0; i < a.counts.size(); ++i) {
    const ApiRequestExpect& c = a.counts[i];
    int64_t got = 0;
    for (const apiserver::RequestRecord& q : reqs) got += Matches(c, q);
    if (got != c.count) {
      Fail(out, c.loc, fmt::format("api_requests.counts[{}]", i),
           fmt::format("{} request(s) {}", c.count, Describe(c)),
           fmt::format("{} {}", got, RequestsString(reqs)));
    }
  }
  size_t next = 0;
  for (const apiserver::RequestRecord& q : reqs) {
    if (next < a.sequence.size() && Matches(a.sequence[next], q)) ++next;
  }
  if (next < a.sequence.size()) {
    const ApiRequestExpect& missing = a.sequence[next];
    Fail(out, missing.loc, fmt::format("api_requests.sequence[{}]", next),
         fmt::format("a request {} in this order", Describe(missing)), RequestsString(reqs));
  }
}

}  // namespace

const ExpectKind& ApiRequestsExpectKind() {
  static const ExpectKind kKind = {
      .name = "api_requests",
      .expect_keys = {"api_requests"},
      .parse = Parse,
      .check = Check,
  };
  return kKind;
}

}  // namespace devmgr::scenario
