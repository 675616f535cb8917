// Go's path/filepath.Clean and Join on Unix, which the kubelet uses to turn
// a plugin's RegisterRequest.endpoint into the socket path it dials.
#ifndef DEVMGR_TRANSPORT_GO_PATH_H_
#define DEVMGR_TRANSPORT_GO_PATH_H_

#include <string>
#include <vector>

namespace devmgr::transport {

// Lexical cleaning: collapses "//", removes "." elements, resolves ".."
// against the preceding element ("/.." is "/"), drops a trailing "/";
// "" becomes ".".
std::string GoPathClean(const std::string& path);

// Joins the non-empty elements with "/" and cleans the result; all empty
// gives "". An absolute later element is appended, not substituted.
std::string GoPathJoin(const std::vector<std::string>& elems);

// False when `endpoint` is empty or contains '/' or "..": endpoints the API
// describes as a plain file name in the plugin directory but that the
// kubelet still joins (and may lead out of the directory).
bool IsPlainSocketName(const std::string& endpoint);

}  // namespace devmgr::transport

#endif  // DEVMGR_TRANSPORT_GO_PATH_H_
