#include "draplugin/call_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/logging.h"
#include "nlohmann/json.hpp"

namespace devmgr::draplugin {

void CallLog::Record(const std::string& method, const std::string& service,
                     const std::vector<ClaimRef>& claims,
                     const std::map<std::string, std::string>& errors) {
  if (path_.empty()) return;
  nlohmann::json line = {{"method", method}, {"service", service}};
  nlohmann::json list = nlohmann::json::array();
  for (const ClaimRef& c : claims) {
    list.push_back({{"namespace", c.namespace_}, {"name", c.name}, {"uid", c.uid}});
  }
  line["claims"] = std::move(list);
  nlohmann::json errs = nlohmann::json::object();
  for (const auto& [uid, e] : errors) {
    if (!e.empty()) errs[uid] = e;
  }
  line["errors"] = std::move(errs);
  const std::string text = line.dump() + "\n";
  absl::MutexLock l(&mu_);
  // One write of the whole line with O_APPEND: a reader never sees half of
  // a line followed by another's.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  bool ok = fd >= 0;
  if (ok) {
    ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
  }
  if (!ok && !warned_) {
    warned_ = true;
    DM_ERROR(std::strerror(errno), "Could not write the call log", {"path", path_});
  }
}

}  // namespace devmgr::draplugin
