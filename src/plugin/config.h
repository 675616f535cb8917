// The sample plugin's configuration: plain structs, loaded from YAML by
// LoadConfig (config_parser.cc, the only file that includes yaml-cpp). The
// format is documented in docs/sample-plugin.md.
#ifndef DEVMGR_PLUGIN_CONFIG_H_
#define DEVMGR_PLUGIN_CONFIG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace devmgr::plugin {

inline constexpr char kHealthy[] = "Healthy";
inline constexpr char kUnhealthy[] = "Unhealthy";

struct DeviceConfig {
  std::string id;
  // Sent as is; the kubelet treats anything but "Healthy" as unhealthy.
  std::string health = kHealthy;
  // false: the Device has no topology field at all. true: a TopologyInfo
  // with `numa_nodes` (possibly none) is sent.
  bool has_topology = false;
  std::vector<int64_t> numa_nodes;
};

// A gRPC status to answer with. `code` is a grpc::StatusCode number.
struct RpcError {
  int code = 2;  // UNKNOWN
  std::string message;
};

// The RPCs whose behaviour can be altered. kRegister is the plugin's own
// Register call (kubelet-sock mode) or the GetInfo RPC (plugins-registry
// mode).
enum class Rpc {
  kGetDevicePluginOptions,
  kListAndWatch,
  kGetPreferredAllocation,
  kAllocate,
  kPreStartContainer,
  kRegister,
};
inline constexpr int kNumRpcs = 6;
// The gRPC method name ("Allocate", ...; "Register" for kRegister).
const char* RpcName(Rpc rpc);

// Fault injection for one RPC. A fault applies to the calls numbered
// skip_calls+1 .. skip_calls+times (all later calls when times < 0). Within
// one call the effects happen in this order: exit, delay, hang, then
// error/empty/wrong_count.
struct FaultConfig {
  int skip_calls = 0;
  int times = -1;
  absl::Duration delay = absl::ZeroDuration();
  std::optional<RpcError> error;
  bool hang = false;
  std::optional<int> exit_code;
  bool empty = false;
  // Allocate, GetPreferredAllocation: the number of container responses.
  std::optional<int> wrong_count;
  // ListAndWatch: the stream ends (with `error` if set, else OK) after N sends.
  std::optional<int> end_stream_after;
  // Allocate: append one new healthy device on every call.
  bool grow_on_allocate = false;
};

// Register-side overrides, to produce invalid registrations. They apply to
// the calls selected by faults.register's skip_calls/times.
struct RegisterOverrides {
  std::optional<std::string> version;   // RegisterRequest.version / GetInfo supported_versions
  std::optional<std::string> resource;  // resource_name / PluginInfo.name
  std::optional<std::string> endpoint;  // endpoint / PluginInfo.endpoint
  std::optional<std::string> type;      // PluginInfo.type (plugins-registry only)
  bool skip = false;                    // never register
};

struct MountConfig {
  std::string container_path;
  std::string host_path;
  bool read_only = false;
};

struct DeviceSpecConfig {
  std::string container_path;
  std::string host_path;
  std::string permissions;
};

// Templated content of a ContainerAllocateResponse. Strings may contain
// {{.DeviceIDs}}, {{.DeviceCount}}, {{.ResourceName}} and, in per_device
// blocks, {{.DeviceID}} and {{.DeviceIndex}}.
struct ResponseTemplate {
  std::map<std::string, std::string> envs;
  std::vector<MountConfig> mounts;
  std::vector<DeviceSpecConfig> device_specs;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> cdi_devices;
};

struct AllocateConfig {
  ResponseTemplate per_container;
  ResponseTemplate per_device;  // expanded once per allocated device
  bool reject_unknown_devices = true;
  bool reject_unhealthy_devices = true;
};

struct PreferredAllocationConfig {
  // kAll: every available device, whatever allocation_size says.
  enum class Policy { kFirst, kLast, kEchoMustInclude, kFixed, kAll };
  Policy policy = Policy::kFirst;
  std::vector<std::string> fixed;  // kFixed
  // A container request with no must-include device (a fresh pod) gets an
  // empty container response, as NVIDIA/k8s-device-plugin#546 reports of
  // v0.14.5; requests with must-include follow the policy.
  bool empty_without_must_include = false;
};

struct RegistrationConfig {
  enum class Mode { kKubeletSock, kPluginsRegistry };
  Mode mode = Mode::kKubeletSock;
  bool reregister = true;
  // > 0: after kubelet.sock re-appears (or the plugin's socket is deleted),
  // wait this long before serving again and registering, as the kubernetes
  // e2e sample device plugin does (about 10 s).
  absl::Duration reregister_delay = absl::ZeroDuration();
  bool serve_before_register = true;
  absl::Duration timeout = absl::Seconds(30);  // the Register call's deadline
  std::string registry_socket;                 // file name in the registry dir
};

struct ListAndWatchConfig {
  absl::Duration resend_interval = absl::ZeroDuration();  // 0: never
  bool shuffle = false;
  uint64_t seed = 0;  // 0: random
};

// A scheduled change of the device list: a device's health, or (with
// `add`) devices appended to the list, which may repeat an ID or carry any
// NUMA node, for a defect that shows only in a later list.
struct HealthChange {
  absl::Duration after;  // since Start()
  std::string device;
  std::string health;
  std::vector<DeviceConfig> add;
};

struct Config {
  std::string resource;
  std::string socket;  // file name in the device-plugin dir
  std::vector<DeviceConfig> devices;
  bool pre_start_required = false;
  bool get_preferred_allocation_available = false;
  AllocateConfig allocate;
  PreferredAllocationConfig preferred_allocation;
  RegistrationConfig registration;
  ListAndWatchConfig list_and_watch;
  FaultConfig faults[kNumRpcs];
  RegisterOverrides register_overrides;
  std::vector<HealthChange> health_changes;

  const FaultConfig& fault(Rpc rpc) const { return faults[static_cast<int>(rpc)]; }
  FaultConfig& fault(Rpc rpc) { return faults[static_cast<int>(rpc)]; }
};

// "example.com/gpu" -> "example.com-gpu.sock": every byte outside
// [A-Za-z0-9._-] becomes '-'.
std::string DefaultSocketName(const std::string& resource);

// Parses a config. `source_name` prefixes error messages, which have the
// form "<source_name>:<line>:<col>: <what>" (1-based), e.g.
// "p.yaml:3:1: unknown key 'devcies' (did you mean 'devices'?)".
// Fills defaults (socket name, registry socket name).
absl::StatusOr<Config> ParseConfig(const std::string& yaml_text, const std::string& source_name);

// Reads and parses `path`. NotFound when it cannot be read.
absl::StatusOr<Config> LoadConfig(const std::string& path);

}  // namespace devmgr::plugin

#endif  // DEVMGR_PLUGIN_CONFIG_H_
