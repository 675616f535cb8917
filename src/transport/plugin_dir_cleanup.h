// CleanupPluginDirectory: what the kubelet's registration server removes
// from the device-plugin directory at start (devicemanager/plugin/v1beta1
// server.go), per profile.
#ifndef DEVMGR_TRANSPORT_PLUGIN_DIR_CLEANUP_H_
#define DEVMGR_TRANSPORT_PLUGIN_DIR_CLEANUP_H_

#include <string>

#include "absl/status/status.h"

namespace devmgr::transport {

// The checkpoint file name the kubelet keeps in the plugin directory.
inline constexpr char kCheckpointFileName[] = "kubelet_internal_checkpoint";

// Removes the direct entries of `dir` except `checkpoint_path` and
// directories (1.30-1.32: Lstat, every non-directory goes, symlinks
// themselves included), or, with `sockets_only` (1.33+: Stat), only entries
// that are unix sockets. Never recurses and never removes a symlink's target.
// Per-entry stat errors are logged and skipped; removal errors are
// aggregated like Go's utilerrors.NewAggregate ("e" or "[e1, e2]") into an
// Internal error. A missing `dir` is an error ("open <dir>: no such file or
// directory").
absl::Status CleanupPluginDirectory(const std::string& dir, const std::string& checkpoint_path,
                                    bool sockets_only);

}  // namespace devmgr::transport

#endif  // DEVMGR_TRANSPORT_PLUGIN_DIR_CLEANUP_H_
