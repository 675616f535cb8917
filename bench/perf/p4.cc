// P4: admit/delete churn through the pod manager, reference plugin, real
// sockets.
#include <string>

#include "fmt/format.h"
#include "perf/harness.h"
#include "perf/node_env.h"

namespace perf_bench {

void RunP4(const Args& a, Results& res) {
  const int cycles = a.n > 0 ? a.n : 10000;
  if (a.devmgr.empty()) {
    Die("p4 needs --devmgr BIN: the reference plugin runs in a process of its own");
  }
  std::printf(
      "P4 churn: %d admit/delete cycles (pod manager: admission + container start; "
      "delete), reference plugin in its own process with GetPreferredAllocation, fsync off, "
      "dir on %s\n",
      cycles, FsType(a.tmp).c_str());
  EnvOptions eo;
  eo.preferred = true;
  eo.devmgr = a.devmgr;
  NodeEnv env(a.tmp, eo);
  const auto t = Clock::now();
  for (int i = 0; i < cycles; ++i) {
    const std::string uid = fmt::format("p4-{}", i);
    auto r = env.pods().AddPod(OneDevicePod(uid, kResource));
    if (!r.ok() || r->phase == devmgr::pod::Phase::kFailed) {
      Die("P4 admission failed: " + (r.ok() ? r->message : std::string(r.status().message())));
    }
    if (!env.pods().DeletePod(uid).ok()) Die("P4 delete failed");
  }
  const double s = SecondsSince(t);
  std::printf("  %d cycles: %.2f s (%.0f us/cycle; target < 10 s)\n", cycles, s, s / cycles * 1e6);
  res.Num("p4_cycles", cycles);
  res.Str("p4_fs", FsType(a.tmp));
  res.Num("p4_cycles_s", s);
}

}  // namespace perf_bench
