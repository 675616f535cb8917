// perf_bench's harness: what every part shares (arguments, the flat JSON
// of results, statistics, temp directories, process figures, the manager's
// change notifications). The parts themselves are in p1.cc .. scaling.cc.
#ifndef DEVMGR_BENCH_PERF_HARNESS_H_
#define DEVMGR_BENCH_PERF_HARNESS_H_

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "fmt/format.h"
#include "pod/pod.h"

namespace perf_bench {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t);

// Ends the bench at once (no static destructors: node and plugin threads
// may still be running), after removing every directory MakeTempDir made.
[[noreturn]] void Die(const std::string& what);

// A directory `root`/devmgr-`tag`-XXXXXX, removed by Die (the parts remove
// theirs on the way out).
std::string MakeTempDir(const std::string& root, const std::string& tag);

struct Stats {
  double p50 = 0, p99 = 0, mean = 0;
  size_t n = 0;
};

Stats Summarize(std::vector<double> v);

// Flat JSON object of numbers and strings, in insertion order.
class Results {
 public:
  void Num(const std::string& k, double v) { items_.emplace_back(k, fmt::format("{:.6g}", v)); }
  void Str(const std::string& k, const std::string& v) {
    std::string q = "\"";
    for (char c : v) {
      if (c == '"' || c == '\\') q.push_back('\\');
      if (static_cast<unsigned char>(c) < 0x20) {
        q += fmt::format("\\u{:04x}", static_cast<int>(c));
        continue;
      }
      q.push_back(c);
    }
    items_.emplace_back(k, q + "\"");
  }
  void Null(const std::string& k) { items_.emplace_back(k, "null"); }
  std::string Json() const {
    std::string out = "{\n";
    for (size_t i = 0; i < items_.size(); ++i) {
      out += fmt::format("  \"{}\": {}{}\n", items_[i].first, items_[i].second,
                         i + 1 < items_.size() ? "," : "");
    }
    return out + "}\n";
  }

 private:
  std::vector<std::pair<std::string, std::string>> items_;
};

struct Args {
  std::string part;
  // Where the device-plugin directories go (tmpfs when available: see P1).
  std::string tmp = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  // A directory on disk, for P1's disk figures.
  std::string disk = "/tmp";
  std::string json;
  std::string devmgr;
  std::string oracle;
  // A real plugin binary for P1's second figure: the kubernetes e2e sample
  // device plugin (tests/peers), run in a private mount namespace.
  std::string peer;
  // The kubelet's own device manager (tests/kubelet-oracle), for P1's
  // figure of what the kubelet itself takes.
  std::string kubelet_oracle;
  // The DRA test driver (tests/dra-driver), for P5.
  std::string dra_driver;
  int n = 0;
};

// The reference plugin as a process of its own, as a /bin/sh command.
std::string SamplePluginCommand(const std::string& devmgr, const std::string& config,
                                const std::string& dir);

// The type of the filesystem `path` is on ("tmpfs", "ext4", ...).
std::string FsType(const std::string& path);

// Why a Go binary that runs in a private mount namespace (a peer plugin,
// the kubelet oracle) cannot run here, or "": `missing` when none was given.
std::string WhyNotRunnable(const std::string& binary, const std::string& missing);

// CPU time of this whole process (all threads), in seconds.
double ProcessCpuSeconds();
double PeakRssMib();
double LoadAverage();

// Counts the manager's change notifications (sent after each state change,
// after the checkpoint write that goes with it).
class Notifications {
 public:
  void Notify() {
    absl::MutexLock l(&mu_);
    ++n_;
  }
  int64_t count() {
    absl::MutexLock l(&mu_);
    return n_;
  }
  // Waits until `pred` holds, re-checking it after every notification
  // (and every 50 ms).
  bool WaitFor(const std::function<bool()>& pred, absl::Duration timeout = absl::Seconds(120)) {
    const absl::Time deadline = absl::Now() + timeout;
    while (!pred()) {
      if (absl::Now() > deadline) return false;
      absl::MutexLock l(&mu_);
      const int64_t seen = n_;
      auto changed = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return n_ != seen; };
      mu_.AwaitWithTimeout(absl::Condition(&changed), absl::Milliseconds(50));
    }
    return true;
  }

 private:
  absl::Mutex mu_;
  int64_t n_ ABSL_GUARDED_BY(mu_) = 0;
};

// A pod of one container asking for one device of `resource`.
devmgr::pod::Pod OneDevicePod(const std::string& uid, const std::string& resource);

// The parts, one per process (perf_bench PART): p1.cc, p2.cc, p3.cc, p4.cc,
// p5.cc, scaling.cc.
void RunP1(const Args& a, Results& res);
void RunP2(const Args& a, Results& res);
void RunP3(const Args& a, Results& res);
void RunP4(const Args& a, Results& res);
void RunP5(const Args& a, Results& res);
void RunScaling(const Args& a, Results& res);

}  // namespace perf_bench

#endif  // DEVMGR_BENCH_PERF_HARNESS_H_
