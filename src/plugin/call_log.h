// CallLog: the RPCs the sample plugin received (and the Register calls it
// made), in order, with their arguments; optionally mirrored to a file as one
// JSON object per line so that an out-of-process runner can assert them.
#ifndef DEVMGR_PLUGIN_CALL_LOG_H_
#define DEVMGR_PLUGIN_CALL_LOG_H_

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace devmgr::plugin {

struct CallRecord {
  absl::Time time;
  // "received" for RPCs served by the plugin, "sent" for its Register calls.
  std::string kind;
  // The gRPC method name: "GetDevicePluginOptions", "ListAndWatch",
  // "GetPreferredAllocation", "Allocate", "PreStartContainer", "Register",
  // "GetInfo", "NotifyRegistrationStatus".
  std::string method;
  // The request's fields, with the proto field names (e.g.
  // {"container_requests":[{"devices_ids":["a"]}]}).
  nlohmann::ordered_json args;
  // Sent calls only: "" on success, else the error message and the gRPC code
  // name (e.g. "UNKNOWN").
  std::string error;
  std::string error_code;
};

// The JSON line written for `r` (no trailing newline):
// {"time":"2024-05-01T10:00:00.123456Z","kind":"received","method":"Allocate","args":{...}}
// plus "error" and "code" for a failed sent call. Invalid UTF-8 in strings is replaced by U+FFFD.
std::string CallRecordToJson(const CallRecord& r);

// Thread-safe.
class CallLog {
 public:
  CallLog() = default;
  ~CallLog();
  CallLog(const CallLog&) = delete;
  CallLog& operator=(const CallLog&) = delete;

  // Appends every later record to `path` (created if needed, appended to).
  absl::Status OpenFile(const std::string& path);
  void Add(CallRecord r);
  std::vector<CallRecord> Records() const;
  // The number of records for `method` (any kind).
  int Count(const std::string& method) const;
  // Waits until Count(method) >= n. False on timeout.
  bool WaitForCount(const std::string& method, int n, absl::Duration timeout) const;
  void Flush();

 private:
  mutable absl::Mutex mu_;
  std::vector<CallRecord> records_ ABSL_GUARDED_BY(mu_);
  std::FILE* file_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace devmgr::plugin

#endif  // DEVMGR_PLUGIN_CALL_LOG_H_
