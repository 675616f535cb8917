// The check implementations, grouped by area; catalogue.cc lists them in
// run order. Each function returns its area's checks.
#ifndef DEVMGR_CONFORMANCE_CHECKS_H_
#define DEVMGR_CONFORMANCE_CHECKS_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "conformance/check.h"

namespace devmgr::conformance {

std::vector<CheckInfo> RegistrationChecks();  // registration.*, options.*
std::vector<CheckInfo> StreamChecks();        // law.*
std::vector<CheckInfo> AllocateChecks();      // allocate.*, preferred.*, prestart.*
std::vector<CheckInfo> LifecycleChecks();     // restart.*, law.reconnect, latency.*

// "1.5s", "250ms": absl's duration text.
std::string Dur(absl::Duration d);

class Session;
// The SHOULD companion of a timed MUST that passed within its window: PASS
// within Timeouts::prompt_within, else a finding with the measured time
// ("re-registered after 10.2s; within the e2e window of 30s, slower than
// the SHOULD of 10s: ...").
Outcome PromptCompanion(const Session& s, const std::string& what, absl::Duration took,
                        absl::Duration must_window);

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_CHECKS_H_
