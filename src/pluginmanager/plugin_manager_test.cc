#include "pluginmanager/plugin_manager.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/status_testutil.h"
#include "common/temp_dir_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::pluginmanager {
namespace {

using testing::ElementsAre;
using testing::HasSubstr;
using testing::UnorderedElementsAre;

using ::devmgr::testutil::MakeSocketFile;
using ::devmgr::testutil::TempDir;

// What one registration socket answers, and the statuses it was sent.
// Thread-safe.
class FakeSockets {
 public:
  void Serve(const std::string& path, RegistrationInfo info) {
    absl::MutexLock lock(&mu_);
    infos_[path] = std::move(info);
  }
  // Waits for the first notification sent to `path`.
  std::pair<bool, std::string> WaitNotification(const std::string& path) {
    absl::MutexLock lock(&mu_);
    auto sent = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return notified_.count(path) > 0; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&sent), absl::Seconds(10))) return {false, "none"};
    return notified_[path].front();
  }

  RegistrationDialer Dialer() {
    return [this](const std::string& path, absl::Duration, const std::function<bool()>&)
               -> absl::StatusOr<std::unique_ptr<RegistrationClient>> {
      absl::MutexLock lock(&mu_);
      if (infos_.count(path) == 0) return absl::DeadlineExceededError("context deadline exceeded");
      return std::make_unique<Client>(this, path);
    };
  }

 private:
  class Client : public RegistrationClient {
   public:
    Client(FakeSockets* sockets, std::string path) : sockets_(sockets), path_(std::move(path)) {}
    absl::StatusOr<RegistrationInfo> GetInfo(absl::Duration) override {
      absl::MutexLock lock(&sockets_->mu_);
      return sockets_->infos_[path_];
    }
    absl::Status NotifyRegistrationStatus(bool registered, const std::string& error,
                                          absl::Duration) override {
      absl::MutexLock lock(&sockets_->mu_);
      sockets_->notified_[path_].push_back({registered, error});
      return absl::OkStatus();
    }

   private:
    FakeSockets* const sockets_;
    const std::string path_;
  };

  absl::Mutex mu_;
  std::map<std::string, RegistrationInfo> infos_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<std::pair<bool, std::string>>> notified_ ABSL_GUARDED_BY(mu_);
};

// Records calls as "Validate name endpoint", "Register ...", "DeRegister ...".
class RecordingHandler : public PluginHandler {
 public:
  absl::Status ValidatePlugin(const std::string& name, const std::string& endpoint,
                              const std::vector<std::string>& versions) override {
    Record("Validate " + name + " " + endpoint);
    return validate_error_;
  }
  absl::Status RegisterPlugin(const std::string& name, const std::string& endpoint,
                              const std::vector<std::string>& versions) override {
    Record("Register " + name + " " + endpoint);
    return absl::OkStatus();
  }
  void DeRegisterPlugin(const std::string& name, const std::string& endpoint) override {
    Record("DeRegister " + name + " " + endpoint);
  }
  bool WaitForCalls(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return calls_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
  }
  std::vector<std::string> Calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  absl::Status validate_error_;

 private:
  void Record(std::string call) {
    absl::MutexLock lock(&mu_);
    calls_.push_back(std::move(call));
  }
  absl::Mutex mu_;
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
};

class PluginManagerTest : public testing::Test {
 protected:
  std::unique_ptr<PluginManager> NewManager() {
    PluginManagerOptions o;
    o.dir = dir_.Join("plugins_registry");
    o.period = absl::Milliseconds(20);
    o.operations.initial_retry_backoff = absl::Seconds(30);  // one attempt per test
    return std::make_unique<PluginManager>(o, sockets_.Dialer());
  }
  // Serves `info` on a new socket `name` of the registry directory.
  std::string AddSocket(const std::string& name, RegistrationInfo info) {
    const std::string path = dir_.Join("plugins_registry/" + name);
    sockets_.Serve(path, std::move(info));
    MakeSocketFile(path);
    return path;
  }

  TempDir dir_;
  FakeSockets sockets_;
  RecordingHandler devices_;
  RecordingHandler dra_;
};

TEST_F(PluginManagerTest, EachTypeRegistersThroughItsOwnHandler) {
  auto pm = NewManager();
  ASSERT_OK(pm->AddHandler(kDevicePluginType, &devices_));
  ASSERT_OK(pm->AddHandler(kDRAPluginType, &dra_));
  ASSERT_OK(pm->Start());
  const std::string dp =
      AddSocket("gpu.sock", {"DevicePlugin", "example.com/gpu", "", {"v1beta1"}});
  const std::string drv = AddSocket(
      "driver-reg.sock", {"DRAPlugin", "driver.example.com", "/x/dra.sock", {"v1.DRAPlugin"}});
  EXPECT_EQ(sockets_.WaitNotification(dp), std::make_pair(true, std::string()));
  EXPECT_EQ(sockets_.WaitNotification(drv), std::make_pair(true, std::string()));
  // An empty endpoint is the registration socket itself.
  EXPECT_THAT(devices_.Calls(),
              ElementsAre("Validate example.com/gpu " + dp, "Register example.com/gpu " + dp));
  EXPECT_THAT(dra_.Calls(), ElementsAre("Validate driver.example.com /x/dra.sock",
                                        "Register driver.example.com /x/dra.sock"));
  EXPECT_THAT(pm->RegisteredSockets(), UnorderedElementsAre(dp, drv));

  // A removed socket is deregistered from the handler that registered it.
  std::filesystem::remove(drv);
  ASSERT_TRUE(dra_.WaitForCalls(3));
  EXPECT_EQ(dra_.Calls()[2], "DeRegister driver.example.com /x/dra.sock");
  EXPECT_THAT(pm->RegisteredSockets(), ElementsAre(dp));
  EXPECT_EQ(devices_.Calls().size(), 2u);
  pm->Stop();
}

TEST_F(PluginManagerTest, ATypeWithoutAHandlerIsToldSo) {
  auto pm = NewManager();
  ASSERT_OK(pm->AddHandler(kDevicePluginType, &devices_));
  ASSERT_OK(pm->Start());
  const std::string csi = AddSocket("csi.sock", {"CSIPlugin", "csi.example.com", "", {"1.0.0"}});
  EXPECT_EQ(sockets_.WaitNotification(csi),
            std::make_pair(false,
                           "RegisterPlugin error -- no handler registered for plugin "
                           "type: CSIPlugin at socket " +
                               csi));
  EXPECT_TRUE(devices_.Calls().empty());
  EXPECT_TRUE(pm->RegisteredSockets().empty());
}

TEST_F(PluginManagerTest, AValidationFailureIsSentToThePlugin) {
  devices_.validate_error_ = absl::InvalidArgumentError("bad name");
  auto pm = NewManager();
  ASSERT_OK(pm->AddHandler(kDevicePluginType, &devices_));
  ASSERT_OK(pm->Start());
  const std::string p = AddSocket("p.sock", {"DevicePlugin", "gpu", "", {"v1beta1"}});
  EXPECT_EQ(sockets_.WaitNotification(p),
            std::make_pair(false, std::string("RegisterPlugin error -- plugin validation failed "
                                              "with err: bad name")));
  EXPECT_THAT(devices_.Calls(), ElementsAre("Validate gpu " + p));
  EXPECT_TRUE(pm->RegisteredSockets().empty());
}

TEST_F(PluginManagerTest, HandlersAreAddedOnceAndBeforeStart) {
  auto pm = NewManager();
  ASSERT_OK(pm->AddHandler(kDevicePluginType, &devices_));
  EXPECT_EQ(pm->AddHandler(kDevicePluginType, &dra_).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_OK(pm->Start());
  EXPECT_TRUE(std::filesystem::is_directory(dir_.Join("plugins_registry")));
  EXPECT_EQ(pm->AddHandler(kDRAPluginType, &dra_).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(pm->Start().code(), absl::StatusCode::kFailedPrecondition);
  pm->Stop();
  pm->Stop();
}

TEST_F(PluginManagerTest, StartFailsWhenTheDirectoryCannotBeCreated) {
  std::ofstream(dir_.Join("file")) << "x";
  PluginManagerOptions o;
  o.dir = dir_.Join("file/plugins_registry");
  PluginManager pm(o, sockets_.Dialer());
  const absl::Status s = pm.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("error (re-)creating root " + o.dir + ": "));
}

}  // namespace
}  // namespace devmgr::pluginmanager
