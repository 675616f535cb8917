// Leaks over a long-lived emulated kubelet (node::Node, one process): 1,000 plugin restarts
// (register, stream, disconnect) and 10,000 pod admissions (Allocate over gRPC, then garbage
// collection when the pod goes away). Open file descriptors, threads and resident memory must
// come back to their baseline (taken after a warm-up). Prints the figures.
// DEVMGR_LEAK_RESTARTS / DEVMGR_LEAK_ADMISSIONS override the counts.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/logging.h"
#include "common/status_testutil.h"
#include "gtest/gtest.h"
#include "tests/integration/test_env.h"
#include "tests/robustness/proc_stats.h"
#include "transport/transport_testutil.h"

namespace devmgr::testutil {
namespace {

using transport::testutil::CallRegister;
using transport::testutil::Devices;
using transport::testutil::FakePlugin;
using transport::testutil::FakePluginConfig;

constexpr char kResource[] = "example.com/leak";

class LeakTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::SetConsoleOutput(false);
    node_ = MakeNode(dir_.path(), &clock_, "1.32", &changes_);
    manager::StartOptions so;
    so.active_pod_uids = [this] {
      absl::MutexLock l(&mu_);
      return active_.empty() ? std::vector<std::string>{} : std::vector<std::string>{active_};
    };
    ASSERT_OK(node_->Start(so));
  }
  void TearDown() override {
    node_->Stop();
    log::SetConsoleOutput(true);
  }
  // One plugin lifetime: start, register, first list tracked, stop, disconnect seen.
  void PluginLifetime() {
    FakePluginConfig cfg;
    cfg.responses = {Devices(8)};
    FakePlugin p(dir_.path() + "/leak.sock", cfg);
    ASSERT_TRUE(p.Start());
    ASSERT_OK(CallRegister(dir_.path() + "/kubelet.sock", "v1beta1", "leak.sock", kResource));
    ASSERT_TRUE(changes_.WaitFor([&] {
      auto s = Find(*node_, kResource);
      return !s.stopped && s.healthy.size() == 8;
    }));
    p.Stop();
    ASSERT_TRUE(changes_.WaitFor([&] { return Find(*node_, kResource).stopped; }));
  }
  void Admit(int i) {
    pod::Pod p = MakePod("leak-" + std::to_string(i), {"c:1"}, "default", kResource);
    {
      absl::MutexLock l(&mu_);
      active_ = p.uid;  // the previous pod is gone: its device is collected at this allocation
    }
    auto r = node_->AdmitPod(p);
    ASSERT_TRUE(r.admitted) << r.reason << ": " << r.message;
  }

  TempDir dir_;
  FakeClock clock_;
  ChangeSignal changes_;
  std::unique_ptr<node::Node> node_;
  absl::Mutex mu_;
  std::string active_ ABSL_GUARDED_BY(mu_);
};

TEST_F(LeakTest, PluginRestartsAndPodAdmissionsReturnToBaseline) {
  const int restarts = EnvInt("DEVMGR_LEAK_RESTARTS", 1000);
  const int admissions = EnvInt("DEVMGR_LEAK_ADMISSIONS", 10000);
  for (int i = 0; i < 20; ++i) ASSERT_NO_FATAL_FAILURE(PluginLifetime());
  const ProcStats base = ProcStats::Now();
  absl::Time start = absl::Now();
  for (int i = 0; i < restarts; ++i) ASSERT_NO_FATAL_FAILURE(PluginLifetime());
  const ProcStats after_restarts = Settled(base);
  std::printf("%d plugin restarts in %.1f s\n", restarts,
              absl::ToDoubleSeconds(absl::Now() - start));
  PrintStats("after the restarts:", base, after_restarts);

  // One plugin stays up for the admissions.
  FakePluginConfig cfg;
  cfg.responses = {Devices(8)};
  FakePlugin p(dir_.path() + "/leak.sock", cfg);
  ASSERT_TRUE(p.Start());
  ASSERT_OK(CallRegister(dir_.path() + "/kubelet.sock", "v1beta1", "leak.sock", kResource));
  ASSERT_TRUE(changes_.WaitFor([&] {
    auto s = Find(*node_, kResource);
    return !s.stopped && s.healthy.size() == 8;
  }));
  for (int i = 0; i < 200; ++i) ASSERT_NO_FATAL_FAILURE(Admit(i));
  const ProcStats pods_base = ProcStats::Now();
  start = absl::Now();
  for (int i = 200; i < 200 + admissions; ++i) ASSERT_NO_FATAL_FAILURE(Admit(i));
  const ProcStats after_pods = Settled(pods_base);
  std::printf("%d pod admissions in %.1f s\n", admissions,
              absl::ToDoubleSeconds(absl::Now() - start));
  PrintStats("after the admissions:", pods_base, after_pods);
  // Only the last pod holds a device: the checkpoint did not grow with the admissions.
  EXPECT_EQ(node_->manager().Allocations().size(), 1u);

  EXPECT_LE(after_restarts.fds, base.fds + 2);
  EXPECT_LE(after_restarts.threads, base.threads + 2);
  EXPECT_LE(after_pods.fds, pods_base.fds + 2);
  EXPECT_LE(after_pods.threads, pods_base.threads + 2);
  if (kRssMeaningful) {
    EXPECT_LT(after_restarts.rss_kib - base.rss_kib, 48 * 1024);
    EXPECT_LT(after_pods.rss_kib - pods_base.rss_kib, 48 * 1024);
  }
}

}  // namespace
}  // namespace devmgr::testutil
