// The checkpoint over the filesystem seam: a write that fails (ENOSPC
// injected through common/fs_testutil.h) fails the allocation with the
// kubelet's "failed to write checkpoint file" error and leaves the previous
// checkpoint in place.
#include <cerrno>

#include "common/fs_testutil.h"
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager/manager_testutil.h"

namespace devmgr::manager {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace checkpoint_fs_test {

using testing::Ctr;
using ::testing::HasSubstr;
using testing::MakePod;
using ::testing::StartsWith;
using Op = fs::FaultInjectingFs::Op;

constexpr char kGpu[] = "vendor.com/gpu";

class CheckpointFsTest : public testing::ManagerFixture {
 protected:
  void SetUp() override {
    ManagerOptions o;
    o.plugin_dir = dir_.path();
    o.clock = &clock_;
    o.fsync = true;
    o.filesystem = &faults_;
    m_ = std::make_unique<ManagerImpl>(o);
    ASSERT_OK(m_->Start(StartOpts()));
    c_ = Connect(*m_, kGpu);
    m_->PluginListAndWatchReceiver(kGpu, c_.get(), testing::HealthyDevices(2));
  }

  fs::FaultInjectingFs faults_;
  std::unique_ptr<ManagerImpl> m_;
  std::shared_ptr<FakePluginClient> c_;
};

TEST_F(CheckpointFsTest, EnospcFailsTheAllocationAndKeepsTheOldCheckpoint) {
  SetActive({"p1", "p2"});
  ASSERT_TRUE(testing::AdmitPod(*m_, MakePod("p1", {Ctr("c", {{kGpu, 1}})})).admitted);
  const std::string before = dir_.Read("kubelet_internal_checkpoint");
  ASSERT_THAT(before, HasSubstr("\"p1\""));

  faults_.Fail(Op::kAppend, ENOSPC);
  const topology::AdmitResult r = testing::AdmitPod(*m_, MakePod("p2", {Ctr("c", {{kGpu, 1}})}));
  EXPECT_FALSE(r.admitted);
  EXPECT_EQ(r.reason, "UnexpectedAdmissionError");
  EXPECT_THAT(r.message, StartsWith("Allocate failed due to failed to write checkpoint file "
                                    "\"kubelet_internal_checkpoint\": write " +
                                    dir_.path() + "/."));
  EXPECT_THAT(r.message, HasSubstr(": no space left on device, which is unexpected"));
  EXPECT_EQ(dir_.Read("kubelet_internal_checkpoint"), before);
  // No temp file (".<digits>", os.CreateTemp(dir, ".")) is left beside it.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
    entries += e.path().filename().string().rfind('.', 0) == 0;
  }
  EXPECT_EQ(entries, 0);
}

}  // namespace checkpoint_fs_test
}  // namespace devmgr::manager
