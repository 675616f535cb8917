#include "common/logging.h"

#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/go_format.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "spdlog/sinks/ringbuffer_sink.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace devmgr::log {
namespace {

std::atomic<int> g_verbosity{0};
std::atomic<Format> g_format{Format::kText};

struct Sinks {
  std::shared_ptr<spdlog::logger> logger;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> recent;
  std::shared_ptr<spdlog::sinks::stderr_sink_mt> err;
};

Sinks& GetSinks() {
  static Sinks* s = [] {
    auto* sinks = new Sinks;
    auto err = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    sinks->recent = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(200);
    sinks->err = err;
    sinks->logger =
        std::make_shared<spdlog::logger>("devmgr", spdlog::sinks_init_list{err, sinks->recent});
    // Every line is formatted here, so spdlog only prints it.
    sinks->logger->set_pattern("%v");
    sinks->logger->set_level(spdlog::level::trace);
    sinks->logger->flush_on(spdlog::level::trace);
    return sinks;
  }();
  return *s;
}

const char* Basename(const char* file) {
  const char* base = file;
  for (const char* p = file; *p; ++p) {
    if (*p == '/') base = p + 1;
  }
  return base;
}

// zap's ShortCallerEncoder (klog's JSON format): the last directory and the
// file, "manager/allocation.cc:104".
std::string ShortCaller(const char* file, int line) {
  const std::string_view f(file);
  size_t cut = f.rfind('/');
  if (cut != std::string_view::npos && cut > 0) {
    const size_t prev = f.rfind('/', cut - 1);
    cut = prev == std::string_view::npos ? 0 : prev + 1;
  } else {
    cut = 0;
  }
  return fmt::format("{}:{}", f.substr(cut), line);
}

std::string TextLine(Severity sev, const char* file, int line, std::string_view msg,
                     std::string_view err, std::initializer_list<KV> kvs) {
  const char letter = sev == Severity::kInfo ? 'I' : sev == Severity::kWarning ? 'W' : 'E';
  const absl::Time now = absl::Now();
  std::string out = fmt::format("{}{} {:7d} {}:{}] {}", letter,
                                absl::FormatTime("%m%d %H:%M:%E6S", now, absl::LocalTimeZone()),
                                static_cast<int>(getpid()), Basename(file), line, GoQuote(msg));
  if (!err.empty()) out += " err=" + GoQuote(err);
  for (const KV& kv : kvs) {
    out += " " + kv.key + "=" + (kv.quoted ? GoQuote(kv.value) : kv.value);
  }
  return out;
}

std::string JsonLine(Severity sev, int verbosity, const char* file, int line, std::string_view msg,
                     std::string_view err, std::initializer_list<KV> kvs) {
  nlohmann::ordered_json j;
  j["ts"] = absl::ToDoubleMilliseconds(absl::Now() - absl::UnixEpoch());
  j["caller"] = ShortCaller(file, line);
  j["msg"] = std::string(msg);
  if (sev == Severity::kInfo) j["v"] = verbosity;
  if (!err.empty()) j["err"] = std::string(err);
  for (const KV& kv : kvs) {
    if (kv.quoted) {
      j[kv.key] = kv.value;
    } else {
      j[kv.key] = nlohmann::ordered_json::parse(kv.value, nullptr, false);
    }
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void Init(int verbosity, Format format) {
  g_verbosity = verbosity;
  g_format = format;
  GetSinks();
}

bool V(int level) { return level <= g_verbosity.load(); }

void Emit(Severity sev, int verbosity, const char* file, int line, std::string_view msg,
          std::string_view err, std::initializer_list<KV> kvs) {
  Sinks& s = GetSinks();
  const std::string text = g_format == Format::kJson
                               ? JsonLine(sev, verbosity, file, line, msg, err, kvs)
                               : TextLine(sev, file, line, msg, err, kvs);
  const auto level = sev == Severity::kInfo      ? spdlog::level::info
                     : sev == Severity::kWarning ? spdlog::level::warn
                                                 : spdlog::level::err;
  s.logger->log(level, "{}", text);
}

void SetConsoleOutput(bool enabled) {
  GetSinks().err->set_level(enabled ? spdlog::level::trace : spdlog::level::off);
}

std::vector<std::string> RecentLines(size_t n) { return GetSinks().recent->last_formatted(n); }

}  // namespace devmgr::log
