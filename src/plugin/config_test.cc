#include "plugin/config.h"

#include <string>

#include "common/source_dir_testutil.h"
#include "common/status_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devmgr::plugin {
namespace {

using ::testing::ElementsAre;

absl::StatusOr<Config> Parse(const std::string& yaml) { return ParseConfig(yaml, "p.yaml"); }

std::string ErrorOf(const std::string& yaml) {
  absl::StatusOr<Config> c = Parse(yaml);
  if (c.ok()) return "<ok>";
  return std::string(c.status().message());
}

TEST(ConfigTest, ParsesAFullConfig) {
  absl::StatusOr<Config> c = Parse(R"(
resource: example.com/gpu
devices:
  - {id: gpu-0, numa: [0]}
  - {id: gpu-1, health: Unhealthy, numa: [0, 1]}
  - {id: gpu-2}
  - {id: gpu-3, topology: {nodes: []}}
options:
  pre_start_required: true
  get_preferred_allocation_available: true
allocate:
  envs: {VISIBLE: "{{.DeviceIDs}}"}
  mounts: [{container_path: /c, host_path: /h, read_only: true}]
  per_device:
    device_specs: [{container_path: "/dev/{{.DeviceID}}", host_path: "/dev/{{.DeviceID}}", permissions: rw}]
    cdi_devices: ["example.com/gpu={{.DeviceID}}"]
preferred_allocation: {policy: last}
registration: {mode: plugins-registry, reregister: false, timeout: 5s}
list_and_watch: {resend_interval: 2s, shuffle: true, seed: 7}
faults:
  allocate: {delay: 150ms, error: {code: InvalidArgument, message: nope}, skip_calls: 1, times: 2}
  list_and_watch: {end_stream_after: 3}
  register: {version: v1alpha, resource: "bad name"}
health_changes:
  - {after: 2s, device: gpu-0, health: Unhealthy}
  - {after: 1s, device: gpu-1, health: Healthy}
)");
  ASSERT_OK(c);
  EXPECT_EQ(c->resource, "example.com/gpu");
  EXPECT_EQ(c->socket, "example.com-gpu.sock");
  EXPECT_EQ(c->registration.registry_socket, "example.com-gpu-reg.sock");
  ASSERT_EQ(c->devices.size(), 4u);
  EXPECT_TRUE(c->devices[0].has_topology);
  EXPECT_THAT(c->devices[1].numa_nodes, ElementsAre(0, 1));
  EXPECT_EQ(c->devices[1].health, "Unhealthy");
  EXPECT_FALSE(c->devices[2].has_topology);
  EXPECT_TRUE(c->devices[3].has_topology);
  EXPECT_TRUE(c->devices[3].numa_nodes.empty());
  EXPECT_TRUE(c->pre_start_required);
  EXPECT_TRUE(c->get_preferred_allocation_available);
  EXPECT_EQ(c->allocate.per_container.envs.at("VISIBLE"), "{{.DeviceIDs}}");
  EXPECT_TRUE(c->allocate.per_container.mounts[0].read_only);
  EXPECT_EQ(c->allocate.per_device.device_specs[0].permissions, "rw");
  EXPECT_EQ(c->preferred_allocation.policy, PreferredAllocationConfig::Policy::kLast);
  EXPECT_EQ(c->registration.mode, RegistrationConfig::Mode::kPluginsRegistry);
  EXPECT_FALSE(c->registration.reregister);
  EXPECT_EQ(c->registration.timeout, absl::Seconds(5));
  EXPECT_EQ(c->list_and_watch.resend_interval, absl::Seconds(2));
  EXPECT_EQ(c->list_and_watch.seed, 7u);
  const FaultConfig& f = c->fault(Rpc::kAllocate);
  EXPECT_EQ(f.delay, absl::Milliseconds(150));
  ASSERT_TRUE(f.error.has_value());
  EXPECT_EQ(f.error->code, 3);
  EXPECT_EQ(f.error->message, "nope");
  EXPECT_EQ(f.skip_calls, 1);
  EXPECT_EQ(f.times, 2);
  EXPECT_EQ(c->fault(Rpc::kListAndWatch).end_stream_after, 3);
  EXPECT_EQ(c->register_overrides.version, "v1alpha");
  EXPECT_EQ(c->register_overrides.resource, "bad name");
  ASSERT_EQ(c->health_changes.size(), 2u);
  EXPECT_EQ(c->health_changes[0].device, "gpu-1");  // sorted by time
}

TEST(ConfigTest, GeneratesDevicesFromCount) {
  absl::StatusOr<Config> c = Parse(R"(
resource: example.com/nic
socket: nic.sock
devices:
  - {count: 3, id_prefix: vf-, numa: [1]}
  - {count: 2, id_prefix: pf-, start: 10, health: Unhealthy}
)");
  ASSERT_OK(c);
  EXPECT_EQ(c->socket, "nic.sock");
  ASSERT_EQ(c->devices.size(), 5u);
  EXPECT_EQ(c->devices[0].id, "vf-0");
  EXPECT_EQ(c->devices[2].id, "vf-2");
  EXPECT_THAT(c->devices[2].numa_nodes, ElementsAre(1));
  EXPECT_EQ(c->devices[3].id, "pf-10");
  EXPECT_EQ(c->devices[4].health, "Unhealthy");
}

TEST(ConfigTest, KeepsControlBytesInIds) {
  absl::StatusOr<Config> c = Parse("resource: a.b/c\ndevices: [{id: \"x\\0y\\x01\"}]\n");
  ASSERT_OK(c);
  EXPECT_EQ(c->devices[0].id, std::string("x\0y\x01", 4));
}

TEST(ConfigTest, ErrorMessages) {
  EXPECT_EQ(ErrorOf("resource: a.b/c\ndevcies: []\n"),
            "p.yaml:2:1: unknown key 'devcies' in the config (did you mean 'devices'?)");
  EXPECT_EQ(ErrorOf("devices: []\n"), "p.yaml:1:1: missing key 'resource'");
  EXPECT_EQ(ErrorOf("resource: a.b/c\ndevices:\n  - {id: a, helth: Healthy}\n"),
            "p.yaml:3:13: unknown key 'helth' in a device (did you mean 'health'?)");
  EXPECT_EQ(ErrorOf("resource: a.b/c\nfaults:\n  allocate: {end_stream_after: 1}\n"),
            "p.yaml:3:14: key 'end_stream_after' does not apply to faults.allocate");
  EXPECT_EQ(ErrorOf("resource: a.b/c\nfaults:\n  alocate: {}\n"),
            "p.yaml:3:3: unknown key 'alocate' in faults (did you mean 'allocate'?)");
  EXPECT_EQ(ErrorOf("resource: a.b/c\nfaults:\n  allocate: {delay: 5}\n"),
            "p.yaml:3:21: delay must be a duration such as 500ms, 2s or 1m30s");
  EXPECT_EQ(ErrorOf("resource: a.b/c\nfaults:\n  allocate: {error: {code: Unavailabel}}\n"),
            "p.yaml:3:28: unknown gRPC status code 'Unavailabel' (did you mean 'UNAVAILABLE'?)");
  EXPECT_EQ(ErrorOf("resource: a.b/c\nallocate:\n  envs: {A: \"{{.DeviceId}}\"}\n"),
            "p.yaml:3:13: unknown template field {{.DeviceId}} (did you mean {{.DeviceIDs}}?)");
  EXPECT_EQ(ErrorOf("resource: a.b/c\nallocate:\n  envs: {A: \"{{.DeviceIndex}}\"}\n"),
            "p.yaml:3:13: unknown template field {{.DeviceIndex}} ({{.DeviceIndex}} is only "
            "available in allocate.per_device)");
  EXPECT_EQ(ErrorOf("resource: a.b/c\nregistration: {mode: registry}\n"),
            "p.yaml:2:22: unknown registration mode 'registry' (want kubelet-sock or "
            "plugins-registry)");
  EXPECT_EQ(ErrorOf("resource: a.b/c\npreferred_allocation: {policy: frist}\n"),
            "p.yaml:2:32: unknown preferred_allocation policy 'frist' (did you mean 'first'?)");
  EXPECT_EQ(ErrorOf("resource: a.b/c\noptions: {pre_start_required: maybe}\n"),
            "p.yaml:2:31: pre_start_required must be true or false");
  EXPECT_EQ(ErrorOf("resource: a.b/c\ndevices: [{id: a, numa: [0], topology: {nodes: []}}]\n"),
            "p.yaml:2:40: give either numa or topology, not both");
  EXPECT_EQ(ErrorOf("resource: a.b/c\nfaults:\n  register: {error: boom}\n"),
            "p.yaml:3:13: faults.register: error, hang and empty apply only to "
            "registration.mode plugins-registry (the GetInfo RPC)");
  EXPECT_EQ(ErrorOf("resource: [a\n"), "p.yaml:2:1: end of sequence flow not found");
  EXPECT_EQ(ErrorOf(""), "p.yaml: empty config (need at least resource)");
}

TEST(ConfigTest, LoadConfigReportsMissingFile) {
  absl::StatusOr<Config> c = LoadConfig("/nonexistent/p.yaml");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(c.status().message(), "/nonexistent/p.yaml: cannot read the file");
}

TEST(ConfigTest, ShippedExamplesLoad) {
  for (const char* name : {"sample-plugin.yaml", "nvidia-like.yaml"}) {
    absl::StatusOr<Config> c = LoadConfig(devmgr::testutil::SourcePath("examples/") + name);
    EXPECT_OK(c) << name << ": " << c.status();
  }
}

TEST(ConfigTest, DefaultSocketName) {
  EXPECT_EQ(DefaultSocketName("nvidia.com/gpu"), "nvidia.com-gpu.sock");
  EXPECT_EQ(DefaultSocketName("a.b/c d"), "a.b-c-d.sock");
}

}  // namespace
}  // namespace devmgr::plugin

namespace devmgr::plugin {
namespace {

// The misbehaviours of issue 13 as configuration.
TEST(ConfigTest, ParsesTheRealPluginMisbehaviours) {
  absl::StatusOr<Config> c = ParseConfig(R"(
resource: example.com/gpu
devices:
  - {id: "gpu-\x01"}
  - {id_hex: 677075fF}
preferred_allocation: {policy: all, empty_without_must_include: true}
registration: {reregister_delay: 12s}
)",
                                         "p.yaml");
  ASSERT_OK(c);
  ASSERT_EQ(c->devices.size(), 2u);
  EXPECT_EQ(c->devices[0].id, std::string("gpu-\x01"));
  EXPECT_EQ(c->devices[1].id, std::string("gpu\xff"));
  EXPECT_EQ(c->preferred_allocation.policy, PreferredAllocationConfig::Policy::kAll);
  EXPECT_TRUE(c->preferred_allocation.empty_without_must_include);
  EXPECT_EQ(c->registration.reregister_delay, absl::Seconds(12));
}

TEST(ConfigTest, RejectsBadIdHex) {
  EXPECT_EQ(std::string(ParseConfig("resource: a.com/b\ndevices: [{id_hex: abc}]\n", "p.yaml")
                            .status()
                            .message()),
            "p.yaml:2:20: id_hex must be an even number of hex digits");
  EXPECT_EQ(std::string(ParseConfig("resource: a.com/b\ndevices: [{id: x, id_hex: ab}]\n", "p.yaml")
                            .status()
                            .message()),
            "p.yaml:2:27: give either id or id_hex, not both");
}

}  // namespace
}  // namespace devmgr::plugin
