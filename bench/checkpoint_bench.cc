// Checkpoint decode + checksum-verify throughput on a generated
// 10,000-entry kubelet_internal_checkpoint, and (when the Go oracle is
// present) the ratio against `checksum-oracle verify` on the same file: the
// kubelet's own checkpoint code (tests/checkpoint-oracle), which its build.sh,
// ctest and `make bench` build into checkpoint-oracle/ beside this binary.
//
//   build-*/checkpoint_bench                 # all benchmarks + oracle ratio
//   DEVMGR_ORACLE=/path/to/checksum-oracle build-*/checkpoint_bench
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "benchmark/benchmark.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint_fixture.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "fmt/format.h"

namespace {

using devmgr::checkpoint::Checkpoint;

constexpr int kEntries = 10000;

const std::string& TenThousandEntryFile() {
  static const std::string* file = new std::string(devmgr_bench::EntriesFile(kEntries));
  return *file;
}

void BM_DecodeAndVerify(benchmark::State& state) {
  const std::string& file = TenThousandEntryFile();
  for (auto _ : state) {
    auto cp = devmgr::checkpoint::DecodeV2(file);
    if (!cp.ok() || !devmgr::checkpoint::ChecksumMatches(*cp)) state.SkipWithError("verify failed");
    benchmark::DoNotOptimize(cp);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(file.size()));
  state.counters["file_MB"] = static_cast<double>(file.size()) / 1e6;
}
BENCHMARK(BM_DecodeAndVerify)->Unit(benchmark::kMillisecond);

void BM_DecodeOnly(benchmark::State& state) {
  const std::string& file = TenThousandEntryFile();
  for (auto _ : state) benchmark::DoNotOptimize(devmgr::checkpoint::DecodeV2(file));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(file.size()));
}
BENCHMARK(BM_DecodeOnly)->Unit(benchmark::kMillisecond);

void BM_ChecksumOnly(benchmark::State& state) {
  const std::string& file = TenThousandEntryFile();
  const Checkpoint cp = *devmgr::checkpoint::DecodeV2(file);
  for (auto _ : state) benchmark::DoNotOptimize(devmgr::checkpoint::ComputeChecksum(cp.data));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(file.size()));
}
BENCHMARK(BM_ChecksumOnly)->Unit(benchmark::kMillisecond);

void BM_Encode(benchmark::State& state) {
  const std::string& file = TenThousandEntryFile();
  const Checkpoint cp = *devmgr::checkpoint::DecodeV2(file);
  for (auto _ : state) benchmark::DoNotOptimize(devmgr::checkpoint::Encode(cp));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(file.size()));
}
BENCHMARK(BM_Encode)->Unit(benchmark::kMillisecond);

double Seconds(const std::chrono::steady_clock::time_point& a) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

// Best-of-N wall time of our decode+verify and of the oracle process.
void CompareWithOracle() {
  const char* env = std::getenv("DEVMGR_ORACLE");
  const std::string oracle = env != nullptr && *env != '\0'
                                 ? env
                                 : (std::filesystem::read_symlink("/proc/self/exe").parent_path() /
                                    "checkpoint-oracle/checksum-oracle")
                                       .string();
  const std::string& file = TenThousandEntryFile();
  const double mb = static_cast<double>(file.size()) / 1e6;
  double ours = 1e9;
  for (int i = 0; i < 5; ++i) {
    const auto t = std::chrono::steady_clock::now();
    auto cp = devmgr::checkpoint::DecodeV2(file);
    benchmark::DoNotOptimize(devmgr::checkpoint::ChecksumMatches(*cp));
    ours = std::min(ours, Seconds(t));
  }
  std::printf("\ndevmgr decode+verify: %.2f MB in %.1f ms = %.0f MB/s (target >= 300 MB/s)\n", mb,
              ours * 1e3, mb / ours);
  if (::access(oracle.c_str(), X_OK) != 0) {
    std::printf(
        "checksum oracle not found (%s; tests/checkpoint-oracle/build.sh builds it): ratio not "
        "measured\n",
        oracle.c_str());
    return;
  }
  char tmpl[] = "/tmp/devmgr-bench-XXXXXX";
  const int fd = ::mkstemp(tmpl);
  if (fd < 0) return;
  ::close(fd);
  std::ofstream(tmpl, std::ios::binary) << file;
  double theirs = 1e9;
  const std::string cmd = fmt::format("{} verify {} > /dev/null", oracle, tmpl);
  for (int i = 0; i < 3; ++i) {
    const auto t = std::chrono::steady_clock::now();
    const int rc = std::system(cmd.c_str());
    theirs = std::min(theirs, Seconds(t));
    if (rc != 0) std::printf("oracle verify exited with %d\n", rc);
  }
  std::remove(tmpl);
  std::printf("checksum-oracle verify (Go, whole process): %.1f ms = %.0f MB/s\n", theirs * 1e3,
              mb / theirs);
  std::printf("ratio devmgr/oracle: %.1fx\n", theirs / ours);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  CompareWithOracle();
  return 0;
}
