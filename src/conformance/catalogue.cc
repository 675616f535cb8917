#include <map>
#include <string>

#include "conformance/check.h"
#include "conformance/checks.h"

namespace devmgr::conformance {

const char* LevelName(Level level) {
  switch (level) {
    case Level::kMust:
      return "MUST";
    case Level::kShould:
      return "SHOULD";
    case Level::kInfo:
      return "INFO";
  }
  return "?";
}

const char* StatusName(Status status) {
  switch (status) {
    case Status::kPass:
      return "PASS";
    case Status::kFail:
      return "FAIL";
    case Status::kSkip:
      return "SKIP";
  }
  return "?";
}

namespace {

// How the checks share the plugin. Every check but the restarts runs in one
// session. Inside it, a check that judges an answer against the call before
// it runs before any other check calls that RPC, so that it sees the
// plugin's first calls as after a fresh start: the two deterministic checks
// (two identical calls each), then allocate.concurrent's burst, then
// latency.rpcs's series, which is also the first to call
// GetDevicePluginOptions after the kubelet's handshake (law.reconnect calls
// it later). law.reconnect opens the only ListAndWatch streams of the
// tester's own. The list checks come last: they judge every list of the
// window after the first list, which the other checks spend.
void PlanSessions(std::vector<CheckInfo>& all) {
  const std::map<std::string, int> rank = {
      {"allocate.deterministic", 1}, {"preferred.deterministic", 1},
      {"allocate.concurrent", 2},    {"latency.rpcs", 3},
      {"law.reconnect", 5},          {"law.stream-open", 6},
      {"law.ids-unique", 6},         {"law.ids-nonempty", 6},
      {"law.ids-printable", 6},      {"law.health-values", 6},
      {"law.numa-ids", 6},           {"law.size", 6},
      {"law.no-resend", 6},
  };
  for (CheckInfo& c : all) {
    if (c.id.rfind("restart.", 0) == 0) {
      c.session = SessionUse::kOwn;
    } else if (auto it = rank.find(c.id); it != rank.end()) {
      c.shared_rank = it->second;
    } else if (c.id.rfind("allocate.", 0) == 0 || c.id.rfind("preferred.", 0) == 0 ||
               c.id.rfind("prestart.", 0) == 0 || c.id == "options.backed") {
      c.shared_rank = 4;  // the other RPC checks, after those above
    }
  }
}

}  // namespace

const std::vector<CheckInfo>& Catalogue() {
  static const std::vector<CheckInfo>* const all = [] {
    auto* v = new std::vector<CheckInfo>();
    for (auto group : {RegistrationChecks, StreamChecks, AllocateChecks, LifecycleChecks}) {
      for (auto& c : group()) v->push_back(std::move(c));
    }
    PlanSessions(*v);
    return v;
  }();
  return *all;
}

std::vector<CatalogueEntry> CatalogueEntries() {
  std::vector<CatalogueEntry> out;
  for (const CheckInfo& c : Catalogue()) {
    out.push_back({c.id, c.title, c.level, c.tags, nullptr});
    if (c.companion) {
      out.push_back({c.companion->id, c.companion->title, c.companion->level, c.tags, &c});
    }
  }
  return out;
}

std::string DisplayTitle(const CheckInfo& c) {
  std::string t = c.title;
  for (const auto& tag : c.tags) t += " " + tag;
  return t;
}

}  // namespace devmgr::conformance
