// A day in the life of a long-running `devmgr serve`, at the node's virtual clock: a pod
// deleted and a new one admitted every virtual minute (Allocate over gRPC to the reference
// plugin, garbage collection of the deleted pod's device at the next allocation), a device's
// health flipped every ten virtual minutes (ListAndWatch, then the pod status resync of its
// owner), the periodic pod resyncs and serve's status pass (node status, then the status file)
// run as the clock moves. The node is put together as `serve` does it: device health in pod
// status on, a topology manager that stores hints, and a pod manager that forgets deleted pods.
//
// After a two-hour warm-up, 24 hours must leave the per-pod state at the live pods (pod
// records, statuses, hints, allocations) and the process's fds, threads and resident memory
// flat. Prints the figures. DEVMGR_SOAK_HOURS overrides the 24 hours.
#include <cstdio>
#include <deque>
#include <memory>
#include <string>

#include "common/logging.h"
#include "common/status_testutil.h"
#include "gtest/gtest.h"
#include "node/node.h"
#include "node/pod_manager.h"
#include "node/status_loop.h"
#include "process/supervisor.h"
#include "tests/integration/test_env.h"
#include "tests/robustness/proc_stats.h"

namespace devmgr::testutil {
namespace {

constexpr char kGpu[] = "example.com/gpu";
constexpr char kPluginConfig[] = R"(
resource: example.com/gpu
devices:
  - {id: gpu-0, numa: [0]}
  - {id: gpu-1, numa: [0]}
  - {id: gpu-2, numa: [1]}
  - {id: gpu-3, numa: [1]}
allocate:
  envs:
    EXAMPLE_VISIBLE_DEVICES: "{{.DeviceIDs}}"
)";
// Pods alive at any time, one GPU each; with one device unhealthy at most, the fourth device
// (or the deleted pod's, collected at the allocation) is always there for the next pod.
constexpr size_t kLivePods = 3;
constexpr int kWarmupMinutes = 120;
constexpr int kFlipEveryMinutes = 10;
// Resident memory may move by allocator noise, not by a day of pods: before pods were forgotten,
// a day grew it by several MiB (docs/reliability.md).
constexpr long kRssSlackKiB = 2 * 1024;

class ServeSoakTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::SetConsoleOutput(false);
    node::NodeOptions o;
    o.plugin_dir = dir_.path();
    o.profile = *ProfileForVersion("1.36");
    o.clock = &clock_;
    o.fsync = false;
    o.dial_timeout = absl::Seconds(2);
    o.numa_nodes = {0, 1};
    o.topology.policy = topology::kPolicyBestEffort;
    o.resource_health_status = true;
    o.resync_jitter = [] { return 0.5; };
    node_ = std::make_unique<node::Node>(o);
    node_->manager().SetChangeCallback([this] { changes_.Notify(); });
    pods_ = std::make_unique<node::PodManager>(node_.get(),
                                               node::PodManagerOptions{.keep_deleted = false});
    ASSERT_OK(node_->Start(pods_->MakeStartOptions(/*node_rebooted=*/false)));
    status_ = std::make_unique<node::StatusLoop>(
        node_.get(), &sup_, pods_.get(),
        node::StatusLoopOptions{.status_file = dir_.path() + "/status.json"});
    plugin_ = MakePlugin(kPluginConfig, dir_.path());
    ASSERT_OK(plugin_->Start());
    ASSERT_TRUE(changes_.WaitFor([&] { return Find(*node_, kGpu).allocatable == 4; }));
  }
  void TearDown() override {
    if (plugin_) plugin_->Stop();
    if (node_) node_->Stop();
    log::SetConsoleOutput(true);
  }

  // One virtual minute: the clock moves, the oldest pod goes, a new one comes, every tenth
  // minute a device's health flips, and the due pod resyncs and the node-status pass run.
  void Minute(int m) {
    clock_.Advance(absl::Minutes(1));
    if (live_.size() >= kLivePods) {
      ASSERT_OK(pods_->DeletePod(live_.front()));
      live_.pop_front();
    }
    const node::PodRecord rec =
        AdmitOrFail(*pods_, MakePod("soak-" + std::to_string(m), {"app:1"}));
    ASSERT_EQ(rec.phase, pod::Phase::kRunning) << rec.message;
    if (first_uid_.empty()) first_uid_ = rec.pod.uid;
    live_.push_back(rec.pod.uid);
    if (m % kFlipEveryMinutes == 0) {
      ASSERT_NO_FATAL_FAILURE(FlipHealth(m / kFlipEveryMinutes));
    }
    node_->pod_status().SyncDuePods();
    status_->PassNow();
  }
  // Flip k: even flips make gpu-<k/2 mod 4> unhealthy, odd ones make it healthy again.
  void FlipHealth(int k) {
    const std::string id = "gpu-" + std::to_string((k / 2) % 4);
    const bool unhealthy = k % 2 == 0;
    ASSERT_TRUE(plugin_->SetHealth(id, unhealthy ? "Unhealthy" : "Healthy"));
    ASSERT_TRUE(changes_.WaitFor([&] {
      return Find(*node_, kGpu).allocatable == (unhealthy ? 3 : 4);
    })) << "flip "
        << k << " of " << id << " not seen";
    ++flips_;
  }

  TempDir dir_;
  FakeClock clock_;
  ChangeSignal changes_;
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<node::PodManager> pods_;
  node::Supervisor sup_;
  std::unique_ptr<node::StatusLoop> status_;
  std::unique_ptr<plugin::SamplePlugin> plugin_;
  std::deque<std::string> live_;
  std::string first_uid_;
  int flips_ = 0;
};

TEST_F(ServeSoakTest, ADayOfPodChurnAndHealthFlipsKeepsMemoryFdsAndThreadsFlat) {
  const int day_minutes = EnvInt("DEVMGR_SOAK_HOURS", 24) * 60;
  int m = 0;
  for (; m < kWarmupMinutes; ++m) ASSERT_NO_FATAL_FAILURE(Minute(m));
  const ProcStats base = ProcStats::Now();
  const int64_t syncs_base = node_->pod_status().sync_count();
  const int flips_base = flips_;
  const absl::Time start = absl::Now();
  for (; m < kWarmupMinutes + day_minutes; ++m) ASSERT_NO_FATAL_FAILURE(Minute(m));
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  const ProcStats end = Settled(base);
  std::printf(
      "%d virtual hours: %d pods admitted and deleted, %d health flips, %lld pod status "
      "syncs, in %.1f s of wall time\n",
      day_minutes / 60, day_minutes, flips_ - flips_base,
      static_cast<long long>(node_->pod_status().sync_count() - syncs_base), wall);
  PrintStats("after the day:", base, end);

  // Per-pod state: the live pods only.
  EXPECT_EQ(pods_->Pods().size(), kLivePods);
  EXPECT_EQ(node_->pod_status().pod_count(), kLivePods);
  EXPECT_EQ(node_->PodResourceStatuses().size(), kLivePods);
  EXPECT_LE(node_->manager().Allocations().size(), kLivePods + 1);  // +1: not yet collected
  EXPECT_FALSE(pods_->Find(first_uid_).has_value());
  EXPECT_FALSE(node_->topology_manager()->LastAdmission(first_uid_).has_value());
  EXPECT_FALSE(node_->topology_manager()->HasHint(first_uid_, "app"));
  EXPECT_TRUE(node_->topology_manager()->HasHint(live_.back(), "app"));

  EXPECT_LE(end.fds, base.fds + 2);
  EXPECT_LE(end.threads, base.threads + 2);
  if (kRssMeaningful) {
    EXPECT_LT(end.rss_kib - base.rss_kib, kRssSlackKiB);
  }
}

}  // namespace
}  // namespace devmgr::testutil
