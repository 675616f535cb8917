// dra.health.stream: the driver's DRAResourceHealth stream (KEP-4680) opened
// as the kubelet of the session's profile opens it, its first message judged
// against the driver's published devices (docs/conformance.md, "DRA
// drivers"). In its own file: it speaks the health API, which the other DRA
// checks do not.
#ifndef DEVMGR_CONFORMANCE_DRA_HEALTH_CHECK_H_
#define DEVMGR_CONFORMANCE_DRA_HEALTH_CHECK_H_

#include "conformance/check.h"

namespace devmgr::conformance {

class DraSession;

Outcome HealthStreamCheck(DraSession& s);

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_DRA_HEALTH_CHECK_H_
