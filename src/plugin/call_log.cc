#include "plugin/call_log.h"

#include <cerrno>
#include <cstring>

#include "fmt/format.h"

namespace devmgr::plugin {

std::string CallRecordToJson(const CallRecord& r) {
  nlohmann::ordered_json j;
  j["time"] = absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", r.time, absl::UTCTimeZone());
  j["kind"] = r.kind;
  j["method"] = r.method;
  j["args"] = r.args.is_null() ? nlohmann::ordered_json::object() : r.args;
  if (!r.error.empty() || !r.error_code.empty()) {
    j["error"] = r.error;
    j["code"] = r.error_code;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

CallLog::~CallLog() {
  absl::MutexLock l(&mu_);
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status CallLog::OpenFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) {
    return absl::UnavailableError(fmt::format("{}: {}", path, std::strerror(errno)));
  }
  absl::MutexLock l(&mu_);
  if (file_ != nullptr) std::fclose(file_);
  file_ = f;
  return absl::OkStatus();
}

void CallLog::Add(CallRecord r) {
  absl::MutexLock l(&mu_);
  if (file_ != nullptr) {
    const std::string line = CallRecordToJson(r) + "\n";
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
  }
  records_.push_back(std::move(r));
}

std::vector<CallRecord> CallLog::Records() const {
  absl::MutexLock l(&mu_);
  return records_;
}

int CallLog::Count(const std::string& method) const {
  absl::MutexLock l(&mu_);
  int n = 0;
  for (const CallRecord& r : records_) n += r.method == method;
  return n;
}

bool CallLog::WaitForCount(const std::string& method, int n, absl::Duration timeout) const {
  auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    int c = 0;
    for (const CallRecord& r : records_) c += r.method == method;
    return c >= n;
  };
  absl::MutexLock l(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

void CallLog::Flush() {
  absl::MutexLock l(&mu_);
  if (file_ != nullptr) std::fflush(file_);
}

}  // namespace devmgr::plugin
