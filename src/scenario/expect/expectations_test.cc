#include "scenario/expect/expectations.h"

#include "checkpoint/checkpoint.h"
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenario/format/scenario_parser.h"
#include "scenario/format/scenario_testutil.h"

namespace devmgr::scenario {

void PrintTo(const Failure& f, std::ostream* os) {
  *os << f.loc.ToString() << ": " << f.what << " expected " << f.expected << " actual " << f.actual;
}

// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace expectations_test {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// Expectations written as scenario YAML (one check step).
Expectations Parse(const std::string& expect_yaml) {
  absl::StatusOr<Scenario> s = testutil::ParseCheckStep(expect_yaml, "e.yaml");
  EXPECT_OK(s);
  return s.ok() ? s->steps[0].expect : Expectations{};
}

Observed World() {
  Observed o;
  o.node.capacity["example.com/gpu"] = 3;
  o.node.allocatable["example.com/gpu"] = 2;
  manager::ResourceStatus r;
  r.resource_name = "example.com/gpu";
  r.capacity = 3;
  r.allocatable = 2;
  r.healthy = {"a", "b"};
  r.unhealthy = {"c"};
  r.allocated = {"a"};
  r.has_endpoint = true;
  r.endpoint_socket = "/tmp/x/gpu.sock";
  o.resources.push_back(r);
  node::PodRecord p;
  p.pod.uid = "uid-1";
  p.pod.name = "p";
  p.pod.namespace_ = "default";
  p.phase = pod::Phase::kRunning;
  node::ContainerRecord c;
  c.name = "c";
  c.running = true;
  manager::RunContainerOptions ro;
  ro.envs = {{"VISIBLE", "a"}, {"OTHER", "x"}};
  ro.mounts = {{"/m", "/m", "/host/m", true, false}};
  ro.cdi_devices = {"example.com/gpu=a"};
  c.run_options = ro;
  p.containers.push_back(c);
  o.pods.push_back(p);
  node::PodRecord q;
  q.pod.uid = "uid-2";
  q.pod.name = "q";
  q.pod.namespace_ = "default";
  q.phase = pod::Phase::kFailed;
  q.reason = "UnexpectedAdmissionError";
  q.message = "Allocate failed due to boom, which is unexpected";
  o.pods.push_back(q);
  o.active_pod_uids = {"uid-1"};
  manager::PodAllocation pa;
  pa.pod_uid = "uid-1";
  manager::ContainerAllocation ca;
  ca.container_name = "c";
  ca.devices["example.com/gpu"] = {"a"};
  ca.topology["example.com/gpu"]["a"] = {0};
  pa.containers.push_back(ca);
  o.allocations.push_back(pa);
  return o;
}

TEST(Expectations, ResourcesHold) {
  auto f = CheckExpectations(Parse(R"(      resources:
        example.com/gpu: {capacity: 3, allocatable: 2, healthy: [b, a], unhealthy: [c],
                          allocated: [a], healthy_count: 2, registered: true, connected: true}
)"),
                             World());
  EXPECT_THAT(f, IsEmpty());
}

TEST(Expectations, ResourceMismatchesAreReported) {
  auto f = CheckExpectations(Parse(R"(      resources:
        example.com/gpu: {capacity: 4, healthy: [a]}
        example.com/nic: {registered: true}
)"),
                             World());
  ASSERT_THAT(f, SizeIs(3));
  EXPECT_EQ(f[0].what, "resources['example.com/gpu'].capacity");
  EXPECT_EQ(f[0].expected, "4");
  EXPECT_EQ(f[0].actual, "3");
  EXPECT_EQ(f[0].loc.ToString(), "e.yaml:8:9");
  EXPECT_EQ(f[1].expected, "[a]");
  EXPECT_EQ(f[1].actual, "[a b]");
  EXPECT_EQ(f[2].what, "resources['example.com/nic'].registered");
}

TEST(Expectations, PodsAndContainers) {
  auto ok = CheckExpectations(Parse(R"(      pods:
        p:
          admitted: true
          phase: Running
          containers:
            c:
              devices: {example.com/gpu: {ids: [a], numa: [0]}}
              envs: {VISIBLE: a}
              mounts: [{container_path: /m, host_path: {regex: "^/host/"}, read_only: true}]
              cdi_devices_exact: [example.com/gpu=a]
              running: true
        default/q:
          admitted: false
          reason: UnexpectedAdmissionError
          message: {regex: "boom"}
)"),
                              World());
  EXPECT_THAT(ok, IsEmpty());
  auto bad = CheckExpectations(Parse(R"(      pods:
        p:
          containers:
            c:
              devices: {example.com/gpu: 2}
              envs_exact: {VISIBLE: b}
        q: {admitted: true}
        ghost: {admitted: true}
)"),
                               World());
  ASSERT_THAT(bad, SizeIs(5));
  EXPECT_EQ(bad[0].what, "pods['p'].containers['c'].devices['example.com/gpu']");
  EXPECT_EQ(bad[0].actual, "1 [a]");
  EXPECT_EQ(bad[1].what, "pods['p'].containers['c'].envs['VISIBLE']");
  EXPECT_EQ(bad[2].actual, "also OTHER=x");
  EXPECT_EQ(bad[3].actual,
            "false (UnexpectedAdmissionError: Allocate failed due to boom, which is unexpected)");
  EXPECT_THAT(bad[4].actual, HasSubstr("no such pod"));
}

TEST(Expectations, Disjoint) {
  Observed o = World();
  o.active_pod_uids.push_back("uid-3");
  manager::PodAllocation pa;
  pa.pod_uid = "uid-3";
  manager::ContainerAllocation ca;
  ca.container_name = "x";
  ca.devices["example.com/gpu"] = {"a"};
  pa.containers.push_back(ca);
  o.allocations.push_back(pa);
  auto f = CheckExpectations(Parse("      disjoint: true\n"), o);
  ASSERT_THAT(f, SizeIs(1));
  EXPECT_THAT(f[0].actual, HasSubstr("a held by pod uid-1 container c and pod uid-3 container x"));
  // Terminated pods do not count.
  o.active_pod_uids.pop_back();
  EXPECT_THAT(CheckExpectations(Parse("      disjoint: [example.com/gpu]\n"), o), IsEmpty());
}

TEST(Expectations, Checkpoint) {
  checkpoint::CheckpointData d;
  d.pod_device_entries.emplace();
  checkpoint::PodDevicesEntry e;
  e.pod_uid = "uid-1";
  e.container_name = "c";
  e.resource_name = "example.com/gpu";
  e.device_ids.emplace();
  (*e.device_ids)[0] = std::vector<std::string>{"a"};
  e.alloc_resp = "";
  d.pod_device_entries->push_back(e);
  d.registered_devices.emplace();
  (*d.registered_devices)["example.com/gpu"] = std::vector<std::string>{"a", "b", "c"};
  Observed o = World();
  o.checkpoint_bytes = checkpoint::Encode(checkpoint::MakeV2(d));
  EXPECT_THAT(CheckExpectations(Parse(R"(      checkpoint:
        valid: true
        entry_count: 1
        entries_exact: [{pod: p, container: c, resource: example.com/gpu, devices: [a]}]
        registered: {example.com/gpu: [c, b, a]}
)"),
                                o),
              IsEmpty());
  std::string bytes = *o.checkpoint_bytes;
  bytes[bytes.find("\"Checksum\":") + 11] ^= 1;
  o.checkpoint_bytes = bytes;
  auto f = CheckExpectations(Parse("      checkpoint: {valid: true}\n"), o);
  ASSERT_THAT(f, SizeIs(1));
  EXPECT_THAT(f[0].actual, HasSubstr("false (checksum"));
  o.checkpoint_bytes.reset();
  f = CheckExpectations(Parse("      checkpoint: {exists: true}\n"), o);
  ASSERT_THAT(f, SizeIs(1));
  EXPECT_EQ(f[0].actual, "false");
}

TEST(Expectations, CallsInOrderWithArguments) {
  Observed o = World();
  auto call = [](const std::string& m, nlohmann::json args) {
    return nlohmann::json{{"kind", "received"}, {"method", m}, {"args", args}};
  };
  o.calls_since_step["gpu"] = {
      call("GetPreferredAllocation", {{"container_requests",
                                       {{{"available_deviceIDs", {"a", "b"}},
                                         {"must_include_deviceIDs", {"a"}},
                                         {"allocation_size", 2}}}}}),
      call("Allocate", {{"container_requests", {{{"devices_ids", {"a", "b"}}}}}}),
  };
  EXPECT_THAT(CheckExpectations(Parse(R"(      calls:
        gpu:
          exact: true
          sequence:
            - method: GetPreferredAllocation
              args: {container_requests: [{must_include_deviceIDs: [a], allocation_size: 2}]}
            - Allocate
          counts: {Allocate: 1, PreStartContainer: 0}
)"),
                                o),
              IsEmpty());
  auto f = CheckExpectations(Parse(R"(      calls:
        gpu: [Allocate, GetPreferredAllocation]
)"),
                             o);
  ASSERT_THAT(f, SizeIs(1));
  EXPECT_EQ(f[0].what, "calls['gpu'].sequence[1]");
  f = CheckExpectations(Parse(R"(      calls:
        gpu:
          sequence:
            - method: GetPreferredAllocation
              args: {container_requests: [{allocation_size: 3}]}
)"),
                        o);
  ASSERT_THAT(f, SizeIs(1));
  EXPECT_THAT(f[0].actual, HasSubstr("GetPreferredAllocation {\"container_requests\""));
  // exact: nothing else of the considered methods.
  f = CheckExpectations(Parse("      calls: {gpu: {exact: true, methods: [Allocate, "
                              "GetPreferredAllocation], sequence: [Allocate]}}\n"),
                        o);
  ASSERT_THAT(f, SizeIs(1));
}

TEST(Expectations, JsonMatching) {
  using nlohmann::json;
  EXPECT_TRUE(JsonMatches(json::parse(R"({"a":[1,{"regex":"x+"}]})"),
                          json::parse(R"({"a":[1,"xx"],"b":2})")));
  EXPECT_FALSE(JsonMatches(json::parse(R"({"a":[1]})"), json::parse(R"({"a":[1,2]})")));
  // Go omits empty fields: an absent key matches a default value.
  EXPECT_TRUE(JsonMatches(json::parse(R"({"must_include_deviceIDs":[]})"), json::object()));
  EXPECT_FALSE(JsonMatches(json::parse(R"({"x":1})"), json::object()));
  EXPECT_TRUE(JsonMatches(json("2"), json(2)));
  EXPECT_TRUE(JsonMatches(json::parse(R"({"any_order":["b","a"]})"), json::parse(R"(["a","b"])")));
  EXPECT_FALSE(JsonMatches(json::parse(R"({"any_order":["a","a"]})"), json::parse(R"(["a","b"])")));
}

TEST(Expectations, TopologyHintsAndAffinity) {
  Observed o = World();
  MergeObs m;
  m.container = "c";
  m.providers["devicemanager"]["example.com/gpu"] =
      std::vector<HintSpec>{{std::vector<int>{0}, true}, {std::vector<int>{0, 1}, false}};
  m.providers["cpumanager"]["cpu"] = std::nullopt;
  o.merges["uid-1"].push_back(m);
  o.numa_affinity[{"uid-1", "c"}] = std::vector<int>{0};
  EXPECT_THAT(CheckExpectations(Parse(R"(      pods:
        p:
          containers:
            c:
              numa_affinity: [0]
              topology_hints:
                devicemanager:
                  example.com/gpu: [{numa: [0], preferred: true}, {numa: [1, 0], preferred: false}]
                cpumanager: {cpu: null}
)"),
                                o),
              IsEmpty());
  auto f = CheckExpectations(Parse(R"(      pods:
        p:
          topology_hints: {devicemanager: {example.com/gpu: []}}
          containers:
            c:
              numa_affinity: null
              topology_hints: {devicemanager: {example.com/gpu: [{numa: null}]}}
)"),
                             o);
  ASSERT_THAT(f, SizeIs(3));
  EXPECT_EQ(f[0].what, "pods['p'].containers['c'].numa_affinity");
  EXPECT_EQ(f[0].expected, "<nil>");
  EXPECT_EQ(f[0].actual, "[0]");
  EXPECT_EQ(f[1].expected, "[{<nil> false}]");
  EXPECT_EQ(f[1].actual, "[{[0] true} {[0 1] false}]");
  EXPECT_THAT(f[2].actual, HasSubstr("none recorded"));
}

TEST(Expectations, LogLines) {
  Observed o = World();
  o.log_lines = {"I0101 x.go:1] \"Got registration request from device plugin with resource\""};
  EXPECT_THAT(CheckExpectations(Parse("      log: [\"Got registration request\"]\n"), o),
              IsEmpty());
  EXPECT_THAT(CheckExpectations(Parse("      log: nope\n"), o), SizeIs(1));
}

// Expectations of a check step after one that captures $x and $y.
Expectations ParseWithCaptures(const std::string& expect_yaml) {
  const std::string text = R"(plugins:
  - name: gpu
    sample_plugin: {resource: example.com/gpu}
steps:
  - check:
    capture:
      x: {resource: example.com/gpu, set: healthy}
      y: {pod: p, container: c, resource: example.com/gpu}
  - check:
    expect:
)" + expect_yaml;
  absl::StatusOr<Scenario> s = ParseScenario(text, "e.yaml");
  EXPECT_OK(s);
  return s.ok() ? s->steps[1].expect : Expectations{};
}

TEST(Expectations, SetRelationsWithCaptures) {
  Observed o = World();
  o.captures = {{"x", {"a", "b"}}, {"y", {"c"}}};
  EXPECT_THAT(CheckExpectations(ParseWithCaptures(R"(      resources:
        example.com/gpu:
          healthy: $x
          unhealthy: {count: $y, disjoint_from: $x, subset_of: [c, d]}
          allocated: {subset_of: $x, superset_of: [a]}
      pods:
        p: {containers: {c: {devices: {example.com/gpu: {disjoint_from: $y, subset_of: $x}}}}}
)"),
                                o),
              IsEmpty());
  auto f = CheckExpectations(ParseWithCaptures(R"(      resources:
        example.com/gpu:
          healthy: {superset_of: [a, z]}
          unhealthy: $x
          allocated: {disjoint_from: $x, count: $x}
)"),
                             o);
  ASSERT_THAT(f, SizeIs(4));
  EXPECT_EQ(f[0].what, "resources['example.com/gpu'].healthy");
  EXPECT_EQ(f[0].expected, "ids including [a z]");
  EXPECT_EQ(f[0].actual, "[a b] ([z] missing)");
  EXPECT_EQ(f[1].expected, "$x [a b]");
  EXPECT_EQ(f[1].actual, "[c]");
  EXPECT_EQ(f[2].expected, "2 device(s), as many as $x [a b]");
  EXPECT_EQ(f[2].actual, "1 [a]");
  EXPECT_EQ(f[3].expected, "no id in common with $x [a b]");
  EXPECT_EQ(f[3].actual, "[a] ([a] in common)");
}

TEST(Expectations, UnknownCaptureAtRunTimeIsAFailure) {
  std::vector<Failure> out;
  SetExpect e;
  e.ids = SetRef{{}, "gone"};
  CheckSet(e, Location{}, "w", std::vector<std::string>{"a"}, {}, &out);
  ASSERT_THAT(out, SizeIs(1));
  EXPECT_EQ(out[0].actual, "no value captured under that name");
}

TEST(Expectations, AbsentDiffersFromZero) {
  Observed o = World();
  o.node.capacity["example.com/zero"] = 0;
  EXPECT_THAT(CheckExpectations(Parse(R"(      resources:
        example.com/zero: {capacity: 0, allocatable: absent}
        example.com/none: {capacity: absent, allocatable: absent, healthy: absent, allocated: absent}
)"),
                                o),
              IsEmpty());
  auto f = CheckExpectations(Parse(R"(      resources:
        example.com/zero: {capacity: absent}
        example.com/none: {capacity: 0}
        example.com/gpu: {healthy: absent, allocated: absent}
)"),
                             o);
  ASSERT_THAT(f, SizeIs(4));
  EXPECT_EQ(f[0].expected, "absent");
  EXPECT_EQ(f[0].actual, "0");
  EXPECT_EQ(f[1].expected, "0");
  EXPECT_EQ(f[1].actual, "absent (not on the node)");
  EXPECT_EQ(f[2].what, "resources['example.com/gpu'].healthy");
  EXPECT_EQ(f[2].actual, "[a b]");
  EXPECT_EQ(f[3].actual, "[a]");
}

TEST(Expectations, ListsMatchInAnyOrderOneToOne) {
  Observed o = World();
  manager::RunContainerOptions ro;
  ro.mounts = {{"/b", "/b", "/host/b", false, false}, {"/a", "/a", "/host/a", true, false}};
  ro.cdi_devices = {"v.com/gpu=1", "v.com/gpu=0"};
  o.pods[0].containers[0].run_options = ro;
  EXPECT_THAT(CheckExpectations(Parse(R"(      pods:
        p:
          containers:
            c:
              mounts_exact: [{container_path: /a, read_only: true}, {host_path: {regex: "^/host/"}}]
              cdi_devices_exact: [{regex: "=[01]$"}, v.com/gpu=0]
)"),
                                o),
              IsEmpty());
  auto f = CheckExpectations(Parse(R"(      pods:
        p:
          containers:
            c:
              mounts_exact: [{container_path: /a}]
              cdi_devices: [{regex: "gpu=0"}, v.com/gpu=0]
              device_specs: [{container_path: /dev/x}]
)"),
                             o);
  ASSERT_THAT(f, SizeIs(3));
  EXPECT_EQ(f[0].expected, "exactly 1 item(s), in any order");
  EXPECT_EQ(f[0].actual, "[/host/b:/b, /host/a:/a:ro]");
  EXPECT_EQ(f[1].what, "pods['p'].containers['c'].device_specs[0]");
  EXPECT_EQ(f[2].what, "pods['p'].containers['c'].cdi_devices");
  EXPECT_EQ(f[2].expected, "2 distinct items matching the listed ones");
}

TEST(Expectations, MatchUnorderedFindsAnAssignmentGreedyWouldMiss) {
  // "a*" would take "ab" first; only a full matching pairs "ab" with "?b".
  const std::vector<std::string> want = {"a*", "?b"};
  const std::vector<std::string> got = {"ab", "ac"};
  auto match = [](const std::string& w, const std::string& g) {
    if (w == "a*") return g[0] == 'a';
    return g[1] == 'b';
  };
  auto m = MatchUnordered(want, got, match);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ((*m)[0], 1u);
  EXPECT_EQ((*m)[1], 0u);
  EXPECT_FALSE(MatchUnordered(std::vector<std::string>{"?b", "?b"}, got, match).has_value());
}

TEST(Expectations, RejectedStatusMessage) {
  EXPECT_THAT(CheckExpectations(Parse(R"(      pods:
        q: {status_message: "Pod was rejected: Allocate failed due to boom, which is unexpected"}
        p: {status_message: ""}
)"),
                                World()),
              IsEmpty());
  auto f = CheckExpectations(Parse("      pods: {q: {status_message: {regex: \"^Allocate\"}}}\n"),
                             World());
  ASSERT_THAT(f, SizeIs(1));
  EXPECT_EQ(f[0].actual, "\"Pod was rejected: Allocate failed due to boom, which is unexpected\"");
}

TEST(Expectations, RegisterResult) {
  Observed o = World();
  o.calls_since_start["gpu"] = {
      nlohmann::json{{"method", "Register"},
                     {"args", {{"version", "v1alpha"}}},
                     {"error", "requested API version \"v1alpha\" is not supported"},
                     {"code", "UNKNOWN"}},
      nlohmann::json{{"method", "Register"}, {"args", {{"version", "v1beta1"}}}}};
  EXPECT_THAT(CheckExpectations(Parse(R"(      calls:
        gpu:
          since: start
          sequence:
            - {method: Register, code: UNKNOWN, error: {regex: "not supported"}}
            - {method: Register, ok: true}
)"),
                                o),
              IsEmpty());
  auto f = CheckExpectations(
      Parse("      calls: {gpu: {since: start, sequence: [{method: Register, ok: true}], "
            "exact: true}}\n"),
      o);
  ASSERT_THAT(f, SizeIs(1));
  EXPECT_EQ(f[0].expected, "Register -> ok");
  EXPECT_THAT(f[0].actual, HasSubstr("-> error UNKNOWN \"requested API version"));
}

TEST(Expectations, AbsentHintAndAbsentCheckpointEntry) {
  Observed o = World();
  MergeObs m;
  m.container = "c";
  m.providers["cpu"]["example.com/gpu"] = std::nullopt;
  o.merges["uid-1"].push_back(m);
  auto f = CheckExpectations(Parse(R"(      pods:
        p:
          containers:
            c: {topology_hints: {cpu: {example.com/nic: absent, example.com/gpu: absent}}}
)"),
                             o);
  ASSERT_THAT(f, SizeIs(1));
  EXPECT_EQ(f[0].what, "pods['p'].containers['c'].topology_hints['cpu']['example.com/gpu']");
  EXPECT_EQ(f[0].expected, "absent (no hint entry)");
  EXPECT_EQ(f[0].actual, "<nil>");
}

}  // namespace expectations_test
}  // namespace devmgr::scenario
