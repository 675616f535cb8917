#include "scenario/steps/step_interpreter.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/status_util.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace devmgr::scenario {
namespace {

// A backend that records the primitives the interpreter uses, and refuses
// the one named `refuse`.
class RecordingBackend final : public StepBackend {
 public:
  explicit RecordingBackend(PluginHost* host) : host_(host) {}

  std::vector<std::string> calls;
  std::string refuse;
  // The kubelet start primitive (StartKubelet, RestartKubelet, RebootNode)
  // whose kubelet fails its start.
  std::string fail_start;
  bool running = true;

  bool KubeletRunning() const override { return running; }
  absl::Status StopKubelet() override { return Record("StopKubelet"); }
  absl::Status StartKubelet(bool wait, absl::Duration) override {
    return Record("StartKubelet", Wait(wait));
  }
  absl::Status RestartKubelet(bool wait, absl::Duration) override {
    return Record("RestartKubelet", Wait(wait));
  }
  absl::Status RebootNode(const std::vector<PluginHost*>& stopped, bool wait,
                          absl::Duration) override {
    return Record("RebootNode", fmt::format("{} {}", stopped.size(), Wait(wait)));
  }
  absl::Status AdvanceClock(absl::Duration d) override {
    return Record("AdvanceClock", absl::FormatDuration(d));
  }
  absl::StatusOr<node::NodeResources> UpdateNodeStatus() override {
    DEVMGR_RETURN_IF_ERROR(Record("UpdateNodeStatus"));
    node::NodeResources nr;
    nr.capacity["example.com/dev"] = 2;
    nr.allocatable["example.com/dev"] = 1;
    return nr;
  }
  absl::Status AdmitPod(const pod::Pod& pod, absl::Duration,
                        std::vector<std::string>* notes) override {
    notes->push_back("admitted " + pod.name);
    return Record("AdmitPod", pod.name);
  }
  absl::Status DeletePod(const std::string& ref) override { return Record("DeletePod", ref); }
  absl::Status SetPodPhase(const std::string& ref, pod::Phase) override {
    return Record("SetPodPhase", ref);
  }
  absl::Status RestartContainer(const std::string& ref, const std::string& container,
                                absl::Duration) override {
    return Record("RestartContainer", ref + " " + container);
  }
  std::string PodUidOr(const std::string& ref) override { return "uid-of-" + ref; }
  absl::StatusOr<PluginHost*> Host(const std::string& name) override {
    DEVMGR_RETURN_IF_ERROR(Record("Host", name));
    return host_;
  }
  std::vector<PluginHost*> Hosts() override {
    calls.push_back("Hosts");
    return {host_};
  }
  absl::Status StartPlugin(PluginHost& h, bool wait) override {
    return Record("StartPlugin", h.spec().name + " " + Wait(wait));
  }
  absl::Status WaitRegistration(const std::string& resource, std::optional<int64_t> count,
                                PluginHost*, absl::Duration) override {
    return Record("WaitRegistration", resource);
  }
  absl::Status WaitDevices(const DevicesWanted& want, absl::Duration, const std::string&) override {
    return Record("WaitDevices", want.resource);
  }
  absl::Status WaitHealthSeen(PluginHost& h, const std::string& device, const std::string& health,
                              absl::Duration) override {
    return Record("WaitHealthSeen", h.spec().name + " " + device + " " + health);
  }
  std::string CheckpointPath(CheckpointFile f) override {
    return f == CheckpointFile::kDra ? "/dra" : "/cp";
  }
  std::optional<std::string> ReadCheckpoint(CheckpointFile f) override {
    calls.push_back(std::string("ReadCheckpoint ") + CheckpointFileName(f));
    return checkpoint;
  }
  absl::Status WriteCheckpoint(CheckpointFile f, const std::string& bytes) override {
    written = bytes;
    return Record("WriteCheckpoint", CheckpointFileName(f));
  }
  absl::Status RemoveCheckpoint(CheckpointFile f) override {
    return Record("RemoveCheckpoint", CheckpointFileName(f));
  }
  absl::Status TruncateCheckpoint(CheckpointFile f, int64_t size) override {
    return Record("TruncateCheckpoint", fmt::format("{} {}", CheckpointFileName(f), size));
  }
  absl::StatusOr<CommandResult> RunCommand(const std::string& command, absl::Duration) override {
    DEVMGR_RETURN_IF_ERROR(Record("RunCommand", command));
    return CommandResult{exit_code, {"out"}};
  }

  absl::Status ApplyObjects(const std::vector<nlohmann::json>& objects) override {
    std::string names;
    for (const nlohmann::json& o : objects)
      names += (names.empty() ? "" : ",") + o.value("kind", "");
    return Record("ApplyObjects", names);
  }
  absl::Status DeleteObject(const std::string& kind, const std::string& ns,
                            const std::string& name) override {
    return Record("DeleteObject", kind + " " + ns + "/" + name);
  }
  absl::Status InjectApiFaults(const std::vector<std::string>& specs) override {
    std::string joined;
    for (const std::string& f : specs) joined += (joined.empty() ? "" : ";") + f;
    return Record("InjectApiFaults", joined);
  }
  absl::Status WaitDriver(const std::string& driver, int64_t min_devices, PluginHost* h,
                          absl::Duration) override {
    return Record("WaitDriver", fmt::format("{} {} {}", driver, min_devices,
                                            h != nullptr ? h->spec().name : "-"));
  }

  std::optional<std::string> checkpoint = std::string("{\"Checksum\":17}");
  std::string written;
  int exit_code = 0;

 private:
  static std::string Wait(bool wait) { return wait ? "wait" : "nowait"; }
  absl::Status Record(const std::string& name, const std::string& args = "") {
    calls.push_back(args.empty() ? name : name + " " + args);
    if (name == refuse) return Refused("cannot " + name);
    if (name == fail_start) return KubeletStartFailed("checkpoint is corrupted");
    return absl::OkStatus();
  }

  PluginHost* host_;
};

class StepInterpreterTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/step-interpreter-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(mkdir((dir_ + "/plugins").c_str(), 0750), 0);
    PluginSpec spec;
    spec.name = "p";
    spec.resource = "example.com/dev";
    spec.sample_plugin_config = "resource: example.com/dev\n";
    HostEnv env;
    env.work_dir = dir_;
    env.plugin_dir = dir_;
    host_ = std::make_unique<PluginHost>(spec, env);
    ASSERT_TRUE(host_->Prepare().ok());
    backend_ = std::make_unique<RecordingBackend>(host_.get());
  }
  void TearDown() override {
    host_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  static Step Of(StepKind kind) {
    Step st;
    st.kind = kind;
    st.plugin = "p";
    st.pod_ref = "web";
    st.pod.name = "web";
    st.resource = "example.com/dev";
    st.device = "dev-0";
    st.health = "Unhealthy";
    st.control_line = "devices 3";
    st.command = "true";
    st.objects = {nlohmann::json{{"kind", "DeviceClass"}, {"metadata", {{"name", "c"}}}}};
    st.object_kind = "ResourceClaim";
    st.object_namespace = "default";
    st.object_name = "gpu";
    st.driver = "gpu.example.com";
    return st;
  }

  absl::Status Interpret(const Step& st) { return InterpretStep(st, timeouts_, *backend_, &r_); }

  std::string ControlFile() const {
    std::ifstream in(dir_ + "/plugins/p.control");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::string dir_;
  Timeouts timeouts_;
  std::unique_ptr<PluginHost> host_;
  std::unique_ptr<RecordingBackend> backend_;
  StepResult r_;
};

// Both backends implement every primitive (they are pure virtual); here
// every step kind is interpreted: it takes its primitives, not the
// interpreter's "no interpretation" error.
TEST_F(StepInterpreterTest, EveryStepKindIsInterpreted) {
  for (int k = static_cast<int>(StepKind::kAdmit); k <= static_cast<int>(StepKind::kCheck); ++k) {
    const StepKind kind = static_cast<StepKind>(k);
    backend_->calls.clear();
    EXPECT_TRUE(Interpret(Of(kind)).ok()) << StepKindName(kind);
    if (kind != StepKind::kCheck) {
      EXPECT_FALSE(backend_->calls.empty()) << StepKindName(kind);
    }
  }
}

TEST_F(StepInterpreterTest, RestartPluginIsStopThenStartAndWaitWhereAKubeletRuns) {
  Step st = Of(StepKind::kRestartPlugin);
  ASSERT_TRUE(Interpret(st).ok());
  EXPECT_EQ(backend_->calls, (std::vector<std::string>{"Host p", "StartPlugin p wait"}));
  backend_->calls.clear();
  backend_->running = false;
  ASSERT_TRUE(Interpret(st).ok());
  EXPECT_EQ(backend_->calls, (std::vector<std::string>{"Host p", "StartPlugin p nowait"}));
}

TEST_F(StepInterpreterTest, SetHealthWritesTheControlLineThenWaitsUntilSeen) {
  Step st = Of(StepKind::kSetHealth);
  ASSERT_TRUE(Interpret(st).ok());
  EXPECT_EQ(ControlFile(), "health dev-0 Unhealthy\n");
  EXPECT_EQ(backend_->calls,
            (std::vector<std::string>{"Host p", "WaitHealthSeen p dev-0 Unhealthy"}));
  backend_->calls.clear();
  st.wait = false;
  ASSERT_TRUE(Interpret(st).ok());
  EXPECT_EQ(backend_->calls, (std::vector<std::string>{"Host p"}));
}

TEST_F(StepInterpreterTest, ARefusalEndsTheStepWithItsReason) {
  backend_->refuse = "AdvanceClock";
  Step st = Of(StepKind::kAdvanceClock);
  st.advance = absl::Minutes(5);
  absl::Status s = Interpret(st);
  EXPECT_EQ(RefusalReason(s), "cannot AdvanceClock");
  EXPECT_EQ(backend_->calls, (std::vector<std::string>{"AdvanceClock 5m"}));
  EXPECT_EQ(RefusalReason(absl::FailedPreconditionError("cannot AdvanceClock")), std::nullopt);
  EXPECT_EQ(RefusalReason(absl::OkStatus()), std::nullopt);
}

TEST_F(StepInterpreterTest, AdvanceClockNotesTheNodeStatus) {
  Step st = Of(StepKind::kAdvanceClock);
  ASSERT_TRUE(Interpret(st).ok());
  EXPECT_EQ(r_.notes,
            (std::vector<std::string>{"node status: example.com/dev: capacity 2 allocatable 1"}));
}

TEST_F(StepInterpreterTest, StepsOnALiveKubeletFailWhileItIsStopped) {
  backend_->running = false;
  absl::Status s = Interpret(Of(StepKind::kAdmit));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "admit needs a running kubelet: it was stopped by stop_kubelet (add a start_kubelet "
            "step first)");
  EXPECT_TRUE(backend_->calls.empty());
}

TEST_F(StepInterpreterTest, RebootNodeStopsTheRunningPluginsFirst) {
  ASSERT_TRUE(Interpret(Of(StepKind::kRebootNode)).ok());
  // The host never started: nothing to stop, nothing to start again.
  EXPECT_EQ(backend_->calls, (std::vector<std::string>{"Hosts", "RebootNode 0 wait"}));
}

TEST_F(StepInterpreterTest, CheckpointEditsAreComputedOnceAndWrittenThroughTheBackend) {
  ASSERT_TRUE(Interpret(Of(StepKind::kCorruptCheckpoint)).ok());
  EXPECT_EQ(backend_->written, "{\"Checksum\":16}");
  backend_->checkpoint.reset();
  absl::Status s = Interpret(Of(StepKind::kCorruptCheckpoint));
  EXPECT_EQ(s.message(), "no kubelet_internal_checkpoint to corrupt at /cp");
  EXPECT_EQ(CorruptCheckpointBytes("{\"Checksum\": 93}"), "{\"Checksum\": 92}");
  // Never past the range of a uint32 (dra_manager_state): 4294967295 goes down.
  EXPECT_EQ(CorruptCheckpointBytes("{\"Checksum\":4294967295}"), "{\"Checksum\":4294967294}");
  EXPECT_EQ(CorruptCheckpointBytes("{\"Checksum\":4294967290}"), "{\"Checksum\":4294967291}");
  EXPECT_EQ(CorruptCheckpointBytes("abc"), "aBc");

  Step st = Of(StepKind::kWriteCheckpoint);
  st.checkpoint = CheckpointSpec{};
  st.checkpoint->entries.push_back(
      CheckpointEntrySpec{"web", "c", "example.com/dev", {{0, {"d"}}}});
  ASSERT_TRUE(Interpret(st).ok());
  EXPECT_NE(backend_->written.find("uid-of-web"), std::string::npos) << backend_->written;
  ASSERT_EQ(r_.notes.size(), 1u);
  EXPECT_NE(r_.notes[0].find("(valid)"), std::string::npos) << r_.notes[0];
}

TEST_F(StepInterpreterTest, CheckpointStepsEditTheFileTheyName) {
  for (StepKind kind : {StepKind::kDeleteCheckpoint, StepKind::kTruncateCheckpoint,
                        StepKind::kCorruptCheckpoint, StepKind::kWriteCheckpoint}) {
    Step st = Of(kind);
    st.checkpoint_file = CheckpointFile::kDra;
    st.truncate_to = 4;
    st.content = "{not json";
    ASSERT_TRUE(Interpret(st).ok()) << StepKindName(kind);
  }
  EXPECT_EQ(backend_->calls, (std::vector<std::string>{
                                 "RemoveCheckpoint dra_manager_state",
                                 "TruncateCheckpoint dra_manager_state 4",
                                 "ReadCheckpoint dra_manager_state",
                                 "WriteCheckpoint dra_manager_state",
                                 "WriteCheckpoint dra_manager_state",
                             }));
  EXPECT_EQ(backend_->written, "{not json");
  backend_->checkpoint.reset();
  Step st = Of(StepKind::kCorruptCheckpoint);
  st.checkpoint_file = CheckpointFile::kDra;
  EXPECT_EQ(Interpret(st).message(), "no dra_manager_state to corrupt at /dra");
}

// A kubelet start that fails is a step failure naming expect_error; with
// expect_error it passes when the error matches, and fails at the step's
// line when it does not, or when the kubelet starts.
TEST_F(StepInterpreterTest, AFailedKubeletStartIsExpectedWithExpectError) {
  EXPECT_EQ(KubeletStartError(KubeletStartFailed("boom")), "boom");
  EXPECT_EQ(KubeletStartError(absl::FailedPreconditionError("boom")), std::nullopt);
  EXPECT_EQ(KubeletStartError(absl::OkStatus()), std::nullopt);

  backend_->fail_start = "RestartKubelet";
  Step st = Of(StepKind::kRestartKubelet);
  st.loc = Location{"s.yaml", 7, 5};
  absl::Status s = Interpret(st);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "the kubelet did not start: checkpoint is corrupted (expect it with expect_error: "
            "REGEX)");

  st.expect_error = "is corrupted$";
  ASSERT_TRUE(Interpret(st).ok());
  EXPECT_EQ(r_.notes.back(), "the kubelet did not start, as expected: checkpoint is corrupted");
  EXPECT_TRUE(r_.failures.empty());

  st.expect_error = "unexpected end of JSON";
  s = Interpret(st);
  EXPECT_EQ(s.message(),
            "the kubelet's start failed otherwise than expected: checkpoint is corrupted");
  ASSERT_EQ(r_.failures.size(), 1u);
  EXPECT_EQ(r_.failures[0].loc.ToString(), "s.yaml:7:5");
  EXPECT_EQ(r_.failures[0].expected, "regex /unexpected end of JSON/");
  EXPECT_EQ(r_.failures[0].actual, "checkpoint is corrupted");

  // start_kubelet and reboot_node take expect_error the same way.
  backend_->fail_start = "StartKubelet";
  Step start = Of(StepKind::kStartKubelet);
  start.expect_error = "corrupted";
  EXPECT_TRUE(Interpret(start).ok());
  backend_->fail_start = "RebootNode";
  Step reboot = Of(StepKind::kRebootNode);
  reboot.expect_error = "corrupted";
  EXPECT_TRUE(Interpret(reboot).ok());

  backend_->fail_start.clear();
  r_.failures.clear();
  s = Interpret(start);
  EXPECT_EQ(s.message(), "the kubelet started; its start was expected to fail with /corrupted/");
  ASSERT_EQ(r_.failures.size(), 1u);
  EXPECT_EQ(r_.failures[0].actual, "the kubelet started");

  // Other errors stay what they are.
  backend_->refuse = "RestartKubelet";
  EXPECT_EQ(RefusalReason(Interpret(st)), "cannot RestartKubelet");
}

TEST_F(StepInterpreterTest, ACommandsExitCodeIsCheckedAndItsOutputNoted) {
  backend_->exit_code = 3;
  absl::Status s = Interpret(Of(StepKind::kRun));
  EXPECT_EQ(s.message(), "command exited with 3 (expected 0)");
  EXPECT_EQ(r_.notes, (std::vector<std::string>{"| out"}));
  ASSERT_EQ(r_.failures.size(), 1u);
  EXPECT_EQ(r_.failures[0].what, "exit code");
}

TEST_F(StepInterpreterTest, DraStepsTakeTheirPrimitives) {
  ASSERT_TRUE(Interpret(Of(StepKind::kApply)).ok());
  ASSERT_TRUE(Interpret(Of(StepKind::kDeleteObject)).ok());
  Step fault = Of(StepKind::kApiFault);
  fault.api_faults = {"method=GET,error=500", "method=POST,delay=1s"};
  ASSERT_TRUE(Interpret(fault).ok());
  Step wait = Of(StepKind::kWaitDriver);
  wait.min_devices = 4;
  ASSERT_TRUE(Interpret(wait).ok());
  wait.plugin.clear();  // a driver no plugin of the scenario runs
  ASSERT_TRUE(Interpret(wait).ok());
  EXPECT_EQ(backend_->calls,
            (std::vector<std::string>{
                "ApplyObjects DeviceClass", "DeleteObject ResourceClaim default/gpu",
                "InjectApiFaults method=GET,error=500;method=POST,delay=1s", "Host p",
                "WaitDriver gpu.example.com 4 p", "WaitDriver gpu.example.com 4 -"}));
  backend_->calls.clear();
  backend_->running = false;
  EXPECT_EQ(Interpret(wait).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(backend_->calls.empty());
}

}  // namespace
}  // namespace devmgr::scenario
