#include "transport/go_path.h"

namespace devmgr::transport {

std::string GoPathClean(const std::string& path) {
  if (path.empty()) return ".";
  const bool rooted = path.front() == '/';
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    const std::string elem = path.substr(i, j - i);
    i = j + 1;
    if (elem.empty() || elem == ".") continue;
    if (elem == "..") {
      if (!out.empty() && out.back() != "..") {
        out.pop_back();
      } else if (!rooted) {
        out.push_back("..");  // a relative path keeps leading ".."
      }                       // "/.." is "/"
      continue;
    }
    out.push_back(elem);
  }
  std::string result = rooted ? "/" : "";
  for (size_t k = 0; k < out.size(); ++k) {
    if (k > 0) result += '/';
    result += out[k];
  }
  if (result.empty()) return ".";
  return result;
}

std::string GoPathJoin(const std::vector<std::string>& elems) {
  std::string joined;
  bool any = false;
  for (const std::string& e : elems) {
    if (e.empty()) continue;
    if (any) joined += '/';
    joined += e;
    any = true;
  }
  if (!any) return "";
  return GoPathClean(joined);
}

bool IsPlainSocketName(const std::string& endpoint) {
  return !endpoint.empty() && endpoint.find('/') == std::string::npos &&
         endpoint.find("..") == std::string::npos;
}

}  // namespace devmgr::transport
