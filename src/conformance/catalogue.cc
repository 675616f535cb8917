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

const std::vector<CheckInfo>& Catalogue() {
  static const std::vector<CheckInfo>* const all = [] {
    auto* v = new std::vector<CheckInfo>();
    for (auto group : {RegistrationChecks, StreamChecks, AllocateChecks, LifecycleChecks}) {
      for (auto& c : group()) v->push_back(std::move(c));
    }
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
