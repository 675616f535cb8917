// Extended resource names: the kubelet's v1helper.IsExtendedResourceName,
// which decides whether a device plugin may register a resource
// (pkg/apis/core/v1/helper IsExtendedResourceName). Reproduced exactly,
// including its quirks (any "kubernetes.io/" substring rejects).
#ifndef DEVMGR_COMMON_RESOURCE_NAME_H_
#define DEVMGR_COMMON_RESOURCE_NAME_H_

#include <string_view>

namespace devmgr {

// True when `name` is an extended resource name the kubelet accepts from a
// device plugin, e.g. "nvidia.com/gpu". Byte-oriented like Go: lengths are
// counted in bytes and any non-ASCII byte is invalid. Thread-safe.
bool IsExtendedResourceName(std::string_view name);

// The pieces of the algorithm, exposed for tests and diagnostics.
// Go's validation.IsDNS1123Subdomain (non-empty, <= 253 bytes).
bool IsDns1123Subdomain(std::string_view value);
// Go's validation.IsQualifiedName: [prefix/]name.
bool IsQualifiedName(std::string_view value);

}  // namespace devmgr

#endif  // DEVMGR_COMMON_RESOURCE_NAME_H_
