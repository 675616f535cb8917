// `expect.calls`: the RPCs a plugin saw (or made), from its call log: a
// sequence in order (with argument subsets and results), exact or not, and
// counts per method, since the step or since the plugin first started.
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "common/status_util.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

using yaml::Contains;

const Keys kCallsKeys = {"since", "exact", "methods", "sequence", "counts"};
const Keys kMethods = {"GetDevicePluginOptions",
                       "ListAndWatch",
                       "GetPreferredAllocation",
                       "Allocate",
                       "PreStartContainer",
                       "Register",
                       "GetInfo",
                       "NotifyRegistrationStatus"};

// YAML -> JSON for call arguments: plain scalars become numbers, booleans
// or null when they read as such; quoted scalars stay strings.
absl::Status ToJson(const ExpectReader& r, const YAML::Node& n, nlohmann::json* out) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      *out = nullptr;
      return absl::OkStatus();
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") {
        *out = s;
        return absl::OkStatus();
      }
      int64_t i = 0;
      if (r.Int(n, "", INT64_MIN, &i).ok()) {
        *out = i;
      } else if (s == "true" || s == "false") {
        *out = s == "true";
      } else if (s == "null" || s == "~") {
        *out = nullptr;
      } else {
        *out = s;
      }
      return absl::OkStatus();
    }
    case YAML::NodeType::Sequence: {
      *out = nlohmann::json::array();
      for (const YAML::Node& e : n) {
        nlohmann::json j;
        DEVMGR_RETURN_IF_ERROR(ToJson(r, e, &j));
        out->push_back(std::move(j));
      }
      return absl::OkStatus();
    }
    case YAML::NodeType::Map: {
      *out = nlohmann::json::object();
      for (auto it = n.begin(); it != n.end(); ++it) {
        std::string k;
        DEVMGR_RETURN_IF_ERROR(r.String(it->first, "argument keys", &k));
        if (k == "regex" && n.size() == 1) {
          std::string re;
          DEVMGR_RETURN_IF_ERROR(r.Regex(it->second, "regex", &re));
        }
        nlohmann::json j;
        DEVMGR_RETURN_IF_ERROR(ToJson(r, it->second, &j));
        (*out)[k] = std::move(j);
      }
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

absl::Status Method(const ExpectReader& r, const YAML::Node& n, std::string* out) {
  DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(n, "method", out));
  if (Contains(kMethods, *out)) return absl::OkStatus();
  return r.UnknownName(n, fmt::format("unknown method '{}'", *out), *out, kMethods);
}

// {method, args, ok, error, code}.
absl::Status ParseCall(const ExpectReader& r, const YAML::Node& e, CallExpect* ce) {
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(e, "a call (a method name or {method, args})"));
  DEVMGR_RETURN_IF_ERROR(r.CheckKeys(e, {"method", "args", "ok", "error", "code"}, "a call"));
  if (!e["method"]) return r.Error(e, "a call needs method");
  DEVMGR_RETURN_IF_ERROR(Method(r, e["method"], &ce->method));
  if (e["ok"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(e["ok"], "ok", &ce->ok));
  if (e["error"]) DEVMGR_RETURN_IF_ERROR(r.OptMatcher(e["error"], "error", &ce->error));
  if (e["code"]) {
    std::string code;
    DEVMGR_RETURN_IF_ERROR(
        r.NonEmptyString(e["code"], "code (a gRPC code name, e.g. UNKNOWN)", &code));
    ce->code = code;
  }
  if ((ce->ok || ce->error || ce->code) && ce->method != "Register") {
    return r.Error(e, "ok, error and code apply to calls the plugin made (Register)");
  }
  if (ce->ok && *ce->ok && (ce->error || ce->code)) {
    return r.Error(e["ok"], "ok: true contradicts error/code");
  }
  if (e["args"]) {
    nlohmann::json j;
    DEVMGR_RETURN_IF_ERROR(ToJson(r, e["args"], &j));
    ce->args = std::move(j);
  }
  return absl::OkStatus();
}

absl::Status ParseSequence(const ExpectReader& r, const YAML::Node& v, CallsExpect* c) {
  DEVMGR_RETURN_IF_ERROR(r.ExpectSeq(v, "sequence"));
  for (const YAML::Node& e : v) {
    CallExpect ce;
    ce.loc = r.Loc(e);
    if (e.IsScalar()) {
      DEVMGR_RETURN_IF_ERROR(Method(r, e, &ce.method));
    } else {
      DEVMGR_RETURN_IF_ERROR(ParseCall(r, e, &ce));
    }
    c->sequence.push_back(std::move(ce));
  }
  return absl::OkStatus();
}

// since, exact, methods, sequence, counts.
absl::Status ParseCallsMap(const ExpectReader& r, const YAML::Node& v, const std::string& where,
                           CallsExpect* c) {
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(v, where + " (a list of calls or a mapping)"));
  DEVMGR_RETURN_IF_ERROR(r.CheckKeys(v, kCallsKeys, where));
  if (v["since"]) {
    std::string s;
    DEVMGR_RETURN_IF_ERROR(r.String(v["since"], "since", &s));
    if (s != "step" && s != "start") return r.Error(v["since"], "since must be step or start");
    c->since_start = s == "start";
  }
  if (v["exact"]) DEVMGR_RETURN_IF_ERROR(r.Bool(v["exact"], "exact", &c->exact));
  if (v["methods"]) {
    DEVMGR_RETURN_IF_ERROR(r.ExpectSeq(v["methods"], "methods"));
    for (const YAML::Node& m : v["methods"]) {
      std::string s;
      DEVMGR_RETURN_IF_ERROR(Method(r, m, &s));
      c->methods.push_back(s);
    }
  }
  if (v["sequence"]) DEVMGR_RETURN_IF_ERROR(ParseSequence(r, v["sequence"], c));
  if (v["counts"]) {
    DEVMGR_RETURN_IF_ERROR(r.ExpectMap(v["counts"], "counts"));
    for (auto it = v["counts"].begin(); it != v["counts"].end(); ++it) {
      std::string m;
      DEVMGR_RETURN_IF_ERROR(Method(r, it->first, &m));
      DEVMGR_RETURN_IF_ERROR(r.Int(it->second, "count", 0, &c->counts[m]));
    }
  }
  if (c->sequence.empty() && c->counts.empty()) {
    return r.Error(v, fmt::format("{} needs sequence or counts", where));
  }
  return absl::OkStatus();
}

absl::Status ParseCalls(const ExpectReader& r, const YAML::Node& k, const YAML::Node& v,
                        CallsExpect* c) {
  c->loc = r.Loc(k);
  DEVMGR_RETURN_IF_ERROR(r.PluginRef(r.scenario(), k, &c->plugin));
  const PluginSpec* p = ScenarioReader::FindPlugin(r.scenario(), c->plugin);
  if (p->sample_plugin_config.empty() && p->call_log.empty()) {
    return r.Error(k, fmt::format("plugin '{}' has no call log (only sample_plugin plugins, or "
                                  "plugins with call_log:, record calls)",
                                  c->plugin));
  }
  const std::string where = fmt::format("calls of '{}'", c->plugin);
  if (v.IsSequence()) return ParseSequence(r, v, c);
  return ParseCallsMap(r, v, where, c);
}

absl::Status Parse(const ExpectReader& r, const YAML::Node& n, Expectations* e) {
  if (!n["calls"]) return absl::OkStatus();
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(n["calls"], "expect.calls (plugin name -> calls)"));
  for (auto it = n["calls"].begin(); it != n["calls"].end(); ++it) {
    CallsExpect c;
    DEVMGR_RETURN_IF_ERROR(ParseCalls(r, it->first, it->second, &c));
    e->calls.push_back(std::move(c));
  }
  return absl::OkStatus();
}

bool ResultMatches(const CallExpect& want, const nlohmann::json& got) {
  const std::string error = got.value("error", "");
  const std::string code = got.value("code", "");
  const bool failed = !error.empty() || !code.empty();
  if (want.ok && *want.ok == failed) return false;
  if (want.error && !want.error->Matches(error)) return false;
  if (want.code && *want.code != code) return false;
  return true;
}

std::string DescribeResult(const CallExpect& want) {
  std::string s;
  if (want.ok) s += *want.ok ? " -> ok" : " -> an error";
  if (want.code) s += " -> code " + *want.code;
  if (want.error) s += " -> error " + want.error->Describe();
  return s;
}

// Up to 8 of the considered calls from `from` on, one a line.
std::string ShowCalls(const std::vector<const nlohmann::json*>& considered, size_t from) {
  std::string s;
  for (size_t i = from; i < considered.size() && i < from + 8; ++i) {
    const nlohmann::json& j = *considered[i];
    s += fmt::format("\n      {} {}", j.value("method", ""),
                     j.value("args", nlohmann::json::object()).dump());
    if (j.contains("error") || j.contains("code")) {
      s += fmt::format(" -> error {} \"{}\"", j.value("code", ""), j.value("error", ""));
    }
  }
  if (considered.size() > from + 8)
    s += fmt::format("\n      ... {} more", considered.size() - from - 8);
  return s.empty() ? std::string(" (none)") : s;
}

// The sequence, in order among the calls of its methods (with `exact`, with
// nothing between and nothing after).
// False when a call of the sequence is missing (the other checks of the
// plugin's calls are then skipped).
bool CheckSequence(const CallsExpect& c, const std::string& w,
                   const std::vector<const nlohmann::json*>& considered,
                   std::vector<Failure>* out) {
  size_t next = 0;
  for (size_t i = 0; i < c.sequence.size(); ++i) {
    const CallExpect& want = c.sequence[i];
    bool found = false;
    size_t j = next;
    for (; j < considered.size(); ++j) {
      const nlohmann::json& got = *considered[j];
      const bool ok =
          got.value("method", "") == want.method &&
          (!want.args || JsonMatches(*want.args, got.value("args", nlohmann::json::object()))) &&
          ResultMatches(want, got);
      if (ok) {
        found = true;
        break;
      }
      if (c.exact) break;
    }
    if (!found) {
      Fail(out, want.loc, fmt::format("{}.sequence[{}]", w, i),
           want.method + (want.args ? " " + want.args->dump() : "") + DescribeResult(want),
           fmt::format("calls{}:{}", next ? fmt::format(" after #{}", next) : "",
                       ShowCalls(considered, next)));
      return false;
    }
    next = j + 1;
  }
  if (c.exact && !c.sequence.empty() && next != considered.size()) {
    Fail(out, c.loc, w, fmt::format("exactly {} call(s)", c.sequence.size()),
         fmt::format("{} more after the sequence:{}", considered.size() - next,
                     ShowCalls(considered, next)));
  }
  return true;
}

void CheckCalls(const CallsExpect& c, const Observed& o, std::vector<Failure>* out) {
  const auto& src = c.since_start ? o.calls_since_start : o.calls_since_step;
  static const std::vector<nlohmann::json> kNone;
  auto it = src.find(c.plugin);
  const std::vector<nlohmann::json>& calls = it == src.end() ? kNone : it->second;
  const std::string w = fmt::format("calls['{}']", c.plugin);
  std::set<std::string> methods(c.methods.begin(), c.methods.end());
  if (methods.empty()) {
    for (const auto& ce : c.sequence) methods.insert(ce.method);
  }
  std::vector<const nlohmann::json*> considered;
  for (const auto& j : calls) {
    if (methods.count(j.value("method", ""))) considered.push_back(&j);
  }
  if (!CheckSequence(c, w, considered, out)) return;
  for (const auto& [m, n] : c.counts) {
    int64_t got = 0;
    for (const auto& j : calls) got += j.value("method", "") == m;
    if (got != n)
      Fail(out, c.loc, fmt::format("{}.counts['{}']", w, m), IntString(n), IntString(got));
  }
}

void Check(const Expectations& e, const Observed& o, std::vector<Failure>* out) {
  for (const CallsExpect& c : e.calls) CheckCalls(c, o, out);
}

}  // namespace

bool JsonMatches(const nlohmann::json& expected, const nlohmann::json& actual) {
  if (expected.is_object()) {
    if (expected.size() == 1 && expected.contains("regex") && expected["regex"].is_string()) {
      if (!actual.is_string()) return false;
      try {
        return std::regex_search(actual.get<std::string>(),
                                 std::regex(expected["regex"].get<std::string>()));
      } catch (const std::regex_error&) {
        return false;
      }
    }
    if (expected.size() == 1 && expected.contains("any_order") &&
        expected["any_order"].is_array()) {
      // The same elements in any order (each expected one matched once).
      const nlohmann::json& want = expected["any_order"];
      if (!actual.is_array() || actual.size() != want.size()) return false;
      std::vector<bool> used(actual.size(), false);
      for (const auto& w : want) {
        bool found = false;
        for (size_t i = 0; i < actual.size() && !found; ++i) {
          if (!used[i] && JsonMatches(w, actual[i])) used[i] = found = true;
        }
        if (!found) return false;
      }
      return true;
    }
    if (!actual.is_object()) return false;
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      // A missing key reads as the proto default (Go omits empty fields).
      const nlohmann::json got = actual.contains(it.key()) ? actual[it.key()] : nlohmann::json();
      if (!actual.contains(it.key())) {
        const nlohmann::json& e = it.value();
        const bool default_ok = e.is_null() || (e.is_array() && e.empty()) ||
                                (e.is_number() && e == 0) || (e.is_string() && e == "") ||
                                (e.is_boolean() && !e.get<bool>());
        if (default_ok) continue;
        return false;
      }
      if (!JsonMatches(it.value(), got)) return false;
    }
    return true;
  }
  if (expected.is_array()) {
    if (!actual.is_array() || actual.size() != expected.size()) return false;
    for (size_t i = 0; i < expected.size(); ++i) {
      if (!JsonMatches(expected[i], actual[i])) return false;
    }
    return true;
  }
  if (expected.is_string() && actual.is_number())
    return expected.get<std::string>() == actual.dump();
  if (expected.is_number() && actual.is_string())
    return expected.dump() == actual.get<std::string>();
  if (expected.is_number() && actual.is_number()) return expected.dump() == actual.dump();
  return expected == actual;
}

const ExpectKind& CallsExpectKind() {
  static const ExpectKind kKind = {
      .name = "calls",
      .expect_keys = {"calls"},
      .parse = Parse,
      .check = Check,
  };
  return kKind;
}

}  // namespace devmgr::scenario
