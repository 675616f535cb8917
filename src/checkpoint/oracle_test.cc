// Differential tests against the checkpoint reference tool, the kubelet's
// own checkpoint code (tests/checkpoint-oracle): random files it writes,
// files devmgr writes, the golden corpus. ctest builds the tool first
// (checkpoint_oracle.build) and passes it as $DEVMGR_ORACLE; run by hand,
// the test binary looks where that build puts it. A missing tool fails the
// tests with the reason; only a machine without Go skips them, saying so.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_testutil.h"
#include "checkpoint/incremental_encoder.h"
#include "common/status_testutil.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace devmgr::checkpoint {
namespace {

std::string OraclePath() {
  if (const char* env = std::getenv("DEVMGR_ORACLE"); env != nullptr && *env != '\0') return env;
  return DEVMGR_DEFAULT_ORACLE;
}

// Why the tool cannot run here when the build step skipped (no Go): the
// reason it wrote beside the tool, or "" when it did not skip.
std::string SkipReason(const std::string& oracle) {
  const std::string file = oracle.substr(0, oracle.rfind('/') + 1) + "SKIPPED";
  std::ifstream in(file);
  std::ostringstream reason;
  reason << in.rdbuf();
  return reason.str();
}

// Runs argv (no shell: paths may hold spaces) and returns its stdout; its
// stderr goes to the test's. Sets *rc to the exit status (-1: no exit).
std::string RunProcess(const std::vector<std::string>& argv, int* rc) {
  int fds[2];
  *rc = -1;
  if (::pipe(fds) != 0) return "";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  if (pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status)) *rc = WEXITSTATUS(status);
  return out;
}

class OracleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string oracle = OraclePath();
    if (::access(oracle.c_str(), X_OK) != 0) {
      if (const std::string reason = SkipReason(oracle); !reason.empty()) {
        GTEST_SKIP() << "SKIPPED, the checkpoint reference tool cannot be built: " << reason;
      }
      FAIL() << "the checkpoint reference tool " << oracle
             << " is missing: ctest builds it first (test checkpoint_oracle.build, "
                "tests/checkpoint-oracle/build.sh; needs Go and the Go module proxy); "
                "see that test's output for why it is not there";
    }
    oracle_ = oracle;
    char tmpl[] = "/tmp/devmgr-oracle-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) {
      std::remove((dir_ + "/f.json").c_str());
      ::rmdir(dir_.c_str());
    }
  }
  // Runs the tool with `words` (space-separated) and then `files`.
  std::string Oracle(const std::string& words, std::vector<std::string> files, int* rc) const {
    std::vector<std::string> argv = {oracle_};
    std::istringstream in(words);
    for (std::string w; in >> w;) argv.push_back(w);
    argv.insert(argv.end(), files.begin(), files.end());
    return RunProcess(argv, rc);
  }
  std::string oracle_;
  std::string dir_;
};

TEST_F(OracleTest, RandomFilesAgree) {
  struct Shape {
    const char* args;
  };
  const Shape shapes[] = {
      {"--pods 3"},
      {"--pods 5 --containers 2 --resources 3 --numa 4 --devs 3"},
      {"--pods 4 --unicode"},
      {"--pods 2 --numa 0 --devs 1"},
      {"--pods 3 --format v1"},
      {"--pods 3 --format v1 --unicode"},
      {"--pods 2 --allocresp-pad 300"},
      {"--pods 3 --corrupt"},
      {"--pods 3 --corrupt --format v1"},
      {"--pods 0"},
  };
  const std::string file = dir_ + "/f.json";
  int cases = 0;
  for (int seed = 1; seed <= 8; ++seed) {
    for (const Shape& shape : shapes) {
      int rc;
      const std::string bytes = Oracle(fmt::format("gen --seed {} {}", seed, shape.args), {}, &rc);
      ASSERT_EQ(rc, 0) << shape.args;
      std::ofstream(file, std::ios::binary) << bytes;
      const VerifyResult ours = Verify(bytes);
      ASSERT_TRUE(ours.parsed) << ours.error;
      const std::string fmt_flag = ours.format == FormatVersion::kV1 ? "v1" : "v2";
      const std::string compute = Oracle("compute --format " + fmt_flag, {file}, &rc);
      EXPECT_EQ(compute, std::to_string(ours.computed) + "\n") << seed << " " << shape.args;
      const std::string spew = Oracle("spew --format " + fmt_flag, {file}, &rc);
      const std::string our_spew = ours.format == FormatVersion::kV1
                                       ? SpewV1(ours.checkpoint.data_v1)
                                       : SpewV2(ours.checkpoint.data);
      EXPECT_EQ(spew, our_spew) << seed << " " << shape.args;
      Oracle("verify", {file}, &rc);
      EXPECT_EQ(rc == 0, ours.valid) << seed << " " << shape.args;
      // json.Marshal output re-encodes byte for byte.
      EXPECT_EQ(Encode(ours.checkpoint), bytes) << seed << " " << shape.args;
      ++cases;
    }
  }
  EXPECT_EQ(cases, 80);
}

TEST_F(OracleTest, FilesWeWriteVerifyWithTheOracle) {
  const std::string file = dir_ + "/f.json";
  for (int seed = 11; seed <= 14; ++seed) {
    int rc;
    const std::string gen = Oracle(fmt::format("gen --seed {} --pods 4 --unicode", seed), {}, &rc);
    auto cp = DecodeV2(gen);
    ASSERT_OK(cp);
    // Edit, re-checksum, write, and have Go verify it.
    cp->data.pod_device_entries->pop_back();
    (*cp->data.registered_devices)["example.com/<&>\xE2\x80\xA8"] =
        std::vector<std::string>{"a b", "\x01"};
    const std::string ours = Encode(MakeV2(cp->data));
    std::ofstream(file, std::ios::binary) << ours;
    const std::string out = Oracle("verify", {file}, &rc);
    EXPECT_EQ(rc, 0) << out;
  }
  // V1 written by us (convert --to v1 path).
  auto v1 = DecodeV1(testing::ReadFileOrDie(testing::TestDataDir() + "/v1-multi.json"));
  ASSERT_OK(v1);
  v1->checksum = ComputeChecksumV1(v1->data_v1);
  std::ofstream(file, std::ios::binary) << Encode(*v1);
  int rc;
  const std::string out = Oracle("verify --format v1", {file}, &rc);
  EXPECT_EQ(rc, 0) << out;
}

// The incremental encoder (what the manager writes with) through a series
// of edits of oracle-generated files: Go verifies every file it writes, and
// the bytes are those of the from-scratch encoder.
TEST_F(OracleTest, IncrementalWritesVerifyWithTheOracle) {
  const std::string file = dir_ + "/f.json";
  int written = 0;
  for (int seed = 21; seed <= 24; ++seed) {
    int rc;
    const std::string gen =
        Oracle(fmt::format("gen --seed {} --pods 6 --containers 2 --unicode", seed), {}, &rc);
    auto cp = DecodeV2(gen);
    ASSERT_OK(cp);
    CheckpointData data = cp->data;
    IncrementalEncoder enc;
    for (int step = 0; step < 4; ++step) {
      auto& entries = *data.pod_device_entries;
      if (step == 1 && !entries.empty()) entries.erase(entries.begin());
      if (step == 2 && !entries.empty())
        entries.push_back(entries.front()), entries.back().pod_uid += "-x";
      if (step == 3)
        (*data.registered_devices)["example.com/<&>"] = std::vector<std::string>{"a b", "\x01"};
      enc.SetEntries(data.pod_device_entries);
      enc.SetRegisteredDevices(data.registered_devices);
      const IncrementalEncoder::Output out = enc.Render();
      ASSERT_EQ(std::string(out.bytes), Encode(MakeV2(data))) << seed << " " << step;
      std::ofstream(file, std::ios::binary) << out.bytes;
      const std::string verdict = Oracle("verify", {file}, &rc);
      EXPECT_EQ(rc, 0) << seed << " " << step << ": " << verdict;
      const std::string compute = Oracle("compute --format v2", {file}, &rc);
      EXPECT_EQ(compute, std::to_string(out.checksum) + "\n");
      ++written;
    }
  }
  EXPECT_EQ(written, 16);
}

TEST_F(OracleTest, GoldenSelftestAgrees) {
  int rc;
  const std::string out = Oracle("selftest", {testing::TestDataDir()}, &rc);
  EXPECT_EQ(rc, 0) << out;
}

}  // namespace
}  // namespace devmgr::checkpoint
