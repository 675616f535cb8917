// Differential tests against the Go checksum oracle
// (docs/checkpoint_format.md). They run only when the oracle binary exists
// ($DEVMGR_ORACLE or /tmp/oracle/bin/checksum-oracle) and skip otherwise.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_testutil.h"
#include "checkpoint/incremental_encoder.h"
#include "common/status_testutil.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace devmgr::checkpoint {
namespace {

std::string OraclePath() {
  if (const char* env = std::getenv("DEVMGR_ORACLE"); env != nullptr && *env != '\0') {
    return ::access(env, X_OK) == 0 ? env : "";
  }
  const char* def = "/tmp/oracle/bin/checksum-oracle";
  return ::access(def, X_OK) == 0 ? def : "";
}

// Runs a shell command; returns stdout and sets *rc to its exit status.
std::string Shell(const std::string& cmd, int* rc) {
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) {
    *rc = -1;
    return out;
  }
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  const int status = ::pclose(f);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

class OracleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    oracle_ = OraclePath();
    if (oracle_.empty()) GTEST_SKIP() << "checksum oracle not present";
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
      const std::string bytes =
          Shell(fmt::format("{} gen --seed {} {}", oracle_, seed, shape.args), &rc);
      ASSERT_EQ(rc, 0) << shape.args;
      std::ofstream(file, std::ios::binary) << bytes;
      const VerifyResult ours = Verify(bytes);
      ASSERT_TRUE(ours.parsed) << ours.error;
      const std::string fmt_flag = ours.format == FormatVersion::kV1 ? "v1" : "v2";
      const std::string compute =
          Shell(fmt::format("{} compute --format {} {}", oracle_, fmt_flag, file), &rc);
      EXPECT_EQ(compute, std::to_string(ours.computed) + "\n") << seed << " " << shape.args;
      const std::string spew =
          Shell(fmt::format("{} spew --format {} {}", oracle_, fmt_flag, file), &rc);
      const std::string our_spew = ours.format == FormatVersion::kV1
                                       ? SpewV1(ours.checkpoint.data_v1)
                                       : SpewV2(ours.checkpoint.data);
      EXPECT_EQ(spew, our_spew) << seed << " " << shape.args;
      Shell(fmt::format("{} verify {}", oracle_, file), &rc);
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
    const std::string gen =
        Shell(fmt::format("{} gen --seed {} --pods 4 --unicode", oracle_, seed), &rc);
    auto cp = DecodeV2(gen);
    ASSERT_OK(cp);
    // Edit, re-checksum, write, and have Go verify it.
    cp->data.pod_device_entries->pop_back();
    (*cp->data.registered_devices)["example.com/<&>\xE2\x80\xA8"] =
        std::vector<std::string>{"a b", "\x01"};
    const std::string ours = Encode(MakeV2(cp->data));
    std::ofstream(file, std::ios::binary) << ours;
    const std::string out = Shell(fmt::format("{} verify {}", oracle_, file), &rc);
    EXPECT_EQ(rc, 0) << out;
  }
  // V1 written by us (convert --to v1 path).
  auto v1 = DecodeV1(testing::ReadFileOrDie(testing::TestDataDir() + "/v1-multi.json"));
  ASSERT_OK(v1);
  v1->checksum = ComputeChecksumV1(v1->data_v1);
  std::ofstream(file, std::ios::binary) << Encode(*v1);
  int rc;
  const std::string out = Shell(fmt::format("{} verify --format v1 {}", oracle_, file), &rc);
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
    const std::string gen = Shell(
        fmt::format("{} gen --seed {} --pods 6 --containers 2 --unicode", oracle_, seed), &rc);
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
      const std::string verdict = Shell(fmt::format("{} verify {}", oracle_, file), &rc);
      EXPECT_EQ(rc, 0) << seed << " " << step << ": " << verdict;
      const std::string compute =
          Shell(fmt::format("{} compute --format v2 {}", oracle_, file), &rc);
      EXPECT_EQ(compute, std::to_string(out.checksum) + "\n");
      ++written;
    }
  }
  EXPECT_EQ(written, 16);
}

TEST_F(OracleTest, GoldenSelftestAgrees) {
  int rc;
  const std::string out =
      Shell(fmt::format("{} selftest {} 2>&1", oracle_, testing::TestDataDir()), &rc);
  EXPECT_EQ(rc, 0) << out;
}

}  // namespace
}  // namespace devmgr::checkpoint
