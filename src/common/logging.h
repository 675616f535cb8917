// Kubelet-style logging: klog's text format ("I1121 06:14:00.123456  4242
// server.go:12] \"message\" key=\"value\"") or klog's JSON format, on
// stderr, with -v verbosity. Message texts mirror the kubelet's so that
// users' greps keep working. The mechanics are spdlog's.
#ifndef DEVMGR_COMMON_LOGGING_H_
#define DEVMGR_COMMON_LOGGING_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace devmgr::log {

enum class Format { kText, kJson };

// Configures the process-wide logger. May be called again to reconfigure.
// Before the first call, text format at verbosity 0 is used.
void Init(int verbosity, Format format);

// True when messages at verbosity `level` are emitted.
bool V(int level);

// One key/value pair of a structured log line.
struct KV {
  KV(std::string_view k, std::string_view v) : key(k), value(v), quoted(true) {}
  KV(std::string_view k, const std::string& v) : key(k), value(v), quoted(true) {}
  KV(std::string_view k, const char* v) : key(k), value(v), quoted(true) {}
  KV(std::string_view k, int64_t v) : key(k), value(std::to_string(v)), quoted(false) {}
  KV(std::string_view k, int v) : key(k), value(std::to_string(v)), quoted(false) {}
  KV(std::string_view k, size_t v) : key(k), value(std::to_string(v)), quoted(false) {}
  KV(std::string_view k, bool v) : key(k), value(v ? "true" : "false"), quoted(false) {}
  std::string key;
  std::string value;
  bool quoted;
};

enum class Severity { kInfo, kWarning, kError };

// Emits one line. `err` (may be empty) is rendered as klog's err="...".
void Emit(Severity sev, int verbosity, const char* file, int line, std::string_view msg,
          std::string_view err, std::initializer_list<KV> kvs);

// Whether lines are written to stderr (default true). Lines are kept for
// RecentLines either way (`devmgr run` shows them only on failures).
void SetConsoleOutput(bool enabled);

// The last `n` formatted lines (for failure reports), oldest first.
std::vector<std::string> RecentLines(size_t n);

}  // namespace devmgr::log

// klog.InfoS / klog.V(n).InfoS / klog.ErrorS equivalents.
#define DM_INFO(msg, ...) \
  ::devmgr::log::Emit(::devmgr::log::Severity::kInfo, 0, __FILE__, __LINE__, msg, "", {__VA_ARGS__})
#define DM_VINFO(v, msg, ...)                                                             \
  do {                                                                                    \
    if (::devmgr::log::V(v))                                                              \
      ::devmgr::log::Emit(::devmgr::log::Severity::kInfo, v, __FILE__, __LINE__, msg, "", \
                          {__VA_ARGS__});                                                 \
  } while (0)
#define DM_WARN(msg, ...)                                                                \
  ::devmgr::log::Emit(::devmgr::log::Severity::kWarning, 0, __FILE__, __LINE__, msg, "", \
                      {__VA_ARGS__})
#define DM_ERROR(err, msg, ...)                                                         \
  ::devmgr::log::Emit(::devmgr::log::Severity::kError, 0, __FILE__, __LINE__, msg, err, \
                      {__VA_ARGS__})

#endif  // DEVMGR_COMMON_LOGGING_H_
