// Pure validators behind the conformance checks: what a device ID, an
// environment variable name, a CDI device name, a device permission string
// and a path must look like for the kubelet and the container runtime to
// use them. No I/O; each returns "" when the value is fine, else a short
// reason for the report.
#ifndef DEVMGR_CONFORMANCE_VALIDATION_H_
#define DEVMGR_CONFORMANCE_VALIDATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"

namespace devmgr::conformance {

// The exact health strings of the API; anything else reads as unhealthy.
inline constexpr char kHealthy[] = "Healthy";
inline constexpr char kUnhealthy[] = "Unhealthy";
// gRPC's default receive limit, which the kubelet keeps for ListAndWatch.
inline constexpr int64_t kKubeletMaxRecvMsgSize = 4 * 1024 * 1024;
// The topology manager's NUMA bitmask holds node IDs 0..63.
inline constexpr int64_t kMaxNumaId = 63;

// A device ID is printable when it is valid UTF-8 and holds no control
// characters (C0, DEL, C1). "" when fine, else e.g. "control byte 0x01 at
// offset 3".
std::string DeviceIdProblem(const std::string& id);

// Kubernetes' IsEnvVarName: [-._a-zA-Z][-._a-zA-Z0-9]*.
bool IsValidEnvName(const std::string& name);

// A fully-qualified CDI device name "<vendor>/<class>=<name>": vendor and
// class start with a letter and end with a letter or digit (vendor may hold
// [A-Za-z0-9._-], class [A-Za-z0-9_-]); name starts and ends with a letter
// or digit and may hold [A-Za-z0-9._:-]. "" when fine, else the reason.
std::string CdiNameProblem(const std::string& name);

// DeviceSpec.permissions: a non-empty combination of r, w and m, each at
// most once. "" when fine, else the reason.
std::string PermissionsProblem(const std::string& permissions);

// True for an absolute, non-empty path.
inline bool IsAbsolutePath(const std::string& p) { return !p.empty() && p.front() == '/'; }

// A stable text form of a message (fields in number order, map entries
// sorted by key), for "same answer" comparisons and evidence.
std::string CanonicalText(const google::protobuf::Message& m);

// A device list as "id(health)[numa...]" entries sorted by ID: two
// ListAndWatch messages carry the same information iff these are equal.
std::string DeviceListKey(const v1beta1::ListAndWatchResponse& resp);

// Human figure for bytes: "4194304 B (4.00 MiB)".
std::string FormatBytes(int64_t bytes);

}  // namespace devmgr::conformance

#endif  // DEVMGR_CONFORMANCE_VALIDATION_H_
