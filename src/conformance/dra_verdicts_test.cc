// The DRA catalogue's exact verdicts: the reference DRA driver (in process)
// passes every check when it behaves, and each misbehaviour switch of
// docs/sample-dra-driver.md fails exactly the check that judges it, at the
// check's level; the checks that cannot judge without it are skipped with
// a pointer to it. Windows are shortened where a misbehaviour outlasts one.
#include <functional>
#include <map>
#include <set>
#include <string>

#include "common/source_dir_testutil.h"
#include "common/status_testutil.h"
#include "conformance/conformance_testutil.h"
#include "conformance/dra_catalogue.h"
#include "conformance/dra_runner.h"
#include "conformance/dra_testutil.h"
#include "conformance/report.h"
#include "draplugin/config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::conformance {
namespace {

using ::testing::HasSubstr;
using Verdicts = std::map<std::string, Status>;

// The example config, advertising (and so serving) the v1alpha1 health
// service, so that dra.health.stream has a stream to judge.
draplugin::Config Reference() {
  absl::StatusOr<draplugin::Config> c =
      draplugin::LoadConfig(devmgr::testutil::SourcePath("examples/sample-dra-driver.yaml"));
  EXPECT_OK(c.status());
  if (!c.ok()) return draplugin::Config{};
  c->supported_versions.push_back(draplugin::kHealthV1alpha1);
  return *c;
}

// Generous windows (the call deadline is the kubelet's): a well-behaved
// driver ends every wait early, and a loaded machine does not turn a pass
// into a failure.
DraTimeouts Windows() {
  DraTimeouts t;
  t.register_within = absl::Seconds(60);
  t.publish_within = absl::Seconds(60);
  t.stop_grace = absl::Seconds(1);
  return t;
}

RunReport RunDra(const draplugin::Config& config, const DraTimeouts& t = Windows(),
                 const std::string& focus = "") {
  testutil::InProcessDraDriver target(config);
  testutil::TempDir dir;
  DraRunOptions o;
  o.dir = dir.path();
  o.timeouts = t;
  o.focus = focus;
  absl::StatusOr<RunReport> r = RunDraConformance(target, o);
  EXPECT_OK(r.status());
  return r.ok() ? *r : RunReport{};
}

// The reference driver and windows, with the switch that breaks exactly
// check `id` (docs/conformance.md, "The catalogue"), the windows fitted to it.
struct Rig {
  draplugin::Config config;
  DraTimeouts timeouts;
};

const std::map<std::string, std::function<void(Rig&)>>& Breakers() {
  static const auto* const m = new std::map<std::string, std::function<void(Rig&)>>{
      {"dra.registration", [](Rig& s) { s.config.misbehave.registration_type = "DevicePlugin"; }},
      {"dra.serves-first",
       [](Rig& s) { s.config.misbehave.register_before_serving = absl::Seconds(5); }},
      {"dra.services", [](Rig& s) { s.config.supported_versions.clear(); }},
      {"dra.slices",
       [](Rig& s) {
         s.config.misbehave.invalid_slice = true;
         s.timeouts.publish_within = absl::Seconds(1);
       }},
      {"dra.prepare.answers-all",
       [](Rig& s) { s.config.misbehave.omit_claims = {"conformance-answers"}; }},
      {"dra.prepare.devices", [](Rig& s) { s.config.misbehave.prepare_wrong_device = true; }},
      {"dra.prepare.idempotent", [](Rig& s) { s.config.misbehave.prepare_not_idempotent = true; }},
      {"dra.unprepare.unknown", [](Rig& s) { s.config.misbehave.unprepare_unknown_fails = true; }},
      {"dra.prepare.after-unprepare",
       [](Rig& s) { s.config.misbehave.prepare_after_unprepare_fails = true; }},
      {"dra.prepare.batched", [](Rig& s) { s.config.misbehave.batch_mixes_claims = true; }},
      {"dra.prepare.replaced", [](Rig& s) { s.config.misbehave.prepare_ignores_uid = true; }},
      {"dra.unprepare.deleted", [](Rig& s) { s.config.misbehave.unprepare_reads_claim = true; }},
      {"dra.prepare.cdi",
       [](Rig& s) { s.config.misbehave.cdi_spec = draplugin::CdiSpecMode::kSkip; }},
      {"dra.calls.timely",
       [](Rig& s) {
         s.config.misbehave.prepare_delay = absl::Milliseconds(1500);
         s.timeouts.call = absl::Milliseconds(500);
       }},
      {"dra.prepare.failed-no-leak",
       [](Rig& s) { s.config.misbehave.leak_spec_on_failure = true; }},
      {"dra.prepare.multi-driver", [](Rig& s) { s.config.misbehave.foreign_results_fail = true; }},
      {"dra.health.stream", [](Rig& s) { s.config.misbehave.health_omit_devices = {"gpu-1"}; }},
      {"dra.restart.driver", [](Rig& s) { s.config.misbehave.restored_unprepare_fails = true; }},
      {"dra.restart.unprepare",
       [](Rig& s) { s.config.misbehave.restored_unprepare_needs_prepare = true; }},
      {"dra.restart.no-leak",
       [](Rig& s) { s.config.misbehave.restored_unprepare_keeps_spec = true; }},
      {"dra.restart.reboot", [](Rig& s) { s.config.misbehave.reprepare_skips_spec = true; }},
      {"dra.slices.wiped",
       [](Rig& s) {
         s.config.misbehave.publish_only_first_start = true;
         s.timeouts.publish_within = absl::Seconds(1);
       }},
  };
  return *m;
}

Rig Broken(const std::string& id) {
  Rig s{Reference(), Windows()};
  auto it = Breakers().find(id);
  EXPECT_NE(it, Breakers().end()) << id;
  if (it != Breakers().end()) it->second(s);
  return s;
}

RunReport RunDra(const Rig& s, const std::string& focus = "") {
  return RunDra(s.config, s.timeouts, focus);
}

Verdicts Of(const RunReport& r) {
  Verdicts v;
  for (const CheckResult& c : r.results) v[c.id] = c.outcome.status;
  return v;
}

const CheckResult* Find(const RunReport& r, const std::string& id) {
  for (const CheckResult& c : r.results) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

// Every check PASS except the given ones.
Verdicts AllPassBut(const Verdicts& others) {
  Verdicts v;
  for (const DraCheckInfo& c : DraCatalogue()) v[c.id] = Status::kPass;
  for (const auto& [id, s] : others) v[id] = s;
  return v;
}

// Every check but `failed` and `passed` skipped; `failed` FAIL.
Verdicts FailsAndSkipsTheRest(const std::string& failed, const std::set<std::string>& passed) {
  Verdicts v;
  for (const DraCheckInfo& c : DraCatalogue()) {
    v[c.id] = passed.count(c.id) ? Status::kPass : Status::kSkip;
  }
  v[failed] = Status::kFail;
  return v;
}

TEST(DraVerdictsTest, EveryCheckHasASwitchThatBreaksIt) {
  // Each entry of Breakers() has its verdict test below.
  for (const DraCheckInfo& c : DraCatalogue()) {
    EXPECT_EQ(Breakers().count(c.id), 1u) << c.id << " has no misbehaviour that fails it";
  }
  EXPECT_EQ(Breakers().size(), DraCatalogue().size());
}

TEST(DraVerdictsTest, TheReferenceDriverPassesEveryCheckInOneSessionAndOnePerDisruption) {
  RunReport r = RunDra(Reference());
  EXPECT_EQ(Of(r), AllPassBut({})) << SummaryTable(r);
  // The shared session, then each of the five [Disruptive] checks in one.
  EXPECT_EQ(r.sessions, 6);
  EXPECT_TRUE(r.MustPassed());
  EXPECT_THAT(Find(r, "dra.services")->outcome.message,
              HasSubstr("the kubelet 1.36 calls v1.DRAPlugin"));
  // The kubelet's per-claim text (k8s.io/kubernetes v1.34.4-v1.37.2,
  // pkg/kubelet/cm/dra/manager.go, prepareResources): name only.
  EXPECT_THAT(Find(r, "dra.prepare.replaced")->outcome.message,
              HasSubstr("was refused: NodePrepareResources failed for ResourceClaim "
                        "conformance-replaced: claim default/conformance-replaced: got replaced"));
}

TEST(DraVerdictsTest, AnotherPluginTypeFailsRegistration) {
  RunReport r = RunDra(Broken("dra.registration"));
  EXPECT_EQ(Of(r), FailsAndSkipsTheRest("dra.registration", {"dra.services", "dra.serves-first"}))
      << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.registration")->outcome.message,
              HasSubstr("GetInfo answers type \"DevicePlugin\", not \"DRAPlugin\""));
  EXPECT_THAT(Find(r, "dra.prepare.answers-all")->outcome.message,
              HasSubstr("(see dra.registration, dra.services)"));
}

TEST(DraVerdictsTest, RegisteringBeforeServingFailsTheShouldOnly) {
  RunReport r = RunDra(Broken("dra.serves-first"));
  EXPECT_EQ(Of(r), AllPassBut({{"dra.serves-first", Status::kFail}})) << SummaryTable(r);
  EXPECT_TRUE(r.MustPassed());
  EXPECT_EQ(Find(r, "dra.serves-first")->level, Level::kShould);
}

TEST(DraVerdictsTest, NoServiceTheKubeletSupportsFailsServices) {
  RunReport r = RunDra(Broken("dra.services"));
  EXPECT_EQ(Of(r), FailsAndSkipsTheRest("dra.services", {"dra.registration", "dra.serves-first"}))
      << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.services")->outcome.message,
              HasSubstr("empty list of supported gRPC services"));
}

TEST(DraVerdictsTest, ASliceTheApiServerRefusesFailsSlices) {
  RunReport r = RunDra(Broken("dra.slices"));
  EXPECT_EQ(Of(r), FailsAndSkipsTheRest("dra.slices",
                                        {"dra.registration", "dra.serves-first", "dra.services",
                                         "dra.unprepare.unknown", "dra.calls.timely"}))
      << SummaryTable(r);
  const CheckResult* f = Find(r, "dra.slices");
  ASSERT_NE(f, nullptr);
  EXPECT_THAT(f->outcome.evidence,
              testing::Contains(HasSubstr("POST /apis/resource.k8s.io/v1/resourceslices")));
}

TEST(DraVerdictsTest, AnOmittedClaimFailsAnswersAll) {
  RunReport r = RunDra(Broken("dra.prepare.answers-all"));
  EXPECT_EQ(Of(r), AllPassBut({{"dra.prepare.answers-all", Status::kFail}})) << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.prepare.answers-all")->outcome.message,
              HasSubstr("NodePrepareResources skipped 1 ResourceClaims"));
}

TEST(DraVerdictsTest, AnUnallocatedDeviceFailsDevices) {
  RunReport r = RunDra(Broken("dra.prepare.devices"));
  // dra.prepare.multi-driver cannot judge the driver's own devices of its claim.
  EXPECT_EQ(Of(r), AllPassBut({{"dra.prepare.devices", Status::kFail},
                               {"dra.prepare.multi-driver", Status::kSkip}}))
      << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.prepare.multi-driver")->outcome.message,
              HasSubstr("as for a claim of its own devices only (see dra.prepare.devices)"));
  EXPECT_THAT(Find(r, "dra.prepare.devices")->outcome.message,
              HasSubstr("device devmgr-conformance-node/gpu-0-unallocated is in none of the "
                        "driver's slices"));
}

TEST(DraVerdictsTest, AnotherDeviceOnARepeatedPrepareFailsIdempotent) {
  RunReport r = RunDra(Broken("dra.prepare.idempotent"));
  // The disruptive checks that prepare again are skipped for it: a driver
  // that is not idempotent without a restart cannot be judged across one.
  EXPECT_EQ(Of(r), AllPassBut({{"dra.prepare.idempotent", Status::kFail},
                               {"dra.restart.driver", Status::kSkip},
                               {"dra.restart.unprepare", Status::kSkip},
                               {"dra.restart.no-leak", Status::kSkip},
                               {"dra.restart.reboot", Status::kSkip}}))
      << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.restart.driver")->outcome.message,
              HasSubstr("even without a restart (see dra.prepare.idempotent)"));
}

TEST(DraVerdictsTest, AnExtraCdiSpecOnARepeatedPrepareFailsIdempotent) {
  Rig rig{Reference(), Windows()};
  rig.config.misbehave.reprepare_adds_spec = true;
  RunReport r = RunDra(rig);
  EXPECT_EQ(Of(r), AllPassBut({{"dra.prepare.idempotent", Status::kFail}})) << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.prepare.idempotent")->outcome.message,
              HasSubstr("the second NodePrepareResources added CDI device(s)"));
}

TEST(DraVerdictsTest, AFailingUnprepareOfAnUnknownClaimFailsUnprepareUnknown) {
  RunReport r = RunDra(Broken("dra.unprepare.unknown"));
  // The claims of a failed prepare are unknown to a well-behaved driver.
  EXPECT_EQ(Of(r), AllPassBut({{"dra.unprepare.unknown", Status::kFail},
                               {"dra.prepare.failed-no-leak", Status::kSkip}}))
      << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.prepare.failed-no-leak")->outcome.message,
              HasSubstr("(see dra.unprepare.unknown)"));
  EXPECT_THAT(Find(r, "dra.unprepare.unknown")->outcome.message,
              HasSubstr("is not prepared by sample.dra.devmgr.io"));
}

TEST(DraVerdictsTest, RefusingToPrepareAgainFailsAfterUnprepare) {
  RunReport r = RunDra(Broken("dra.prepare.after-unprepare"));
  EXPECT_EQ(Of(r), AllPassBut({{"dra.prepare.after-unprepare", Status::kFail}})) << SummaryTable(r);
}

TEST(DraVerdictsTest, MixedUpBatchAnswersFailBatched) {
  RunReport r = RunDra(Broken("dra.prepare.batched"));
  EXPECT_EQ(Of(r), AllPassBut({{"dra.prepare.batched", Status::kFail}})) << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.prepare.batched")->outcome.message, HasSubstr("both hold"));
}

TEST(DraVerdictsTest, AnUnprepareThatNeedsTheClaimObjectFailsUnprepareDeleted) {
  RunReport r = RunDra(Broken("dra.unprepare.deleted"));
  EXPECT_EQ(Of(r), AllPassBut({{"dra.unprepare.deleted", Status::kFail}})) << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.unprepare.deleted")->outcome.message,
              HasSubstr("retrieve claim default/conformance-deleted: "));
}

TEST(DraVerdictsTest, PreparingAReplacedClaimFailsReplaced) {
  RunReport r = RunDra(Broken("dra.prepare.replaced"));
  EXPECT_EQ(Of(r), AllPassBut({{"dra.prepare.replaced", Status::kFail}})) << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.prepare.replaced")->outcome.message,
              HasSubstr("a driver must compare the UID and refuse a replaced claim"));
}

TEST(DraVerdictsTest, CdiIdsWithoutASpecFailCdi) {
  RunReport r = RunDra(Broken("dra.prepare.cdi"));
  EXPECT_EQ(Of(r),
            AllPassBut({{"dra.prepare.cdi", Status::kFail}, {"dra.restart.reboot", Status::kSkip}}))
      << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.restart.reboot")->outcome.message,
              HasSubstr("even before the reboot (see dra.prepare.cdi)"));
  EXPECT_THAT(Find(r, "dra.prepare.cdi")->outcome.message,
              HasSubstr("resolve to no device of a CDI spec in the CDI root"));
  // A spec written elsewhere (not the CDI root the driver was given) fails it too.
  Rig wrong = Broken("dra.prepare.cdi");
  wrong.config.misbehave.cdi_spec = draplugin::CdiSpecMode::kWrongDir;
  RunReport w = RunDra(wrong, "^dra\\.prepare\\.cdi");
  EXPECT_EQ(Of(w), (Verdicts{{"dra.prepare.cdi", Status::kFail}})) << SummaryTable(w);
}

TEST(DraVerdictsTest, APrepareSlowerThanTheDeadlineFailsTimelyAndSkipsWhatItHides) {
  RunReport r = RunDra(Broken("dra.calls.timely"));
  std::set<std::string> failed;
  for (const CheckResult& res : r.results) {
    if (res.outcome.status == Status::kFail) failed.insert(res.id);
  }
  EXPECT_EQ(failed, std::set<std::string>{"dra.calls.timely"}) << SummaryTable(r);
  for (const char* id : {"dra.registration", "dra.serves-first", "dra.services", "dra.slices"}) {
    EXPECT_EQ(Of(r)[id], Status::kPass) << id;
  }
  EXPECT_EQ(Of(r)["dra.prepare.answers-all"], Status::kSkip);
  EXPECT_THAT(Find(r, "dra.prepare.answers-all")->outcome.message,
              HasSubstr("(see dra.calls.timely)"));
  EXPECT_THAT(Find(r, "dra.calls.timely")->outcome.message,
              HasSubstr("not answered within the kubelet's deadline of 500ms"));
}

TEST(DraVerdictsTest, ASpecLeftByAFailedPrepareFailsTheShouldFailedNoLeak) {
  RunReport r = RunDra(Broken("dra.prepare.failed-no-leak"));
  EXPECT_EQ(Of(r), AllPassBut({{"dra.prepare.failed-no-leak", Status::kFail}})) << SummaryTable(r);
  EXPECT_TRUE(r.MustPassed());
  const CheckResult* f = Find(r, "dra.prepare.failed-no-leak");
  EXPECT_EQ(f->level, Level::kShould);
  EXPECT_THAT(f->outcome.message, HasSubstr("the CDI root still holds CDI device(s) "
                                            "[sample.dra.devmgr.io/gpu="));
  EXPECT_THAT(f->outcome.evidence,
              testing::Contains(HasSubstr("unsupported opaque config conformance.devmgr.io/v1/"
                                          "UnsupportedConfig for request(s) [\"req-b\"]")));
}

TEST(DraVerdictsTest, FailingOnAnotherDriversResultFailsMultiDriver) {
  RunReport r = RunDra(Broken("dra.prepare.multi-driver"));
  EXPECT_EQ(Of(r), AllPassBut({{"dra.prepare.multi-driver", Status::kFail}})) << SummaryTable(r);
  const std::string& m = Find(r, "dra.prepare.multi-driver")->outcome.message;
  EXPECT_THAT(m, HasSubstr("NodePrepareResources of claim default/conformance-multi-driver (UID "));
  EXPECT_THAT(m, HasSubstr("requested device devmgr-conformance-node/other-"));
  EXPECT_THAT(m, HasSubstr("is not allocatable by sample.dra.devmgr.io"));
}

TEST(DraVerdictsTest, AnsweringAnotherDriversDevicesFailsMultiDriver) {
  Rig rig = Broken("dra.prepare.multi-driver");
  rig.config.misbehave.foreign_results_fail = false;
  rig.config.misbehave.prepare_foreign_results = true;
  RunReport r = RunDra(rig, "^dra\\.prepare\\.multi-driver");
  EXPECT_EQ(Of(r), (Verdicts{{"dra.prepare.multi-driver", Status::kFail}})) << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.prepare.multi-driver")->outcome.message,
              testing::MatchesRegex(".*the answer holds \\[devmgr-conformance-node/other-[01]\\], "
                                    "allocated to request\\(s\\) of driver "
                                    "other\\.conformance\\.devmgr\\.io.*"));
}

TEST(DraVerdictsTest, TheReferenceDriverPreparesOnlyItsOwnResultsOfAMultiDriverClaim) {
  RunReport r = RunDra(Reference(), Windows(), "^dra\\.prepare\\.multi-driver");
  EXPECT_EQ(Of(r), (Verdicts{{"dra.prepare.multi-driver", Status::kPass}})) << SummaryTable(r);
  EXPECT_THAT(
      Find(r, "dra.prepare.multi-driver")->outcome.message,
      testing::MatchesRegex(".*allocated \\[sample\\.dra\\.devmgr\\.io "
                            "devmgr-conformance-node/gpu-[0-3] \\(req\\)\\] and "
                            "\\[other\\.conformance\\.devmgr\\.io "
                            "devmgr-conformance-node/other-[01] \\(other\\)\\]: answered "
                            "\\[devmgr-conformance-node/gpu-[0-3] \\(requests \\[req\\].*"));
}

// dra.health.stream alone, with the kubelet of `version`.
RunReport RunHealth(const draplugin::Config& config, const std::string& version) {
  testutil::InProcessDraDriver target(config);
  testutil::TempDir dir;
  DraRunOptions o;
  o.dir = dir.path();
  o.timeouts = Windows();
  o.focus = "^dra\\.health\\.stream";
  absl::StatusOr<Profile> p = ProfileForVersion(version);
  EXPECT_OK(p.status());
  if (p.ok()) o.profile = *p;
  absl::StatusOr<RunReport> r = RunDraConformance(target, o);
  EXPECT_OK(r.status());
  return r.ok() ? *r : RunReport{};
}

TEST(DraVerdictsTest, AHealthListThatOmitsADeviceFailsTheShouldHealthStream) {
  RunReport r = RunDra(Broken("dra.health.stream"));
  EXPECT_EQ(Of(r), AllPassBut({{"dra.health.stream", Status::kFail}})) << SummaryTable(r);
  EXPECT_TRUE(r.MustPassed());
  const CheckResult* f = Find(r, "dra.health.stream");
  EXPECT_EQ(f->level, Level::kShould);
  EXPECT_THAT(f->outcome.message,
              HasSubstr("NodeWatchResources (v1alpha1.DRAResourceHealth): the first message "
                        "omits 1 of the driver's 4 published device(s) "
                        "[devmgr-conformance-node/gpu-1]"));
}

TEST(DraVerdictsTest, AHealthMessageOverTheKubeletsLimitFailsHealthStreamFrom136) {
  draplugin::Config c = Reference();
  c.devices[2].health = "Unhealthy";
  c.devices[2].health_message = std::string(1025, 'x');
  RunReport r = RunHealth(c, "1.36");
  EXPECT_EQ(Of(r), (Verdicts{{"dra.health.stream", Status::kFail}})) << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.health.stream")->outcome.message,
              HasSubstr("message(s) of [devmgr-conformance-node/gpu-2 (1025 bytes)] are longer "
                        "than the kubelet's limit of 1024 bytes"));
  // 1.35's API has no message: its kubelet never reads it. Its gate is off
  // by default, so it is turned on here.
  testutil::InProcessDraDriver target(c);
  testutil::TempDir dir;
  DraRunOptions o;
  o.dir = dir.path();
  o.focus = "^dra\\.health\\.stream";
  absl::StatusOr<Profile> p = ProfileForVersion("1.35");
  ASSERT_OK(p.status());
  o.profile = *p;
  ASSERT_OK(o.profile.gates.Set("ResourceHealthStatus=true"));
  absl::StatusOr<RunReport> old = RunDraConformance(target, o);
  ASSERT_OK(old.status());
  EXPECT_EQ(Of(*old), (Verdicts{{"dra.health.stream", Status::kPass}})) << SummaryTable(*old);
}

TEST(DraVerdictsTest, HealthStreamIsSkippedWhereTheKubeletOpensNone) {
  // 1.35: the gate ResourceHealthStatus is alpha, off.
  RunReport gate = RunHealth(Reference(), "1.35");
  EXPECT_EQ(Of(gate), (Verdicts{{"dra.health.stream", Status::kSkip}})) << SummaryTable(gate);
  EXPECT_THAT(Find(gate, "dra.health.stream")->outcome.message,
              HasSubstr("the kubelet 1.35 opens no health stream: its feature gate "
                        "ResourceHealthStatus is off"));
  // 1.37: only an advertised service is opened.
  draplugin::Config none = Reference();
  none.supported_versions = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};
  RunReport adv = RunHealth(none, "1.37");
  EXPECT_EQ(Of(adv), (Verdicts{{"dra.health.stream", Status::kSkip}})) << SummaryTable(adv);
  EXPECT_THAT(Find(adv, "dra.health.stream")->outcome.message,
              HasSubstr("the driver advertises no DRAResourceHealth service"));
  // 1.36 opens v1alpha1 for every driver: one that serves none answers Unimplemented.
  RunReport unimpl = RunHealth(none, "1.36");
  EXPECT_EQ(Of(unimpl), (Verdicts{{"dra.health.stream", Status::kSkip}})) << SummaryTable(unimpl);
  EXPECT_THAT(Find(unimpl, "dra.health.stream")->outcome.message,
              HasSubstr("the driver does not serve v1alpha1.DRAResourceHealth "
                        "(NodeWatchResources: Unimplemented)"));
}

TEST(DraVerdictsTest, TheKubelet137PrefersTheV1HealthService) {
  draplugin::Config c = Reference();
  c.supported_versions.push_back(draplugin::kHealthV1);
  RunReport r = RunHealth(c, "1.37");
  EXPECT_EQ(Of(r), (Verdicts{{"dra.health.stream", Status::kPass}})) << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.health.stream")->outcome.message,
              HasSubstr("the kubelet 1.37 opens v1.DRAResourceHealth; its first message, after "));
  EXPECT_THAT(Find(r, "dra.health.stream")->outcome.message,
              HasSubstr("lists the 4 published device(s): [devmgr-conformance-node/gpu-0 Healthy"));
}

TEST(DraVerdictsTest, ARestoredClaimThatCannotBeUnpreparedFailsRestartDriver) {
  RunReport r = RunDra(Broken("dra.restart.driver"));
  // Whether prepared again first or not: both restart checks.
  EXPECT_EQ(Of(r), AllPassBut({{"dra.restart.driver", Status::kFail},
                               {"dra.restart.unprepare", Status::kFail},
                               {"dra.restart.no-leak", Status::kSkip}}))
      << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.restart.driver")->outcome.message,
              HasSubstr("NodeUnprepareResources of claim default/conformance-restart (UID "));
  EXPECT_THAT(Find(r, "dra.restart.driver")->outcome.message,
              HasSubstr("no handle for its devices (restored from prepared-claims.json)"));
}

TEST(DraVerdictsTest, ARestoredClaimUnpreparableOnlyOncePreparedAgainFailsRestartUnprepare) {
  RunReport r = RunDra(Broken("dra.restart.unprepare"));
  EXPECT_EQ(Of(r), AllPassBut({{"dra.restart.unprepare", Status::kFail},
                               {"dra.restart.no-leak", Status::kSkip}}))
      << SummaryTable(r);
  const std::string& m = Find(r, "dra.restart.unprepare")->outcome.message;
  EXPECT_THAT(m, HasSubstr("NodeUnprepareResources of claim default/conformance-restart-unprepare "
                           "(UID "));
  EXPECT_THAT(m, HasSubstr("prepared before the driver's restart and not since"));
  EXPECT_THAT(m, HasSubstr("not prepared since the restart; no handle for its devices"));
  EXPECT_THAT(Find(r, "dra.restart.no-leak")->outcome.message,
              HasSubstr("(see dra.restart.unprepare)"));
}

TEST(DraVerdictsTest, ASpecLeftByAnUnprepareAfterTheRestartFailsTheShouldRestartNoLeak) {
  RunReport r = RunDra(Broken("dra.restart.no-leak"));
  EXPECT_EQ(Of(r), AllPassBut({{"dra.restart.no-leak", Status::kFail}})) << SummaryTable(r);
  EXPECT_TRUE(r.MustPassed());
  const CheckResult* f = Find(r, "dra.restart.no-leak");
  EXPECT_EQ(f->level, Level::kShould);
  EXPECT_THAT(f->outcome.message,
              testing::MatchesRegex(".*claim default/conformance-restart-no-leak .*its CDI "
                                    "device\\(s\\) \\[sample\\.dra\\.devmgr\\.io/gpu=.* "
                                    "still resolve: the spec written before the restart stays.*"));
}

TEST(DraVerdictsTest, ARepeatedPrepareThatSkipsTheSpecFailsReboot) {
  RunReport r = RunDra(Broken("dra.restart.reboot"));
  EXPECT_EQ(Of(r), AllPassBut({{"dra.restart.reboot", Status::kFail}})) << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.restart.reboot")->outcome.message,
              HasSubstr("answered after the reboot resolve to no device of a CDI spec"));
}

TEST(DraVerdictsTest, ADriverThatPublishesOnlyOnceFailsSlicesWiped) {
  RunReport r = RunDra(Broken("dra.slices.wiped"));
  EXPECT_EQ(Of(r), AllPassBut({{"dra.slices.wiped", Status::kFail}})) << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.slices.wiped")->outcome.message,
              HasSubstr("registered again, the driver published no complete pool for the node "
                        "within 1s"));
  // The kubelet's 30 s wiping delay was skipped, not waited for.
  EXPECT_LT(Find(r, "dra.slices.wiped")->duration, absl::Seconds(20));
}

TEST(DraVerdictsTest, TheDisruptiveChecksAreSkippedWithoutASessionWhenTheDriverNeverRegistered) {
  RunReport r = RunDra(Broken("dra.registration"));
  for (const char* id : {"dra.restart.driver", "dra.restart.unprepare", "dra.restart.no-leak",
                         "dra.restart.reboot", "dra.slices.wiped"}) {
    EXPECT_THAT(Find(r, id)->outcome.message,
                HasSubstr("the driver never registered (see dra.registration, dra.services)"))
        << id;
  }
  EXPECT_EQ(r.sessions, 1);
  RunReport sl = RunDra(Broken("dra.slices"));
  EXPECT_THAT(Find(sl, "dra.restart.reboot")->outcome.message, HasSubstr("(see dra.slices)"));
  EXPECT_EQ(sl.sessions, 1);
}

TEST(DraVerdictsTest, AFocusedCheckRunsThePrerequisiteItWasSkippedFor) {
  RunReport r = RunDra(Broken("dra.registration"), "^dra\\.prepare\\.batched");
  EXPECT_EQ(Of(r), (Verdicts{{"dra.prepare.batched", Status::kSkip},
                             {"dra.registration", Status::kFail},
                             {"dra.services", Status::kPass}}))
      << SummaryTable(r);
  EXPECT_THAT(Find(r, "dra.registration")->outcome.message,
              HasSubstr("(not selected; run because dra.prepare.batched depends on it)"));
}

TEST(DraVerdictsTest, TheRealKubeletDirectoryIsRefused) {
  testutil::InProcessDraDriver target(Reference());
  for (const char* dir : {"/var/lib/kubelet", "/var/lib/kubelet/", "/var/lib/../lib/kubelet/x"}) {
    DraRunOptions o;
    o.dir = dir;
    absl::StatusOr<RunReport> r = RunDraConformance(target, o);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << dir;
  }
}

TEST(DraVerdictsTest, KubeletsOlderThan134AreRefused) {
  testutil::InProcessDraDriver target(Reference());
  DraRunOptions o;
  absl::StatusOr<Profile> p = ProfileForVersion("1.33");
  ASSERT_OK(p.status());
  o.profile = *p;
  EXPECT_EQ(RunDraConformance(target, o).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace devmgr::conformance
