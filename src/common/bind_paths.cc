#include "common/bind_paths.h"

#include <filesystem>

namespace devmgr {

bool PathUnder(std::string_view path, std::string_view dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  if (dir.empty() || path.substr(0, dir.size()) != dir) return false;
  return path.size() == dir.size() || path[dir.size()] == '/' || dir == "/";
}

std::string HostPathOf(const std::string& path, const std::vector<BindPath>& binds) {
  if (path.empty() || path[0] != '/') return path;
  std::string normal = std::filesystem::path(path).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  const BindPath* best = nullptr;
  size_t best_len = 0;
  for (const BindPath& b : binds) {
    std::string inside = std::filesystem::path(b.inside).lexically_normal().string();
    while (inside.size() > 1 && inside.back() == '/') inside.pop_back();
    if (b.host.empty() || !PathUnder(normal, inside)) continue;
    if (best == nullptr || inside.size() > best_len) {
      best = &b;
      best_len = inside.size();
    }
  }
  if (best == nullptr) return path;
  std::string host = best->host;
  while (host.size() > 1 && host.back() == '/') host.pop_back();
  // What follows `inside`: "" or "/...".
  const std::string rest = best_len > 1 ? normal.substr(best_len) : normal == "/" ? "" : normal;
  if (rest.empty()) return host;
  return host == "/" ? rest : host + rest;
}

}  // namespace devmgr
