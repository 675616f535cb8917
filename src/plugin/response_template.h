// Templating of the Allocate response content: a deliberately tiny subset of
// Go's text/template syntax ({{.Name}} with no functions or pipelines), enough
// to put the allocated device IDs into envs, paths and CDI names.
#ifndef DEVMGR_PLUGIN_RESPONSE_TEMPLATE_H_
#define DEVMGR_PLUGIN_RESPONSE_TEMPLATE_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"

namespace devmgr::plugin {

struct TemplateVars {
  std::string device_ids;     // {{.DeviceIDs}}: comma-joined, in request order
  size_t device_count = 0;    // {{.DeviceCount}}
  std::string resource_name;  // {{.ResourceName}}
  std::string device_id;      // {{.DeviceID}} (per-device blocks only)
  size_t device_index = 0;    // {{.DeviceIndex}} (per-device blocks only)
};

// OK when every {{...}} in `text` names a known field ({{.DeviceID}} and
// {{.DeviceIndex}} only when `per_device`). Otherwise InvalidArgument, e.g.
// "unknown template field {{.DeviceId}} (did you mean {{.DeviceID}}?)".
absl::Status CheckTemplate(const std::string& text, bool per_device);

// Replaces each known {{.Field}}; anything else is copied unchanged.
std::string ExpandTemplate(const std::string& text, const TemplateVars& vars);

}  // namespace devmgr::plugin

#endif  // DEVMGR_PLUGIN_RESPONSE_TEMPLATE_H_
