#include "scenario/format/scenario_parser.h"

#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::scenario {
// Named, not anonymous: the test binaries are unity builds (CMakeLists.txt), and these
// helpers must not meet another test file's helpers of the same name.
namespace scenario_parser_test {

using ::testing::HasSubstr;

constexpr char kPlugin[] = R"(plugins:
  - name: gpu
    sample_plugin:
      resource: example.com/gpu
      devices:
        - {id: a}
        - {id: b}
)";

std::string Err(const std::string& text) {
  absl::StatusOr<Scenario> s = ParseScenario(text, "s.yaml");
  EXPECT_FALSE(s.ok());
  return s.ok() ? "" : std::string(s.status().message());
}

TEST(ScenarioParser, FullScenario) {
  const std::string text = std::string("name: demo\n") +
                           "node: {kubelet_version: v1.31.2, numa_nodes: [0, 1], fsync: true}\n" +
                           "timeouts: {step: 5s, wait: 2s, expect: 1s}\n" + kPlugin + R"(steps:
  - admit:
      apiVersion: v1
      kind: Pod
      metadata: {name: p}
      spec:
        containers:
          - name: c
            resources: {limits: {example.com/gpu: 1}}
    expect:
      pods:
        p:
          admitted: true
          message: {regex: "^$"}
          containers:
            c:
              devices: {example.com/gpu: {count: 1, subset_of: [a, b]}}
              envs_exact: {X: "1"}
              mounts: [{container_path: /dev/x, read_only: true}]
      calls:
        gpu:
          exact: true
          sequence:
            - method: Allocate
              args: {container_requests: [{devices_ids: [{regex: "a|b"}]}]}
  - restart_kubelet:
  - reboot_node: {wait_for_registration: false}
  - advance_clock: 5m1s
  - set_health: {plugin: gpu, device: a, health: Unhealthy}
  - pause_plugin: gpu
  - delete_pod: default/p
  - truncate_checkpoint: 10
  - run: {command: "true", expect_exit: 0}
    versions: ["1.30", "1.34"]
)";
  absl::StatusOr<Scenario> s = ParseScenario(text, "dir/demo.yaml");
  ASSERT_OK(s);
  EXPECT_EQ(s->name, "demo");
  EXPECT_EQ(s->dir, "dir");
  EXPECT_EQ(s->node.kubelet_versions, std::vector<std::string>{"1.31"});
  EXPECT_EQ(s->node.numa_nodes, (std::vector<int>{0, 1}));
  EXPECT_TRUE(s->node.fsync);
  EXPECT_EQ(s->timeouts.step, absl::Seconds(5));
  ASSERT_EQ(s->plugins.size(), 1u);
  EXPECT_EQ(s->plugins[0].resource, "example.com/gpu");
  EXPECT_TRUE(s->plugins[0].reregisters);
  ASSERT_EQ(s->steps.size(), 9u);
  const Step& admit = s->steps[0];
  EXPECT_EQ(admit.kind, StepKind::kAdmit);
  EXPECT_EQ(admit.pod.name, "p");
  EXPECT_EQ(admit.pod.containers[0].limits.at("example.com/gpu"), 1);
  EXPECT_EQ(admit.loc.ToString(), "dir/demo.yaml:12:5");
  ASSERT_EQ(admit.expect.pods.size(), 1u);
  const ContainerExpect& c = admit.expect.pods[0].containers[0];
  EXPECT_EQ(c.devices[0].set.count, 1);
  EXPECT_TRUE(c.envs->exact);
  EXPECT_TRUE(admit.expect.pods[0].message->regex);
  ASSERT_EQ(admit.expect.calls.size(), 1u);
  EXPECT_TRUE(admit.expect.calls[0].exact);
  EXPECT_EQ(admit.expect.calls[0].sequence[0].args->dump(),
            R"({"container_requests":[{"devices_ids":[{"regex":"a|b"}]}]})");
  EXPECT_EQ(s->steps[1].kind, StepKind::kRestartKubelet);
  EXPECT_FALSE(s->steps[2].wait_for_registration);
  EXPECT_EQ(s->steps[3].advance, absl::Minutes(5) + absl::Seconds(1));
  EXPECT_EQ(s->steps[4].health, "Unhealthy");
  EXPECT_EQ(s->steps[5].kind, StepKind::kPausePlugin);
  EXPECT_EQ(s->steps[6].pod_ref, "default/p");
  EXPECT_EQ(s->steps[7].truncate_to, 10);
  EXPECT_EQ(s->steps[8].versions, (std::vector<std::string>{"1.30", "1.34"}));
}

TEST(ScenarioParser, NameDefaultsToFileName) {
  absl::StatusOr<Scenario> s = ParseScenario("steps:\n  - node_status:\n", "a/b/my-test.yaml");
  ASSERT_OK(s);
  EXPECT_EQ(s->name, "my-test");
}

TEST(ScenarioParser, MisspeltKeysGetDidYouMean) {
  EXPECT_EQ(Err("stpes: []\n"),
            "s.yaml:1:1: unknown key 'stpes' in a scenario (did you mean 'steps'?)");
  EXPECT_EQ(Err(std::string(kPlugin) + "steps:\n  - admitt: x.yaml\n"),
            "s.yaml:9:5: unknown key 'admitt' in a step (did you mean 'admit'?)");
  EXPECT_EQ(
      Err(std::string(kPlugin) + "steps:\n  - check:\n    expect: {pods: {p: {admited: true}}}\n"),
      "s.yaml:10:25: unknown key 'admited' in expect.pods['p'] (did you mean 'admitted'?)");
}

TEST(ScenarioParser, InlineSamplePluginErrorsPointIntoTheScenario) {
  const std::string text = R"(plugins:
  - name: gpu
    sample_plugin:
      resource: example.com/gpu
      devcies: []
steps:
  - node_status:
)";
  EXPECT_EQ(Err(text), "s.yaml:5:7: unknown key 'devcies' in the config (did you mean 'devices'?)");
}

TEST(ScenarioParser, InlinePodErrorsPointIntoTheScenario) {
  const std::string text = R"(steps:
  - admit:
      apiVersion: v1
      kind: Pod
      metadata: {name: p}
      spec:
        containers:
          - name: c
            resources:
              limits: {example.com/gpu: 2}
              requests: {example.com/gpu: 1}
)";
  EXPECT_THAT(Err(text), HasSubstr("s.yaml:11:"));
  EXPECT_THAT(Err(text), HasSubstr("must be equal to example.com/gpu limit of 2"));
}

TEST(ScenarioParser, WrongTypesAreErrors) {
  EXPECT_EQ(Err("steps:\n  - advance_clock: soon\n"),
            "s.yaml:2:20: advance_clock must be a duration such as 500ms, 2s or 5m1s");
  EXPECT_EQ(Err("node: {fsync: yes please}\nsteps: []\n"),
            "s.yaml:1:15: node.fsync must be true or false");
  EXPECT_EQ(Err("steps:\n  - check:\n    expect: {resources: {r: {capacity: two}}}\n"),
            "s.yaml:3:40: capacity must be an integer or absent");
  EXPECT_EQ(Err("steps: {}\n"), "s.yaml:1:8: steps must be a list");
  EXPECT_EQ(Err("steps:\n  - restart_kubelet: now\n"),
            "s.yaml:2:22: restart_kubelet takes no value or a mapping");
  EXPECT_EQ(Err("steps:\n  - check: 1\n    expect: {log: x}\n"),
            "s.yaml:2:12: check takes no value");
}

// node.feature_gates is checked against every version's gates at parse time
// (each run applies it to its own version's, where a gate that version lacks
// is refused).
TEST(ScenarioParser, FeatureGatesAreCheckedWhereTheyAreWritten) {
  EXPECT_EQ(Err("node: {feature_gates: \"Nope=true\"}\nsteps: []\n"),
            "s.yaml:1:23: node.feature_gates: unrecognized feature gate: Nope");
  EXPECT_EQ(Err("node: {feature_gates: \"KubeletPodResourcesGet=yes\"}\nsteps: []\n"),
            "s.yaml:1:23: node.feature_gates: invalid value of KubeletPodResourcesGet=yes, err: "
            "strconv.ParseBool: parsing \"yes\": invalid syntax");
  absl::StatusOr<Scenario> ok = ParseScenario(
      "node: {feature_gates: \"KubeletPodResourcesListUseActivePods=true\"}\nsteps: []\n",
      "s.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->node.feature_gates, "KubeletPodResourcesListUseActivePods=true");
}

TEST(ScenarioParser, StepsNeedExactlyOneAction) {
  EXPECT_EQ(Err("steps:\n  - delete_pod: a\n    restart_kubelet:\n"),
            "s.yaml:3:5: a step has exactly one action; found 'delete_pod' and 'restart_kubelet'");
  EXPECT_EQ(
      Err("steps:\n  - name: nothing\n"),
      "s.yaml:2:5: a step needs an action (admit, delete_pod, restart_kubelet, ...) or expect:");
}

TEST(ScenarioParser, UnknownPluginsAndMethods) {
  EXPECT_EQ(Err(std::string(kPlugin) + "steps:\n  - kill_plugin: gpuu\n"),
            "s.yaml:9:18: unknown plugin 'gpuu' (did you mean 'gpu'?)");
  EXPECT_EQ(
      Err(std::string(kPlugin) + "steps:\n  - check:\n    expect: {calls: {gpu: [Alocate]}}\n"),
      "s.yaml:10:28: unknown method 'Alocate' (did you mean 'Allocate'?)");
}

TEST(ScenarioParser, PluginKindsAreExclusive) {
  EXPECT_THAT(Err("plugins:\n  - name: x\n    command: a\n    external: true\nsteps: []\n"),
              HasSubstr("needs exactly one of command, sample_plugin or external"));
  EXPECT_THAT(Err("plugins:\n  - name: x\n    external: true\nsteps: []\n"),
              HasSubstr("external plugin 'x' needs resource"));
  EXPECT_THAT(Err("plugins:\n  - name: x\n    command: a\nsteps:\n  - set_health: {plugin: x, "
                  "device: d, health: Unhealthy}\n"),
              HasSubstr("plugin 'x' has no control file"));
}

TEST(ScenarioParser, BadRegexAndVersion) {
  EXPECT_THAT(Err("steps:\n  - check:\n    expect: {log: \"(\"}\n"),
              HasSubstr("s.yaml:3:19: log: invalid regular expression"));
  EXPECT_THAT(Err("node: {kubelet_version: \"1.2\"}\nsteps: []\n"),
              HasSubstr("s.yaml:1:25: node.kubelet_version:"));
}

TEST(ScenarioParser, SyntaxErrorsHavePositions) {
  EXPECT_THAT(Err("steps:\n  - [unclosed\n"), HasSubstr("s.yaml:3:1:"));
}

TEST(ScenarioParser, MissingFile) {
  absl::StatusOr<Scenario> s = LoadScenario("/nonexistent/x.yaml");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
}

TEST(ScenarioParser, InlineSamplePluginInsideAFlowStylePluginEntry) {
  absl::StatusOr<Scenario> s = ParseScenario(R"(plugins:
  - {name: r1, sample_plugin: {resource: example.com/r, devices: [{id: a}]}}
  - {name: r2, sample_plugin: {resource: example.com/s,   # a comment }
                               devices: [{id: "x}"}, {id: y}]}, start: manual}
steps:
  - check:
)",
                                             "s.yaml");
  ASSERT_OK(s);
  ASSERT_EQ(s->plugins.size(), 2u);
  EXPECT_EQ(s->plugins[0].resource, "example.com/r");
  EXPECT_EQ(s->plugins[0].initial_devices, 1);
  EXPECT_EQ(s->plugins[1].resource, "example.com/s");
  EXPECT_EQ(s->plugins[1].initial_devices, 2);
  EXPECT_EQ(s->plugins[1].start, PluginStart::kManual);
}

TEST(ScenarioParser, FlowStyleSamplePluginErrorsPointIntoTheFile) {
  EXPECT_THAT(Err(R"(plugins:
  - {name: r1, sample_plugin: {resource: example.com/r, devices: [{id: a}], bogus: 1}}
steps: []
)"),
              HasSubstr("s.yaml:2:"));
}

TEST(ScenarioParser, ExpectForCapturesAndKubeletWindow) {
  absl::StatusOr<Scenario> s = ParseScenario(std::string(kPlugin) + R"(steps:
  - check:
    capture:
      before: {pod: p, container: c, resource: example.com/gpu}
      cp: {pod: p, container: c, resource: example.com/gpu, from: checkpoint}
      free: {resource: example.com/gpu, set: healthy}
  - stop_kubelet:
  - write_checkpoint:
      format: v1
      entries: [{pod: p, container: c, resource: example.com/gpu, devices: [a]}]
      registered: {example.com/gpu: [a, b]}
      checksum: wrong
  - start_kubelet: {wait_for_registration: false}
    expect:
      resources: {example.com/gpu: {capacity: absent, allocated: {superset_of: $before, count: $cp}}}
    expect_for: 2s
)",
                                             "s.yaml");
  ASSERT_OK(s);
  ASSERT_EQ(s->steps.size(), 4u);
  ASSERT_EQ(s->steps[0].captures.size(), 3u);
  EXPECT_TRUE(s->steps[0].captures[1].checkpoint);
  EXPECT_EQ(s->steps[0].captures[2].set, "healthy");
  EXPECT_EQ(s->steps[1].kind, StepKind::kStopKubelet);
  ASSERT_TRUE(s->steps[2].checkpoint.has_value());
  EXPECT_TRUE(s->steps[2].checkpoint->v1);
  EXPECT_TRUE(s->steps[2].checkpoint->wrong_checksum);
  EXPECT_EQ(s->steps[2].checkpoint->entries[0].devices.at(-1), (std::vector<std::string>{"a"}));
  const Step& start = s->steps[3];
  EXPECT_EQ(start.kind, StepKind::kStartKubelet);
  EXPECT_FALSE(start.wait_for_registration);
  EXPECT_EQ(*start.expect_for, absl::Seconds(2));
  const ResourceExpect& r = start.expect.resources[0];
  EXPECT_TRUE(r.capacity->absent);
  EXPECT_EQ(r.allocated->superset_of->capture, "before");
  EXPECT_EQ(*r.allocated->count_of, "cp");
}

TEST(ScenarioParser, CaptureErrors) {
  EXPECT_THAT(Err(std::string(kPlugin) + R"(steps:
  - check:
    capture: {before: {resource: example.com/gpu, set: healthy}}
  - check:
    expect: {resources: {example.com/gpu: {healthy: $befor}}}
)"),
              HasSubstr("s.yaml:12:53: expect.resources['example.com/gpu'].healthy: no earlier "
                        "step captures 'befor' (did you mean 'before'?)"));
  EXPECT_THAT(Err(std::string(kPlugin) + R"(steps:
  - check:
    capture: {x: {resource: example.com/gpu, set: healty}}
)"),
              HasSubstr("unknown set 'healty'"));
  EXPECT_THAT(Err(std::string(kPlugin) + R"(steps:
  - check:
    capture: {x: {resource: example.com/gpu, set: healthy}}
  - check:
    capture: {x: {resource: example.com/gpu, set: healthy}}
)"),
              HasSubstr("capture 'x' is already taken at s.yaml:10:15"));
  EXPECT_THAT(Err(std::string(kPlugin) + "steps:\n  - check:\n    expect_for: 1s\n"),
              HasSubstr("expect_for needs expect:"));
}

TEST(ScenarioParser, RegisterResultOnlyForRegister) {
  EXPECT_THAT(Err(std::string(kPlugin) + R"(steps:
  - check:
    expect: {calls: {gpu: [{method: Allocate, code: UNKNOWN}]}}
)"),
              HasSubstr("ok, error and code apply to calls the plugin made (Register)"));
}

}  // namespace scenario_parser_test
}  // namespace devmgr::scenario

#include "scenario/report/version_matrix.h"

namespace devmgr::scenario {
namespace scenario_parser_test {

TEST(ScenarioParser, AppliesToAndVersionRanges) {
  absl::StatusOr<Scenario> s = ParseScenario(
      "applies_to: \"1.34-1.36\"\nsteps:\n  - node_status:\n    versions: [\"1.30\", "
      "\"1.36-1.37\"]\n",
      "a.yaml");
  ASSERT_OK(s);
  EXPECT_THAT(s->applies_to, ::testing::ElementsAre("1.34", "1.35", "1.36"));
  EXPECT_THAT(s->steps[0].versions, ::testing::ElementsAre("1.30", "1.36", "1.37"));
  EXPECT_THAT(Err("applies_to: \"1.37-1.34\"\nsteps:\n  - node_status:\n"),
              HasSubstr("s.yaml:1:13: applies_to: kubelet version range \"1.37-1.34\""));
  EXPECT_THAT(Err("applies_to: 1.29\nsteps:\n  - node_status:\n"),
              HasSubstr("older than devmgr emulates"));
}

TEST(VersionMatrixPlan, AppliesToAndPinnedVersions) {
  absl::StatusOr<Scenario> s =
      ParseScenario("applies_to: \"1.37\"\nsteps:\n  - node_status:\n", "only.yaml");
  ASSERT_OK(s);
  auto runs = PlanRuns(*s, {"1.36", "1.37"}, /*matrix=*/true);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_TRUE(runs[0].skip);
  EXPECT_EQ(runs[0].reason, "applies to kubelet 1.37 only");
  EXPECT_EQ(runs[0].display, "only [1.36]");
  EXPECT_FALSE(runs[1].skip);
  // Single version: no suffix, skipped outside applies_to.
  runs = PlanRuns(*s, {"1.36"}, /*matrix=*/false);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(runs[0].skip);
  EXPECT_EQ(runs[0].display, "only");
  absl::StatusOr<Scenario> pinned = ParseScenario(
      "node: {kubelet_versions: [\"1.32\", \"1.34\"]}\nsteps:\n  - node_status:\n", "pin.yaml");
  ASSERT_OK(pinned);
  runs = PlanRuns(*pinned, {"1.33"}, /*matrix=*/false);
  ASSERT_EQ(runs.size(), 2u);  // the scenario's own versions
  EXPECT_EQ(runs[1].display, "pin [1.34]");
  runs = PlanRuns(*pinned, {"1.33", "1.34"}, /*matrix=*/true);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_TRUE(runs[0].skip);
  EXPECT_FALSE(runs[1].skip);
}

}  // namespace scenario_parser_test
}  // namespace devmgr::scenario

namespace devmgr::scenario {
namespace scenario_parser_test {

constexpr char kDraDriver[] = R"(plugins:
  - name: drv
    dra_driver: gpu.example.com
    command: my-driver --node-name "$DEVMGR_NODE_NAME"
)";

TEST(ScenarioParserDra, DriversStepsAndExpectations) {
  const std::string text = std::string(kDraDriver) + R"(steps:
  - wait_driver: {plugin: drv, devices: 2}
  - apply:
      apiVersion: resource.k8s.io/v1
      kind: ResourceClaim
      metadata: {name: gpu}
      spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}}]}}
  - delete_object: {kind: ResourceClaim, name: gpu}
  - delete_object: {kind: DeviceClass, name: c}
  - check:
    expect:
      claims:
        - {name: gpu, allocated: true, reserved_for: [p], prepared: true, devices: 1}
        - {pod: p, claim: gpu, exists: false}
      dra_calls:
        gpu.example.com:
          since: start
          sequence: [NodePrepareResources, {method: NodeUnprepareResources, claims: [{regex: "^g"}], ok: true}]
          counts: {NodePrepareResources: 1}
      dra_checkpoint: {valid: true, entry_count: 1, claims: [gpu], absent_claims: [x], pods: [p]}
      pods: {p: {containers: {c: {dra_cdi_devices: [{regex: "gpu="}]}}}}
)";
  absl::StatusOr<Scenario> s = ParseScenario(text, "d.yaml");
  ASSERT_OK(s);
  EXPECT_TRUE(s->UsesDra());
  EXPECT_TRUE(s->node.plugins_registry);  // implied: drivers register through the watcher
  EXPECT_EQ(s->plugins[0].dra_driver, "gpu.example.com");
  EXPECT_EQ(s->steps[0].kind, StepKind::kWaitDriver);
  EXPECT_EQ(s->steps[0].driver, "gpu.example.com");
  EXPECT_EQ(s->steps[0].plugin, "drv");
  EXPECT_EQ(s->steps[0].min_devices, 2);
  ASSERT_EQ(s->steps[1].objects.size(), 1u);
  EXPECT_EQ(s->steps[1].objects[0]["metadata"]["name"], "gpu");
  EXPECT_EQ(DescribeStep(s->steps[1]), "apply [ResourceClaim gpu]");
  EXPECT_EQ(s->steps[2].object_namespace, "default");
  EXPECT_EQ(s->steps[3].object_namespace, "");
  const Expectations& e = s->steps[4].expect;
  ASSERT_EQ(e.claims.size(), 2u);
  EXPECT_EQ(e.claims[0].reserved_for, std::vector<std::string>{"p"});
  EXPECT_EQ(e.claims[1].pod, "p");
  ASSERT_EQ(e.dra_calls.size(), 1u);
  EXPECT_TRUE(e.dra_calls[0].since_start);
  ASSERT_EQ(e.dra_calls[0].sequence.size(), 2u);
  EXPECT_TRUE(e.dra_calls[0].sequence[1].claims->at(0).regex);
  ASSERT_TRUE(e.dra_checkpoint);
  EXPECT_EQ(e.dra_checkpoint->pods, std::vector<std::string>{"p"});
  ASSERT_TRUE(e.pods[0].containers[0].dra_cdi_devices);
}

TEST(ScenarioParserDra, ApiFaultsAtTheTopAndAsAStep) {
  absl::StatusOr<Scenario> s = ParseScenario(R"(api_faults:
  - method=POST,path=/apis/resource.k8s.io/v1/resourceslices,error=409
steps:
  - api_fault: method=GET,error=500,times=2
  - api_fault: [delay=1s, "watch=true,drop-watch=2s"]
    expect:
      api_requests: [{fault: true}]
)",
                                             "f.yaml");
  ASSERT_OK(s);
  EXPECT_TRUE(s->UsesDra());  // the faults need the API endpoint
  EXPECT_THAT(
      s->api_faults,
      ::testing::ElementsAre("method=POST,path=/apis/resource.k8s.io/v1/resourceslices,error=409"));
  EXPECT_EQ(s->steps[0].kind, StepKind::kApiFault);
  EXPECT_THAT(s->steps[0].api_faults, ::testing::ElementsAre("method=GET,error=500,times=2"));
  EXPECT_EQ(DescribeStep(s->steps[0]), "inject API fault(s) [method=GET,error=500,times=2]");
  EXPECT_THAT(s->steps[1].api_faults,
              ::testing::ElementsAre("delay=1s", "watch=true,drop-watch=2s"));
  ASSERT_TRUE(s->steps[1].expect.api_requests);
  EXPECT_EQ(s->steps[1].expect.api_requests->sequence.size(), 1u);

  // A SPEC ParseFault refuses, at its position.
  EXPECT_THAT(Err("api_faults: [method=GET]\nsteps:\n  - check:\n    expect: {log: [x]}\n"),
              HasSubstr("s.yaml:1:14: api_faults: --api-fault \"method=GET\": give exactly one "
                        "of error=, delay=, drop-watch=, expire=true"));
  EXPECT_THAT(Err("steps:\n  - api_fault: error=5000\n"), HasSubstr("s.yaml:2:16: api_fault: "));
  EXPECT_THAT(Err("steps:\n  - api_fault: []\n"),
              HasSubstr("s.yaml:2:16: api_fault needs at least one fault SPEC"));
  EXPECT_THAT(Err("steps:\n  - api_fault: {error: 500}\n"), HasSubstr("s.yaml:2:16: api_fault"));
}

TEST(ScenarioParserDra, BadInputHasPositionsAndSuggestions) {
  const std::string steps = std::string(kDraDriver) + "steps:\n";
  EXPECT_THAT(Err(steps + "  - apply:\n      apiVersion: resource.k8s.io/v1\n      kind: "
                          "ResourceClaimTemplat\n      metadata: {name: t}\n"),
              HasSubstr("s.yaml:7:7: s.yaml: apply takes ResourceClaim, ResourceClaimTemplate "
                        "and DeviceClass objects, not kind 'ResourceClaimTemplat' (did you mean "
                        "'ResourceClaimTemplate'?)"));
  EXPECT_THAT(Err(steps + "  - apply:\n      apiVersion: resource.k8s.io/v1beta1\n      kind: "
                          "DeviceClass\n      metadata: {name: c}\n"),
              HasSubstr("DeviceClass needs apiVersion resource.k8s.io/v1"));
  EXPECT_THAT(Err(steps + "  - apply: missing.yaml\n"), HasSubstr("s.yaml:6:12: apply: "));
  EXPECT_THAT(Err(steps + "  - delete_object: {kind: DeviceClas, name: c}\n"),
              HasSubstr("s.yaml:6:27: unknown kind 'DeviceClas' (did you mean 'DeviceClass'?)"));
  EXPECT_THAT(Err(steps + "  - delete_object: {kind: DeviceClass, name: c, namespace: x}\n"),
              HasSubstr("a DeviceClass has no namespace"));
  EXPECT_THAT(Err(steps + "  - check:\n    expect:\n      dra_calls: {gpu.example.con: "
                          "[NodePrepareResources]}\n"),
              HasSubstr("s.yaml:8:19: no plugin of the scenario is DRA driver 'gpu.example.con' "
                        "(did you mean 'gpu.example.com'?)"));
  EXPECT_THAT(Err(steps + "  - check:\n    expect:\n      dra_calls: {gpu.example.com: "
                          "[NodePrepareResource]}\n"),
              HasSubstr("unknown DRA method 'NodePrepareResource' (did you mean "
                        "'NodePrepareResources'?)"));
  EXPECT_THAT(Err(steps + "  - check:\n    expect:\n      claims: [{pod: p}]\n"),
              HasSubstr("s.yaml:8:16: a claim expectation needs name, or pod and claim"));
  EXPECT_THAT(Err(steps + "  - check:\n    expect:\n      claims: [{name: g, prepard: true}]\n"),
              HasSubstr("unknown key 'prepard' in a claim expectation (did you mean 'prepared'?)"));
  EXPECT_THAT(Err(steps + "  - check:\n    expect:\n      dra_checkpoint: {entries: 1}\n"),
              HasSubstr("unknown key 'entries' in expect.dra_checkpoint"));
  EXPECT_THAT(Err(steps + "  - wait_driver: {plugin: drv, driver: x}\n"),
              HasSubstr("give plugin or driver, not both"));
  EXPECT_THAT(Err("plugins:\n  - {name: d, dra_driver: x, sample_plugin: {resource: a/b}}\n"
                  "steps:\n  - check:\n    expect: {log: [x]}\n"),
              HasSubstr("a dra_driver plugin needs command"));
}

TEST(ScenarioParserDra, CheckpointFilesAndFailingStarts) {
  const std::string text = std::string(kDraDriver) + R"(steps:
  - stop_kubelet:
  - corrupt_checkpoint: {file: dra_manager_state}
  - start_kubelet: {expect_error: 'checkpoint is corrupted$'}
  - truncate_checkpoint: {file: dra_manager_state}
  - write_checkpoint: {file: dra_manager_state, content: '{not json'}
  - delete_checkpoint: {file: dra_manager_state}
  - restart_kubelet: {wait_for_registration: false, expect_error: x}
  - truncate_checkpoint: {bytes: 3}
  - corrupt_checkpoint:
  - reboot_node: {expect_error: y}
)";
  absl::StatusOr<Scenario> s = ParseScenario(text, "d.yaml");
  ASSERT_OK(s);
  const std::vector<Step>& st = s->steps;
  EXPECT_EQ(st[1].checkpoint_file, CheckpointFile::kDra);
  EXPECT_EQ(DescribeStep(st[1]), "corrupt dra_manager_state's checksum");
  EXPECT_EQ(st[2].expect_error, "checkpoint is corrupted$");
  EXPECT_EQ(DescribeStep(st[2]),
            "start the kubelet (its start must fail with /checkpoint is corrupted$/)");
  EXPECT_EQ(st[3].checkpoint_file, CheckpointFile::kDra);
  EXPECT_EQ(st[3].truncate_to, 0);
  EXPECT_EQ(st[4].content, "{not json");
  EXPECT_EQ(st[4].checkpoint_file, CheckpointFile::kDra);
  EXPECT_FALSE(st[4].checkpoint);
  EXPECT_EQ(DescribeStep(st[5]), "delete dra_manager_state");
  EXPECT_FALSE(st[6].wait_for_registration);
  EXPECT_EQ(st[6].expect_error, "x");
  EXPECT_EQ(st[7].checkpoint_file, CheckpointFile::kDeviceManager);
  EXPECT_EQ(st[7].truncate_to, 3);
  EXPECT_EQ(DescribeStep(st[8]), "corrupt the checkpoint's checksum");
  EXPECT_EQ(st[9].expect_error, "y");

  // An edit of dra_manager_state turns DRA on, as the DRA steps do.
  absl::StatusOr<Scenario> edit =
      ParseScenario("steps:\n  - delete_checkpoint: {file: dra_manager_state}\n", "e.yaml");
  ASSERT_OK(edit);
  EXPECT_TRUE(edit->UsesDra());
  absl::StatusOr<Scenario> plain = ParseScenario("steps:\n  - delete_checkpoint:\n", "e.yaml");
  ASSERT_OK(plain);
  EXPECT_FALSE(plain->UsesDra());
}

TEST(ScenarioParserDra, CheckpointFileAndExpectErrorMistakesHavePositions) {
  EXPECT_THAT(Err("steps:\n  - corrupt_checkpoint: {file: dra_manager_stat}\n"),
              HasSubstr("s.yaml:2:32: unknown checkpoint file 'dra_manager_stat' (did you mean "
                        "'dra_manager_state'?)"));
  EXPECT_THAT(Err("steps:\n  - delete_checkpoint: {fiel: dra_manager_state}\n"),
              HasSubstr("s.yaml:2:25: unknown key 'fiel' in delete_checkpoint (did you mean "
                        "'file'?)"));
  EXPECT_THAT(Err("steps:\n  - write_checkpoint: {file: dra_manager_state}\n"),
              HasSubstr("s.yaml:2:23: write_checkpoint with file needs content"));
  EXPECT_THAT(Err("steps:\n  - truncate_checkpoint: {file: dra_manager_state, byte: 2}\n"),
              HasSubstr("unknown key 'byte' in truncate_checkpoint (did you mean 'bytes'?)"));
  EXPECT_THAT(Err("steps:\n  - restart_kubelet: {expect_eror: x}\n"),
              HasSubstr("s.yaml:2:23: unknown key 'expect_eror' in restart_kubelet (did you mean "
                        "'expect_error'?)"));
  EXPECT_THAT(Err("steps:\n  - start_kubelet: {expect_error: '(unclosed'}\n"),
              HasSubstr("s.yaml:2:35: expect_error is not a valid regular expression"));
  EXPECT_THAT(Err("steps:\n  - reboot_node: {expect_error: ''}\n"),
              HasSubstr("s.yaml:2:33: expect_error (a regular expression)"));
}

TEST(VersionMatrixPlan, DraScenariosAreSkippedBefore134) {
  absl::StatusOr<Scenario> s = ParseScenario(
      std::string(kDraDriver) + "steps:\n  - check:\n    expect: {log: [x]}\n", "dra.yaml");
  ASSERT_OK(s);
  auto runs = PlanRuns(*s, {"1.33", "1.34"}, /*matrix=*/true);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_TRUE(runs[0].skip);
  EXPECT_EQ(runs[0].reason,
            "DRA needs kubelet 1.34 or newer (devmgr emulates no DRAPlugin handler before)");
  EXPECT_FALSE(runs[1].skip);
}

}  // namespace scenario_parser_test
}  // namespace devmgr::scenario
