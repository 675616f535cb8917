#include "perf/harness.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "process/plugin_process.h"
#include "scenario/run/plugin_host.h"

namespace perf_bench {
namespace {

// Every directory MakeTempDir made: Die removes them (the parts do so on
// the way out; Die skips the destructors that would). Plugin processes,
// started through node::PluginProcess, die with this one by themselves.
std::vector<std::string>& MadeDirs() {
  static auto* dirs = new std::vector<std::string>;
  return *dirs;
}

}  // namespace

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void Die(const std::string& what) {
  for (const std::string& d : MadeDirs()) {
    std::error_code ec;
    std::filesystem::remove_all(d, ec);
  }
  std::fflush(nullptr);
  std::_Exit(1);
}

Stats Summarize(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.n = v.size();
  s.p50 = v[v.size() / 2];
  s.p99 = v[std::min(v.size() - 1, static_cast<size_t>(v.size() * 0.99))];
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

std::string MakeTempDir(const std::string& root, const std::string& tag) {
  std::string tmpl = fmt::format("{}/devmgr-{}-XXXXXX", root, tag);
  if (::mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp in " + root + " failed");
  MadeDirs().push_back(tmpl);
  return tmpl;
}

std::string SamplePluginCommand(const std::string& devmgr, const std::string& config,
                                const std::string& dir) {
  return fmt::format("exec {} sample-plugin --config {} --dir {} --registry-dir {}",
                     devmgr::scenario::ShellQuote(devmgr), devmgr::scenario::ShellQuote(config),
                     devmgr::scenario::ShellQuote(dir), devmgr::scenario::ShellQuote(dir));
}

std::string FsType(const std::string& path) {
  struct statfs s;
  if (::statfs(path.c_str(), &s) != 0) return "unknown";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0xEF53:
      return "ext4";
    case 0x01021994:
      return "tmpfs";
    case 0x794c7630:
      return "overlayfs";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    default:
      return fmt::format("0x{:x}", static_cast<unsigned long>(s.f_type));
  }
}

double ProcessCpuSeconds() {
  timespec ts;
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double PeakRssMib() {
  rusage ru;
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB -> MiB
}

double LoadAverage() {
  double l[1] = {0};
  return ::getloadavg(l, 1) == 1 ? l[0] : -1;
}

devmgr::pod::Pod OneDevicePod(const std::string& uid, const std::string& resource) {
  devmgr::pod::Pod p;
  p.uid = uid;
  p.name = uid;
  p.namespace_ = "default";
  devmgr::pod::Container c;
  c.name = "main";
  c.limits[resource] = 1;
  c.requests[resource] = 1;
  p.containers.push_back(c);
  return p;
}

std::string WhyNotRunnable(const std::string& binary, const std::string& missing) {
  if (binary.empty()) return missing;
  if (::access(binary.c_str(), X_OK) != 0) return binary + " is not an executable";
  if (absl::Status s = devmgr::node::CheckPrivateMountSupported(); !s.ok()) {
    return std::string(s.message());
  }
  return "";
}

}  // namespace perf_bench
