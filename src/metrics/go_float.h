// Go's number formatting as the Prometheus text exposition format prints
// sample values and bucket bounds (prometheus/common expfmt writeFloat:
// strconv.FormatFloat(f, 'g', -1, 64) with "+Inf", "-Inf" and "NaN").
#ifndef DEVMGR_METRICS_GO_FLOAT_H_
#define DEVMGR_METRICS_GO_FLOAT_H_

#include <string>

namespace devmgr::metrics {

// The shortest representation that round-trips, in Go's %g layout: plain
// decimal for exponents in [-4, 6), else d.ddde±XX ("1e+06", "1.5e-05").
std::string FormatGoFloat(double v);

}  // namespace devmgr::metrics

#endif  // DEVMGR_METRICS_GO_FLOAT_H_
