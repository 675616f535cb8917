#include "scenario/report/api_faults.h"

#include "absl/time/time.h"
#include "fmt/format.h"

namespace devmgr::scenario {
namespace {

std::string PathOf(const std::string& target) { return target.substr(0, target.find('?')); }

ApiCall CallOf(const apiserver::RequestRecord& r) {
  return ApiCall{r.method, r.target, r.user_agent, r.status, r.time};
}

bool SameCall(const ApiCall& a, const ApiCall& b) {
  return a.method == b.method && PathOf(a.target) == PathOf(b.target);
}

std::string Millis(absl::Duration d) { return fmt::format("{}", absl::ToInt64Milliseconds(d)); }

std::string TimeOf(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

}  // namespace

std::vector<ApiFaultFiring> FindApiFaultFirings(
    const std::vector<apiserver::RequestRecord>& requests,
    const std::function<int(uint64_t)>& step_of) {
  std::vector<ApiFaultFiring> out;
  for (size_t i = 0; i < requests.size(); ++i) {
    const apiserver::RequestRecord& r = requests[i];
    if (r.fault.empty()) continue;
    ApiFaultFiring f;
    f.fault = r.fault;
    f.step = step_of(r.seq);
    f.call = CallOf(r);
    for (size_t j = i + 1; j < requests.size(); ++j) {
      if (requests[j].user_agent != r.user_agent) continue;
      ++f.later;
      if (f.repeated || f.after.size() >= kApiFaultFollowers) continue;
      f.after.push_back(CallOf(requests[j]));
      f.repeated = SameCall(f.after.back(), f.call);
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<std::string> ApiFaultLines(const ApiFaultFiring& f) {
  std::vector<std::string> lines;
  lines.push_back(
      fmt::format("API fault '{}' fired in step {} at {}: {} {} answered {} (client {})", f.fault,
                  f.step, TimeOf(f.call.time), f.call.method, f.call.target, f.call.status,
                  f.call.user_agent.empty() ? "without User-Agent" : f.call.user_agent));
  if (f.later == 0) {
    lines.push_back("  then: no further request from this client");
    return lines;
  }
  for (const ApiCall& c : f.after) {
    lines.push_back(fmt::format("  then +{} ms: {} {} {}{}", Millis(c.time - f.call.time), c.method,
                                c.target, c.status,
                                SameCall(c, f.call) ? " (the same call again)" : ""));
  }
  if (!f.repeated) {
    lines.push_back(fmt::format("  no later {} {} from this client among its {} next request(s)",
                                f.call.method, PathOf(f.call.target), f.after.size()));
  }
  if (f.later > f.after.size()) {
    lines.push_back(fmt::format("  ({} more request(s) from this client after these)",
                                f.later - f.after.size()));
  }
  return lines;
}

nlohmann::ordered_json ApiFaultJson(const ApiFaultFiring& f) {
  nlohmann::ordered_json after = nlohmann::ordered_json::array();
  for (const ApiCall& c : f.after) {
    after.push_back({{"method", c.method},
                     {"target", c.target},
                     {"status", c.status},
                     {"afterMs", absl::ToInt64Milliseconds(c.time - f.call.time)}});
  }
  return {{"fault", f.fault},
          {"step", f.step},
          {"method", f.call.method},
          {"target", f.call.target},
          {"status", f.call.status},
          {"userAgent", f.call.user_agent},
          {"time", TimeOf(f.call.time)},
          {"after", std::move(after)},
          {"repeated", f.repeated},
          {"laterRequests", f.later}};
}

}  // namespace devmgr::scenario
