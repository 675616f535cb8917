// P2: checkpoint verify, devmgr vs the Go reference tool, same file.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint_fixture.h"
#include "fmt/format.h"
#include "perf/harness.h"

extern char** environ;

namespace perf_bench {
namespace {

using devmgr_bench::EntriesFile;

// Runs argv to completion with stdout/stderr to /dev/null; returns the
// exit status (-1 when it could not run) and adds the child's user + system
// CPU seconds to *cpu.
int RunQuiet(const std::vector<std::string>& argv, double* cpu) {
  std::vector<char*> cargv;
  for (const std::string& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  const int rc = posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  *cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Best of `reps` wall times of a whole process, and the best CPU time.
double BestProcessSeconds(const std::vector<std::string>& argv, int reps, int* rc,
                          double* best_cpu) {
  double best = 1e9;
  *best_cpu = 1e9;
  for (int i = 0; i < reps; ++i) {
    const auto t = Clock::now();
    double cpu = 0;
    *rc = RunQuiet(argv, &cpu);
    best = std::min(best, SecondsSince(t));
    *best_cpu = std::min(*best_cpu, cpu);
  }
  return best;
}

}  // namespace

void RunP2(const Args& a, Results& res) {
  const int files = a.n > 0 ? a.n : 10;
  const std::string dir = MakeTempDir(a.tmp, "p2");
  const std::string path = dir + "/kubelet_internal_checkpoint";
  const std::string bytes = EntriesFile(10000);
  std::ofstream(path, std::ios::binary) << bytes;
  const double mb = static_cast<double>(bytes.size()) / 1e6;
  std::printf(
      "P2 checkpoint verify: a 10,000-entry file (%.2f MB), passed %d times to one "
      "process; best of 3\n",
      mb, files);
  res.Num("p2_file_mb", mb);
  res.Num("p2_entries", 10000);

  // In-process decode + verify, for reference.
  double inproc = 1e9;
  for (int i = 0; i < 5; ++i) {
    const auto t = Clock::now();
    const auto v = devmgr::checkpoint::Verify(bytes);
    if (!v.valid) Die("our own file does not verify");
    inproc = std::min(inproc, SecondsSince(t));
  }
  std::printf("  devmgr in-process decode+verify: %.1f ms = %.0f MB/s\n", inproc * 1e3,
              mb / inproc);
  res.Num("p2_devmgr_inprocess_ms", inproc * 1e3);

  std::vector<std::string> ours = {a.devmgr, "checkpoint", "verify"};
  for (int i = 0; i < files; ++i) ours.push_back(path);
  int rc = 0;
  double cpu_ours = 0;
  const double t_ours = BestProcessSeconds(ours, 3, &rc, &cpu_ours);
  if (rc != 0) Die(fmt::format("devmgr checkpoint verify exited {}", rc));
  std::printf("  devmgr checkpoint verify: %.1f ms = %.0f MB/s\n", t_ours * 1e3,
              files * mb / t_ours);
  res.Num("p2_devmgr_ms", t_ours * 1e3);
  res.Num("p2_devmgr_mb_s", files * mb / t_ours);
  res.Num("p2_devmgr_cpu_ms", cpu_ours * 1e3);

  if (a.oracle.empty() || ::access(a.oracle.c_str(), X_OK) != 0) {
    std::printf(
        "  the checkpoint reference tool is not built (%s; tests/checkpoint-oracle/build.sh "
        "builds it, with Go and the Go module proxy): ratio not measured\n",
        a.oracle.empty() ? "no --oracle" : a.oracle.c_str());
    res.Null("p2_ratio");
    res.Str("p2_note", "checkpoint reference tool (tests/checkpoint-oracle) not built");
  } else {
    std::vector<std::string> theirs = {a.oracle, "verify"};
    for (int i = 0; i < files; ++i) theirs.push_back(path);
    double cpu_go = 0;
    const double t_go = BestProcessSeconds(theirs, 3, &rc, &cpu_go);
    if (rc != 0) Die(fmt::format("checksum-oracle verify exited {}", rc));
    std::printf("  checksum-oracle verify (Go): %.1f ms = %.0f MB/s\n", t_go * 1e3,
                files * mb / t_go);
    std::printf("  ratio %.1fx wall (target >= 20x); CPU time %.0f ms vs %.0f ms = %.1fx\n",
                t_go / t_ours, cpu_go * 1e3, cpu_ours * 1e3, cpu_go / cpu_ours);
    res.Num("p2_go_cpu_ms", cpu_go * 1e3);
    res.Num("p2_cpu_ratio", cpu_go / cpu_ours);
    res.Num("p2_go_ms", t_go * 1e3);
    res.Num("p2_go_mb_s", files * mb / t_go);
    res.Num("p2_ratio", t_go / t_ours);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace perf_bench
