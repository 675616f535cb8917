// The CDI spec file the driver writes per prepared claim: one JSON file
// "<driver>-<claim uid>.json" in the CDI directory, cdiVersion 0.6.0, kind
// "<vendor>/<class>", one CDI device per allocated device named
// "<claim uid>-<device>" whose containerEdits set environment variables.
#ifndef DEVMGR_DRAPLUGIN_CDI_H_
#define DEVMGR_DRAPLUGIN_CDI_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace devmgr::draplugin {

inline constexpr char kCdiVersion[] = "0.6.0";

struct CdiDevice {
  std::string name;              // "<claim uid>-<device>"
  std::vector<std::string> env;  // "KEY=value"
};

// "<dir>/<driver>-<claim uid>.json".
std::string CdiSpecPath(const std::string& dir, const std::string& driver,
                        const std::string& claim_uid);
// The fully qualified CDI device ID "<kind>=<name>".
std::string CdiDeviceId(const std::string& kind, const std::string& name);
// "<claim uid>-<device>".
std::string CdiDeviceName(const std::string& claim_uid, const std::string& device);
// The spec's JSON text.
std::string CdiSpecJson(const std::string& kind, const std::vector<CdiDevice>& devices);
// Writes the spec atomically (mode 0644), making `dir` when missing.
absl::Status WriteCdiSpec(const std::string& path, const std::string& kind,
                          const std::vector<CdiDevice>& devices);
// Removes the spec; OK when it is not there.
absl::Status RemoveCdiSpec(const std::string& path);

}  // namespace devmgr::draplugin

#endif  // DEVMGR_DRAPLUGIN_CDI_H_
