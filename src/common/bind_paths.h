// Paths across bind mounts: a directory of the host bound over a path that
// a plugin sees in its private mount namespace (serve --private-mount). The
// node dials what a plugin registers, so a path the plugin gave from inside
// its namespace is turned into the host path here.
#ifndef DEVMGR_COMMON_BIND_PATHS_H_
#define DEVMGR_COMMON_BIND_PATHS_H_

#include <string>
#include <string_view>
#include <vector>

namespace devmgr {

// One bind mount: `host` (a directory of the host) seen at `inside` (an
// absolute path in the plugin's mount namespace).
struct BindPath {
  std::string host;
  std::string inside;
};

// True when `path` is `dir` or lies below it, comparing whole components
// ("/a/bc" is not under "/a/b"); a trailing '/' of `dir` is ignored.
bool PathUnder(std::string_view path, std::string_view dir);

// The host path of `path`, a path a plugin running under `binds` gave: when
// `path`, lexically normalised ("//", ".", ".." resolved as the kernel does
// when no symbolic link is crossed), lies under a bind's `inside`, that part
// is replaced by the bind's `host` (the deepest `inside` wins, as a mount
// made later over a subdirectory hides the one above). Any other path, and
// every relative one, is returned unchanged, as the kubelet uses it.
std::string HostPathOf(const std::string& path, const std::vector<BindPath>& binds);

}  // namespace devmgr

#endif  // DEVMGR_COMMON_BIND_PATHS_H_
