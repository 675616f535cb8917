// Out-of-process tests: `devmgr sample-plugin` (the binary named by
// DEVMGR_BIN, as ctest sets it) against the fake kubelet, checking what the
// scenario runner and the conformance suite rely on: the call-log file, the
// control file, exit faults and a clean SIGTERM. Skipped without DEVMGR_BIN.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "plugin/fake_kubelet_testutil.h"

extern char** environ;

namespace devmgr::plugin {
namespace {

using testing_util::Dial;
using testing_util::FakeKubelet;
using testing_util::kTimeout;

class SamplePluginProcessTest : public testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("DEVMGR_BIN");
    if (bin == nullptr || access(bin, X_OK) != 0) GTEST_SKIP() << "DEVMGR_BIN not set or missing";
    bin_ = bin;
    char tmpl[] = "/tmp/dmppXXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }

  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      WaitExit(kTimeout);
    }
    kubelet_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  void Spawn(const std::string& yaml) {
    { std::ofstream(dir_ + "/p.yaml") << yaml; }
    std::vector<std::string> args = {
        bin_,         "sample-plugin",       "--config",  dir_ + "/p.yaml",  "--dir", dir_,
        "--call-log", dir_ + "/calls.jsonl", "--control", dir_ + "/control", "-v",    "2"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, (dir_ + "/stderr").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_EQ(posix_spawn(&pid_, bin_.c_str(), &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  }

  // Waits for the child to exit; returns its wait status, or -1 on timeout.
  int WaitExit(absl::Duration timeout) {
    if (pidfd_ >= 0) {
      pollfd p{pidfd_, POLLIN, 0};
      poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout)));
    }
    int status = 0;
    const pid_t r = waitpid(pid_, &status, pidfd_ >= 0 ? WNOHANG : 0);
    if (r != pid_) return -1;
    pid_ = -1;
    if (pidfd_ >= 0) close(pidfd_);
    pidfd_ = -1;
    return status;
  }

  std::vector<nlohmann::json> CallLog() {
    std::vector<nlohmann::json> out;
    std::ifstream in(dir_ + "/calls.jsonl");
    std::string line;
    while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
    return out;
  }

  std::string Stderr() {
    std::ifstream in(dir_ + "/stderr");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::string bin_;
  std::string dir_;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  std::unique_ptr<FakeKubelet> kubelet_;
};

constexpr char kConfig[] = R"(
resource: example.com/gpu
devices: [{id: gpu-0, numa: [0]}, {id: gpu-1, numa: [1]}]
allocate: {envs: {VISIBLE: "{{.DeviceIDs}}"}}
)";

TEST_F(SamplePluginProcessTest, RegistersLogsCallsAndFollowsTheControlFile) {
  kubelet_ = std::make_unique<FakeKubelet>(dir_);
  kubelet_->Start();
  Spawn(kConfig);
  auto first = kubelet_->WaitForUpdate(0, 1);
  ASSERT_TRUE(first.has_value()) << Stderr();
  EXPECT_EQ(first->devices_size(), 2);
  { std::ofstream(dir_ + "/control", std::ios::app) << "health gpu-1 Unhealthy\n"; }
  auto second = kubelet_->WaitForUpdate(0, 2);
  ASSERT_TRUE(second.has_value()) << Stderr();
  EXPECT_EQ(second->devices(1).health(), "Unhealthy");

  kill(pid_, SIGTERM);
  const int status = WaitExit(kTimeout);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << Stderr();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/example.com-gpu.sock"));
  const std::vector<nlohmann::json> log = CallLog();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0]["method"], "GetDevicePluginOptions");
  EXPECT_EQ(log[0]["kind"], "received");
  bool saw_register = false;
  for (const nlohmann::json& j : log) {
    if (j["method"] != "Register") continue;
    saw_register = true;
    EXPECT_EQ(j["kind"], "sent");
    EXPECT_EQ(j["args"]["endpoint"], "example.com-gpu.sock");
    EXPECT_FALSE(j.contains("error"));
  }
  EXPECT_TRUE(saw_register);
}

TEST_F(SamplePluginProcessTest, ExitFaultEndsTheProcessWithItsCode) {
  kubelet_ = std::make_unique<FakeKubelet>(dir_);
  kubelet_->Start();
  Spawn(std::string(kConfig) + "faults: {allocate: {exit: 42}}\n");
  ASSERT_TRUE(kubelet_->WaitForUpdate(0, 1).has_value()) << Stderr();
  auto stub = v1beta1::DevicePlugin::NewStub(Dial(dir_ + "/example.com-gpu.sock"));
  v1beta1::AllocateRequest req;
  req.add_container_requests()->add_devices_ids("gpu-0");
  v1beta1::AllocateResponse resp;
  grpc::ClientContext ctx;
  EXPECT_FALSE(stub->Allocate(&ctx, req, &resp).ok());
  const int status = WaitExit(kTimeout);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 42);
  const std::vector<nlohmann::json> log = CallLog();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back()["method"], "Allocate");
  EXPECT_EQ(log.back()["args"]["container_requests"][0]["devices_ids"][0], "gpu-0");
}

}  // namespace
}  // namespace devmgr::plugin
