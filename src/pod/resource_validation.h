// The API server's validation of a container's resources.limits/requests
// (ValidateResourceRequirements, the parts that matter for extended
// resources), reproducing its field.Error texts. The device manager itself
// never checks these; a real cluster rejects such pods before they reach a
// kubelet, so devmgr rejects them when reading the manifest.
#ifndef DEVMGR_POD_RESOURCE_VALIDATION_H_
#define DEVMGR_POD_RESOURCE_VALIDATION_H_

#include <map>
#include <string>
#include <vector>

#include "pod/quantity.h"

namespace devmgr::pod {

struct ResourceError {
  std::string resource;      // the resource the error is about
  bool in_requests = false;  // found while checking requests (else limits)
  // The field.Error text, e.g.
  // `spec.containers[0].resources.requests: Invalid value: "1": must be equal
  // to nvidia.com/gpu limit of 2`.
  std::string text;
};

// True for names the API server treats as native (overcommitable unless
// hugepages): no '/' or containing "kubernetes.io/".
bool IsNativeResourceName(const std::string& name);

// Validates one container's resources. `resources_path` is the field path of
// its resources, e.g. "spec.containers[0].resources". Errors come in the
// API server's order (limits first, then requests), each map walked in
// sorted order (Go walks them in random order).
//
// Checked: resource names (standard container resource or extended name);
// quantities non-negative; extended resources integral ("must be an
// integer"); for non-overcommitable resources (extended, hugepages-*) a
// request needs a limit and must equal it; otherwise a request must not
// exceed its limit.
//
// Deviation: for "must be an integer" Go prints the Quantity with %#v (a
// struct dump); devmgr prints it quoted like the other errors.
std::vector<ResourceError> ValidateResourceRequirements(
    const std::map<std::string, Quantity>& limits, const std::map<std::string, Quantity>& requests,
    const std::string& resources_path);

}  // namespace devmgr::pod

#endif  // DEVMGR_POD_RESOURCE_VALIDATION_H_
