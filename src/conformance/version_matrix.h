// `devmgr conformance --kubelet-version LIST`: one RunReport per profile,
// merged into one report whose check ids name the version ("registration
// [1.37]") for JUnit/JSON, and the per-version verdict table and
// differences (kubelet/version_matrix.h).
#ifndef DEVMGR_CONFORMANCE_VERSION_MATRIX_H_
#define DEVMGR_CONFORMANCE_VERSION_MATRIX_H_

#include <string>
#include <vector>

#include "conformance/runner.h"
#include "kubelet/version_matrix.h"

namespace devmgr::conformance {

// The reports (one per version, in order) as one: every result's id and
// title get " [<version>]", kubelet_version lists the versions.
RunReport MergeVersionReports(const std::vector<RunReport>& reports);

// Records every check of `report` under report.kubelet_version.
void RecordReport(VersionMatrix* m, const RunReport& report);

// "=== checks per kubelet version" table plus the checks whose verdict
// differs ("passes on 1.33-1.36, fails on 1.37: <check>").
std::string MatrixSummary(const VersionMatrix& m);

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_VERSION_MATRIX_H_
