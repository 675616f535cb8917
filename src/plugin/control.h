// The sample plugin's run-time control surface: one command per line, read
// from a control file that a test or scenario appends to, e.g.
//   health dev-1 Unhealthy
// Commands (documented in docs/sample-plugin.md):
//   health ID HEALTH            set the health of device ID
//   add ID [HEALTH [NUMA]]      add a device; NUMA is "0,1", "-" (no topology)
//                               or "none" (an empty topology)
//   remove ID                   remove device ID
//   end-streams                 end every open ListAndWatch stream (OK status)
//   restart                     restart the gRPC server, then register again
//   register                    call Register again (kubelet-sock mode)
// Words are separated by spaces; a word may be double-quoted with C escapes
// (\\ \" \n \t \r \0 \xNN) to carry spaces or control bytes. Blank lines and
// lines starting with '#' are ignored.
#ifndef DEVMGR_PLUGIN_CONTROL_H_
#define DEVMGR_PLUGIN_CONTROL_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "plugin/config.h"

namespace devmgr::plugin {

struct ControlCommand {
  enum class Kind { kHealth, kAdd, kRemove, kEndStreams, kRestart, kRegister };
  Kind kind = Kind::kHealth;
  DeviceConfig device;  // kHealth: id and health; kAdd: all; kRemove: id
};

// nullopt for a blank or comment line; InvalidArgument for a bad one.
absl::StatusOr<std::optional<ControlCommand>> ParseControlLine(const std::string& line);

// Reads the lines appended to a file since the last call. A file that is
// replaced (new inode) or truncated is read again from its start. A last line
// without '\n' is kept until it is completed. Thread-compatible.
class ControlFileReader {
 public:
  explicit ControlFileReader(std::string path) : path_(std::move(path)) {}
  // The complete new lines; none when the file does not exist.
  std::vector<std::string> ReadNewLines();
  const std::string& path() const { return path_; }

 private:
  const std::string path_;
  ino_t inode_ = 0;
  off_t offset_ = 0;
  std::string partial_;
};

}  // namespace devmgr::plugin

#endif  // DEVMGR_PLUGIN_CONTROL_H_
