// Open file descriptors, threads and resident memory of this process (from /proc/self), for
// the leak and hostile-plugin tests.
#ifndef DEVMGR_TESTS_ROBUSTNESS_PROC_STATS_H_
#define DEVMGR_TESTS_ROBUSTNESS_PROC_STATS_H_

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace devmgr::testing {

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

}  // namespace devmgr::testing

#endif  // DEVMGR_TESTS_ROBUSTNESS_PROC_STATS_H_
