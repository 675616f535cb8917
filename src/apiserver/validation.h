// Validation of stored objects as the real API server does it, with its
// field paths and messages: ObjectMeta names for every type
// (k8s.io/apimachinery pkg/api/validation) and ResourceSlices
// (pkg/apis/resource/validation at kubernetes v1.37.2). The rules not yet
// checked are listed in docs/api-server.md.
#ifndef DEVMGR_APISERVER_VALIDATION_H_
#define DEVMGR_APISERVER_VALIDATION_H_

#include <string>
#include <vector>

#include "apiserver/field_errors.h"
#include "nlohmann/json.hpp"

namespace devmgr::apiserver {

// The messages of validation.IsDNS1123Subdomain / IsDNS1123Label /
// content.IsCIdentifier for `value` (none: valid).
std::vector<std::string> IsDNS1123Subdomain(const std::string& value);
std::vector<std::string> IsDNS1123Label(const std::string& value);
std::vector<std::string> IsCIdentifier(const std::string& value);

// metadata.generateName and metadata.name (a DNS subdomain), under "metadata".
FieldErrors ValidateObjectMeta(const nlohmann::json& object);

// A resource.k8s.io/v1 ResourceSlice; `old` is the stored object on update
// (null on create).
FieldErrors ValidateResourceSlice(const nlohmann::json& slice, const nlohmann::json* old);

}  // namespace devmgr::apiserver

#endif  // DEVMGR_APISERVER_VALIDATION_H_
