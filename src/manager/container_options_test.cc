// GetDeviceRunContainerOptions, PreStartContainer and the merge of runtime
// options (devicemanager manager.go and pod_devices.go).
#include <filesystem>

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/manager_testutil.h"

namespace devmgr::manager {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace container_options_test {

using testing::Ctr;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::MakePod;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAre;

constexpr char kGpu[] = "vendor.com/gpu";
using ContainerOptionsTest = testing::AllocationFixture;

TEST_F(ContainerOptionsTest, ExtraContainerResponsesAreIgnored) {
  SetUpManager(1);
  SetActive({"p"});
  c_->on_allocate = [](const v1beta1::AllocateRequest&) {
    v1beta1::AllocateResponse resp;
    (*resp.add_container_responses()->mutable_envs())["FIRST"] = "1";
    (*resp.add_container_responses()->mutable_envs())["SECOND"] = "2";
    return resp;
  };
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 1}})});
  ASSERT_TRUE(testing::AdmitPod(*m_, pod).admitted);
  auto opts = m_->GetDeviceRunContainerOptions(pod, pod.containers[0]);
  ASSERT_OK(opts);
  ASSERT_TRUE(opts->has_value());
  EXPECT_THAT((*opts)->envs, ElementsAre(EnvVar{"FIRST", "1"}));
}

TEST_F(ContainerOptionsTest, PreStartContainerRequiredAndFailing) {
  SetUpManager(2, false, /*prestart=*/true);
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 2}})});
  ASSERT_TRUE(testing::AdmitPod(*m_, pod).admitted);
  auto opts = m_->GetDeviceRunContainerOptions(pod, pod.containers[0]);
  ASSERT_OK(opts);
  auto calls = c_->calls();
  ASSERT_THAT(calls.prestart, SizeIs(1));
  EXPECT_THAT(calls.prestart[0].devices_ids(), UnorderedElementsAre("dev0", "dev1"));
  EXPECT_EQ(calls.prestart_timeouts[0], absl::Seconds(30));

  c_->on_prestart = [](const v1beta1::PreStartContainerRequest&, absl::Duration) {
    return absl::DeadlineExceededError(
        "rpc error: code = DeadlineExceeded desc = context deadline exceeded");
  };
  opts = m_->GetDeviceRunContainerOptions(pod, pod.containers[0]);
  EXPECT_EQ(opts.status().message(),
            "device plugin PreStartContainer rpc failed with err: rpc error: code = "
            "DeadlineExceeded desc = context deadline exceeded");
}

TEST_F(ContainerOptionsTest, PreStartBeforeReAllocation) {
  SetUpManager(2, false, /*prestart=*/true);
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 1}})});
  auto opts = m_->GetDeviceRunContainerOptions(pod, pod.containers[0]);
  EXPECT_EQ(opts.status().message(),
            "no devices found allocated in local cache for pod p, container c, resource "
            "vendor.com/gpu");
}

TEST_F(ContainerOptionsTest, RunContainerOptionsReAllocateAnActivePodWithNoCachedDevices) {
  SetUpManager(2);
  SetActive({"p"});
  auto pod = MakePod("p", {Ctr("c", {{kGpu, 1}})});
  auto opts = m_->GetDeviceRunContainerOptions(pod, pod.containers[0]);
  ASSERT_OK(opts);
  ASSERT_TRUE(opts->has_value());
  EXPECT_THAT((*opts)->envs, SizeIs(1));
  // An inactive pod is not re-allocated: no entry, nil options.
  SetActive({"p"});
  auto q = MakePod("q", {Ctr("c", {{kGpu, 1}})});
  auto none = m_->GetDeviceRunContainerOptions(q, q.containers[0]);
  ASSERT_OK(none);
  EXPECT_FALSE(none->has_value());
}

TEST_F(ContainerOptionsTest, RunContainerOptionsMergeAcrossResources) {
  for (bool cdi_gate : {true, false}) {
    SCOPED_TRACE(cdi_gate);
    std::filesystem::remove(dir_.File("kubelet_internal_checkpoint"));
    ManagerOptions o;
    o.plugin_dir = dir_.path();
    o.clock = &clock_;
    o.fsync = false;
    o.profile = testing::ProfileFor("1.30");
    o.cdi_devices_gate = cdi_gate;
    ManagerImpl m(o);
    ASSERT_OK(m.Start(StartOpts()));
    SetActive({"p"});
    auto make = [](const std::string& env_value, const std::string& host) {
      return [env_value, host](const v1beta1::AllocateRequest&) {
        v1beta1::AllocateResponse resp;
        auto* c = resp.add_container_responses();
        (*c->mutable_envs())["SHARED"] = env_value;
        (*c->mutable_annotations())["a"] = env_value;
        auto* mnt = c->add_mounts();
        mnt->set_container_path("/data");
        mnt->set_host_path(host);
        mnt->set_read_only(true);
        auto* d = c->add_devices();
        d->set_container_path("/dev/x");
        d->set_host_path(host);
        d->set_permissions("rw");
        c->add_cdi_devices()->set_name("vendor.com/gpu=0");
        return absl::StatusOr<v1beta1::AllocateResponse>(resp);
      };
    };
    auto ca = Connect(m, "a.com/x");
    auto cb = Connect(m, "b.com/y");
    ca->on_allocate = make("from-a", "/ha");
    cb->on_allocate = make("from-b", "/hb");
    m.PluginListAndWatchReceiver("a.com/x", ca.get(), testing::HealthyDevices(1));
    m.PluginListAndWatchReceiver("b.com/y", cb.get(), testing::HealthyDevices(1));
    auto pod = MakePod("p", {Ctr("c", {{"a.com/x", 1}, {"b.com/y", 1}})});
    ASSERT_TRUE(testing::AdmitPod(m, pod).admitted);
    auto opts = m.GetDeviceRunContainerOptions(pod, pod.containers[0]);
    ASSERT_OK(opts);
    ASSERT_TRUE(opts->has_value());
    const RunContainerOptions& r = **opts;
    EXPECT_THAT(r.envs, ElementsAre(EnvVar{"SHARED", "from-a"}));
    EXPECT_THAT(r.annotations, ElementsAre(Annotation{"a", "from-a"}));
    EXPECT_THAT(r.mounts, ElementsAre(MountOption{"/data", "/data", "/ha", true, false}));
    EXPECT_THAT(r.devices, ElementsAre(DeviceOption{"/ha", "/dev/x", "rw"}));
    if (cdi_gate) {
      EXPECT_THAT(r.cdi_devices, ElementsAre("vendor.com/gpu=0"));
    } else {
      EXPECT_THAT(r.cdi_devices, IsEmpty());
    }
  }
}

}  // namespace container_options_test
}  // namespace devmgr::manager
