// The vocabulary every expectation kind reads its YAML with: the scenario
// reader plus string matchers, regular expressions, sets of device ids and
// `$NAME` references to the captures of earlier steps. Internal to the
// module; used by the expectation kinds (expect_kind.h).
#ifndef DEVMGR_SCENARIO_EXPECT_EXPECT_READER_H_
#define DEVMGR_SCENARIO_EXPECT_EXPECT_READER_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "scenario/format/scenario.h"
#include "scenario/format/scenario_reader.h"
#include "yaml-cpp/yaml.h"

namespace devmgr::scenario {

// Reads one `expect:` block of a step of `sc`. Thread-compatible; lives for
// one ParseExpect call. Every method returns InvalidArgument naming the
// position of the first problem and leaves *out partly written then.
class ExpectReader : public ScenarioReader {
 public:
  // `sc` (its plugins and the captures of the steps read so far) must
  // outlive this reader.
  ExpectReader(const ScenarioReader& reader, const Scenario& sc);

  const Scenario& scenario() const { return sc_; }

  // A string or {regex: RE}.
  absl::Status Matcher(const YAML::Node& n, const std::string& where, StringMatcher* out) const;
  absl::Status OptMatcher(const YAML::Node& n, const std::string& where,
                          std::optional<StringMatcher>* out) const;
  // A string that compiles as an ECMAScript regular expression.
  absl::Status Regex(const YAML::Node& n, const std::string& where, std::string* out) const;

  // A set of device ids: `absent`, a count, a list (the exact set), `$NAME`
  // (equal to a capture) or a mapping of count, ids, subset_of, superset_of,
  // disjoint_from (count may be $NAME: as many as the capture).
  absl::Status Set(const YAML::Node& n, const std::string& where, SetExpect* out) const;
  absl::Status OptSet(const YAML::Node& n, const std::string& where,
                      std::optional<SetExpect>* out) const;
  // `resource: set`, where the set's mapping may also give `numa` (the
  // NUMA nodes of the devices' topology).
  absl::Status Device(const YAML::Node& k, const YAML::Node& v, DeviceExpect* d) const;
  // The key of a per-driver expectation: the name of a DRA driver one of
  // the scenario's plugins is (with "did you mean" when it is none).
  absl::Status DraDriverKey(const YAML::Node& key, std::string* driver) const;

 private:
  absl::Status SetOf(const YAML::Node& n, const std::string& where, const Keys& keys,
                     SetExpect* out) const;
  // A list of ids, or `$NAME`.
  absl::Status Ref(const YAML::Node& n, const std::string& where, std::optional<SetRef>* out) const;
  // `$NAME`: a capture of an earlier step.
  absl::Status CaptureRef(const YAML::Node& n, const std::string& where, std::string* out) const;

  const Scenario& sc_;
  Keys captures_;  // the names `$NAME` may refer to
};

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_EXPECT_EXPECT_READER_H_
