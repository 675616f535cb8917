#include "scenario/expect/expect_reader.h"

#include <regex>
#include <vector>

#include "common/status_util.h"
#include "fmt/format.h"

namespace devmgr::scenario {
namespace {

using yaml::Contains;

const Keys kSetKeys = {"count", "ids", "subset_of", "superset_of", "disjoint_from"};
const Keys kDeviceKeys = {"count", "ids", "subset_of", "superset_of", "disjoint_from", "numa"};

}  // namespace

ExpectReader::ExpectReader(const ScenarioReader& reader, const Scenario& sc)
    : ScenarioReader(reader), sc_(sc) {
  for (const Step& st : sc.steps) {
    for (const CaptureSpec& c : st.captures) captures_.push_back(c.name);
  }
}

absl::Status ExpectReader::Matcher(const YAML::Node& n, const std::string& where,
                                   StringMatcher* out) const {
  if (n.IsScalar()) {
    out->value = n.Scalar();
    out->regex = false;
    return absl::OkStatus();
  }
  if (n.IsMap()) {
    DEVMGR_RETURN_IF_ERROR(CheckKeys(n, {"regex"}, where));
    if (!n["regex"]) return Error(n, fmt::format("{} needs regex:", where));
    DEVMGR_RETURN_IF_ERROR(Regex(n["regex"], where + ".regex", &out->value));
    out->regex = true;
    return absl::OkStatus();
  }
  return Error(n, fmt::format("{} must be a string or {{regex: RE}}", where));
}

absl::Status ExpectReader::OptMatcher(const YAML::Node& n, const std::string& where,
                                      std::optional<StringMatcher>* out) const {
  StringMatcher m;
  DEVMGR_RETURN_IF_ERROR(Matcher(n, where, &m));
  *out = m;
  return absl::OkStatus();
}

absl::Status ExpectReader::Regex(const YAML::Node& n, const std::string& where,
                                 std::string* out) const {
  DEVMGR_RETURN_IF_ERROR(String(n, where, out));
  try {
    std::regex re(*out, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Error(n, fmt::format("{}: invalid regular expression: {}", where, e.what()));
  }
  return absl::OkStatus();
}

absl::Status ExpectReader::CaptureRef(const YAML::Node& n, const std::string& where,
                                      std::string* out) const {
  std::string s;
  DEVMGR_RETURN_IF_ERROR(String(n, where + " (a list of ids or $NAME)", &s));
  if (s.size() < 2 || s[0] != '$') {
    return Error(n, fmt::format("{}: expected $NAME (a capture of an earlier step)", where));
  }
  *out = s.substr(1);
  if (Contains(captures_, *out)) return absl::OkStatus();
  if (captures_.empty()) {
    return Error(n, fmt::format("{}: no earlier step captures '{}' (no step before this one "
                                "has capture:)",
                                where, *out));
  }
  return UnknownName(n, fmt::format("{}: no earlier step captures '{}'", where, *out), *out,
                     captures_);
}

absl::Status ExpectReader::Ref(const YAML::Node& n, const std::string& where,
                               std::optional<SetRef>* out) const {
  SetRef r;
  if (n.IsSequence()) {
    DEVMGR_RETURN_IF_ERROR(StringList(n, where, &r.ids));
  } else if (n.IsScalar()) {
    DEVMGR_RETURN_IF_ERROR(CaptureRef(n, where, &r.capture));
  } else {
    return Error(n, fmt::format("{} must be a list of ids or $NAME", where));
  }
  *out = std::move(r);
  return absl::OkStatus();
}

absl::Status ExpectReader::SetOf(const YAML::Node& n, const std::string& where, const Keys& keys,
                                 SetExpect* out) const {
  if (n.IsScalar() && n.Scalar() == "absent") {
    out->absent = true;
    return absl::OkStatus();
  }
  if (n.IsScalar() && !n.Scalar().empty() && n.Scalar()[0] == '$') {
    return Ref(n, where, &out->ids);
  }
  if (n.IsScalar()) return OptInt(n, where + " (a count)", 0, &out->count);
  if (n.IsSequence()) return Ref(n, where, &out->ids);
  if (!n.IsMap()) {
    return Error(
        n, fmt::format("{} must be a count, a list of ids, $NAME, absent or a mapping", where));
  }
  DEVMGR_RETURN_IF_ERROR(CheckKeys(n, keys, where));
  if (n["count"]) {
    const YAML::Node c = n["count"];
    if (c.IsScalar() && !c.Scalar().empty() && c.Scalar()[0] == '$') {
      std::string name;
      DEVMGR_RETURN_IF_ERROR(CaptureRef(c, where + ".count", &name));
      out->count_of = name;
    } else {
      DEVMGR_RETURN_IF_ERROR(OptInt(c, "count", 0, &out->count));
    }
  }
  if (n["ids"]) DEVMGR_RETURN_IF_ERROR(Ref(n["ids"], where + ".ids", &out->ids));
  if (n["subset_of"])
    DEVMGR_RETURN_IF_ERROR(Ref(n["subset_of"], where + ".subset_of", &out->subset_of));
  if (n["superset_of"]) {
    DEVMGR_RETURN_IF_ERROR(Ref(n["superset_of"], where + ".superset_of", &out->superset_of));
  }
  if (n["disjoint_from"]) {
    DEVMGR_RETURN_IF_ERROR(Ref(n["disjoint_from"], where + ".disjoint_from", &out->disjoint_from));
  }
  return absl::OkStatus();
}

absl::Status ExpectReader::Set(const YAML::Node& n, const std::string& where,
                               SetExpect* out) const {
  return SetOf(n, where, kSetKeys, out);
}

absl::Status ExpectReader::OptSet(const YAML::Node& n, const std::string& where,
                                  std::optional<SetExpect>* out) const {
  SetExpect e;
  DEVMGR_RETURN_IF_ERROR(SetOf(n, where, kSetKeys, &e));
  *out = std::move(e);
  return absl::OkStatus();
}

absl::Status ExpectReader::DraDriverKey(const YAML::Node& key, std::string* driver) const {
  DEVMGR_RETURN_IF_ERROR(NonEmptyString(key, "driver name", driver));
  Keys drivers;
  for (const PluginSpec& p : sc_.plugins) {
    if (!p.dra_driver.empty()) drivers.push_back(p.dra_driver);
  }
  if (Contains(drivers, *driver)) return absl::OkStatus();
  return UnknownName(key, fmt::format("no plugin of the scenario is DRA driver '{}'", *driver),
                     *driver, drivers);
}

absl::Status ExpectReader::Device(const YAML::Node& k, const YAML::Node& v, DeviceExpect* d) const {
  DEVMGR_RETURN_IF_ERROR(NonEmptyString(k, "resource name", &d->resource));
  d->loc = Loc(k);
  const std::string where = fmt::format("devices['{}']", d->resource);
  DEVMGR_RETURN_IF_ERROR(SetOf(v, where, kDeviceKeys, &d->set));
  if (v.IsMap() && v["numa"]) {
    std::vector<int64_t> ids;
    DEVMGR_RETURN_IF_ERROR(IntList(v["numa"], "numa", &ids));
    d->numa = ids;
  }
  return absl::OkStatus();
}

}  // namespace devmgr::scenario
