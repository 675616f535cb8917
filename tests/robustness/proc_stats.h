// Open file descriptors, threads and resident memory of this process (from /proc/self), for
// the leak and hostile-plugin tests.
#ifndef DEVMGR_TESTS_ROBUSTNESS_PROC_STATS_H_
#define DEVMGR_TESTS_ROBUSTNESS_PROC_STATS_H_

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace devmgr::testutil {

// Under AddressSanitizer RSS says nothing about leaks: freed memory is held in ASan's quarantine
// (256 MiB by default) and every allocation has shadow and redzones, so RSS grows by hundreds of
// MiB without a leak. There LeakSanitizer checks the heap at exit instead (make test-sanitize),
// and fds and threads are still compared here.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRssMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kRssMeaningful = false;
#else
constexpr bool kRssMeaningful = true;
#endif
#else
constexpr bool kRssMeaningful = true;
#endif

struct ProcStats {
  long fds = 0;
  long threads = 0;
  long rss_kib = 0;

  static ProcStats Now() {
    ProcStats s;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
      ++s.fds;
    }
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
      ++s.threads;
    }
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = 0;
    statm >> size >> resident;
    s.rss_kib = resident * (sysconf(_SC_PAGESIZE) / 1024);
    return s;
  }
};

// The integer in environment variable `name` (a test's size override), or `def`.
inline int EnvInt(const char* name, int def) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : def;
}

// Prints one line: `what`, then fds, threads and RSS from `base` to `end`.
inline void PrintStats(const char* what, const ProcStats& base, const ProcStats& end) {
  std::printf("%-28s fds %ld -> %ld, threads %ld -> %ld, RSS %ld -> %ld KiB (%+ld)\n", what,
              base.fds, end.fds, base.threads, end.threads, base.rss_kib, end.rss_kib,
              end.rss_kib - base.rss_kib);
  std::fflush(stdout);
}

// Threads of gRPC's executor and of finished stream readers wind down asynchronously, with no
// event to wait for: the figures are taken once fds and threads are back within +2 of `base`,
// or after 10 s.
inline ProcStats Settled(const ProcStats& base) {
  ProcStats s = ProcStats::Now();
  for (int i = 0; i < 100 && (s.fds > base.fds + 2 || s.threads > base.threads + 2); ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    s = ProcStats::Now();
  }
  return s;
}

}  // namespace devmgr::testutil

#endif  // DEVMGR_TESTS_ROBUSTNESS_PROC_STATS_H_
