#include "dra/driver_calls.h"

#include <utility>

namespace devmgr::dra {
namespace {

// The first failure of an answer, in claim order ("" when none).
template <typename Answer, typename ErrorOf>
std::string FirstError(const std::vector<ClaimRef>& claims, const Answer& answer,
                       ErrorOf error_of) {
  for (const ClaimRef& c : claims) {
    auto it = answer.find(c.uid);
    if (it == answer.end()) return "no answer for claim " + c.uid;
    std::string e = error_of(it->second);
    if (!e.empty()) return e;
  }
  return "";
}

}  // namespace

absl::StatusOr<std::map<std::string, PrepareResult>> ObservedDriverCalls::Prepare(
    const std::string& driver, const std::vector<ClaimRef>& claims) {
  absl::StatusOr<std::map<std::string, PrepareResult>> r = inner_->Prepare(driver, claims);
  DriverCallRecord rec{"NodePrepareResources", driver, claims, ""};
  rec.error = r.ok() ? FirstError(claims, *r, [](const PrepareResult& p) { return p.error; })
                     : std::string(r.status().message());
  if (observe_) observe_(rec);
  return r;
}

absl::StatusOr<std::map<std::string, std::string>> ObservedDriverCalls::Unprepare(
    const std::string& driver, const std::vector<ClaimRef>& claims) {
  absl::StatusOr<std::map<std::string, std::string>> r = inner_->Unprepare(driver, claims);
  DriverCallRecord rec{"NodeUnprepareResources", driver, claims, ""};
  rec.error = r.ok() ? FirstError(claims, *r, [](const std::string& e) { return e; })
                     : std::string(r.status().message());
  if (observe_) observe_(rec);
  return r;
}

}  // namespace devmgr::dra
