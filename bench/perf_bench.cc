// perf_bench: devmgr's costs beside their physical floors, measured in the
// same run (method in docs/performance.md). One part per process,
// so that each part's peak RSS is its own:
//
//   perf_bench p1 --devmgr BIN [--tmp DIR] [--disk DIR] [--n N] [--peer BIN]
//                 [--kubelet-oracle BIN]  admission vs a bare Allocate RPC
//   perf_bench p2 --devmgr BIN [--oracle BIN]  checkpoint verify vs the Go tool
//   perf_bench p3 --devmgr BIN [--n DEVICES]   1M-device update, allocation, RSS
//   perf_bench p4 --devmgr BIN [--n CYCLES]    admit/delete churn over real sockets
//   perf_bench p5 [--dra-driver BIN] [--kubelet-oracle BIN] [--n N]
//                 a claim's prepare vs a bare NodePrepareResources; the
//                 1,000-claim dra_manager_state rewrite vs its floor
//   perf_bench scaling                    in-process cost vs devices and entries
//
// Each part prints its figures and, with --json FILE, writes them as one
// flat JSON object (scripts/bench.sh merges them into bench/results.json).
//
// The harness is bench/perf/harness.h; each part is a file of bench/perf/.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/synchronization/mutex.h"
#include "perf/harness.h"

using perf_bench::Args;
using perf_bench::Die;
using perf_bench::Results;

int main(int argc, char** argv) {
  Args a;
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: perf_bench p1|p2|p3|p4|p5|scaling [--tmp DIR] [--disk DIR] [--json FILE] [--n N]\n"
        "                  [--devmgr BIN] [--oracle BIN] [--peer BIN] [--kubelet-oracle BIN]\n"
        "                  [--dra-driver BIN]\n"
        "Measures devmgr beside its floors; see docs/performance.md.\n");
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  a.part = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) Die("missing value for " + k);
    const std::string v = argv[++i];
    if (k == "--tmp")
      a.tmp = v;
    else if (k == "--disk")
      a.disk = v;
    else if (k == "--json")
      a.json = v;
    else if (k == "--n")
      a.n = std::atoi(v.c_str());
    else if (k == "--devmgr")
      a.devmgr = v;
    else if (k == "--oracle")
      a.oracle = v;
    else if (k == "--peer")
      a.peer = v;
    else if (k == "--kubelet-oracle")
      a.kubelet_oracle = v;
    else if (k == "--dra-driver")
      a.dra_driver = v;
    else
      Die("unknown flag " + k);
  }
  // As devmgr's main: absl's deadlock detection off unless asked for.
  if (const char* m = std::getenv("DEVMGR_MUTEX_DEADLOCK_DETECTION"); m == nullptr || *m != '1') {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
  Results res;
  res.Num(a.part + "_load_avg_1m", perf_bench::LoadAverage());
  if (a.part == "p1")
    perf_bench::RunP1(a, res);
  else if (a.part == "p2")
    perf_bench::RunP2(a, res);
  else if (a.part == "p3")
    perf_bench::RunP3(a, res);
  else if (a.part == "p4")
    perf_bench::RunP4(a, res);
  else if (a.part == "p5")
    perf_bench::RunP5(a, res);
  else if (a.part == "scaling")
    perf_bench::RunScaling(a, res);
  else
    Die("unknown part " + a.part);
  if (!a.json.empty()) std::ofstream(a.json) << res.Json();
  return 0;
}
