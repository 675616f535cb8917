// Scenario: one `devmgr run` file as plain data. A scenario describes an
// emulated node, the plugins to run against it and a list of steps, each
// optionally followed by expectations. The YAML format is documented in
// docs/scenarios.md; scenario_parser.h turns a file into these structs
// (every field below was validated there, so the runner can trust it).
#ifndef DEVMGR_SCENARIO_FORMAT_SCENARIO_H_
#define DEVMGR_SCENARIO_FORMAT_SCENARIO_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "pod/pod.h"
#include "scenario/expect/health_expect.h"

namespace devmgr::scenario {

// A position in a scenario file (1-based line and column; 0: unknown).
struct Location {
  std::string file;
  int line = 0;
  int column = 0;
  // "file:line:col" (or just "file" when the position is unknown).
  std::string ToString() const;
};

// A string expectation: an exact value, or (written `{regex: RE}`) an
// ECMAScript regular expression searched for in the string (anchor it with
// ^...$ to match the whole string).
struct StringMatcher {
  std::string value;
  bool regex = false;
  bool Matches(const std::string& s) const;
  // "\"value\"" or "regex /value/", for failure reports.
  std::string Describe() const;
};

enum class PluginStart {
  kAfterKubelet,   // default: once the emulated kubelet listens
  kBeforeKubelet,  // before the kubelet starts (kubelet.sock absent)
  kManual,         // only by a start_plugin step
};

struct PluginSpec {
  std::string name;
  Location loc;
  // Exactly one kind of plugin:
  //  - command: a shell command line (plus `args`, each shell-quoted);
  //  - sample_plugin: the reference plugin with an inline config (YAML text
  //    positioned as in the scenario file so that its errors point there),
  //    run as `$DEVMGR_BIN sample-plugin`;
  //  - external: already running; devmgr only waits for its registration
  //    (of `resource`), or, with `socket`, registers it on its behalf.
  std::string command;
  std::vector<std::string> args;
  std::string sample_plugin_config;
  bool external = false;

  std::map<std::string, std::string> env;
  std::string working_dir;
  bool private_mount = false;
  // Extra bind mounts (host path, path inside) in the private namespace.
  std::vector<std::pair<std::string, std::string>> binds;
  PluginStart start = PluginStart::kAfterKubelet;

  // The resource it registers (taken from the sample config when absent).
  std::string resource;
  // external + socket: the plugin's socket (absolute, or a file name in the
  // device-plugin dir); devmgr sends the Register request itself.
  std::string socket;
  // Wait for the registration of `resource` after (re)starts.
  bool wait_for_registration = true;
  // A JSON-lines call log the plugin writes (the reference plugin's format);
  // automatic for sample plugins. Relative paths are in the work dir.
  std::string call_log;
  // The reference plugin's control file (automatic for sample plugins).
  std::string control;
  // Whether the plugin re-registers after a kubelet restart (sample plugins:
  // from their config; others: true).
  bool reregisters = true;
  // The number of devices the plugin lists at start (sample plugins: from
  // their config; -1: unknown). Registration waits also wait for the first
  // device list: with -1, for a non-empty one (or a short grace period).
  int64_t initial_devices = -1;
  // A DRA driver (`dra_driver: NAME`): registers NAME through the plugin
  // watcher; registration waits wait for a registered instance of NAME and
  // its ResourceSlices for the node. Empty: a device plugin.
  std::string dra_driver;
};

// ---- topology --------------------------------------------------------------

// One topology hint: a NUMA mask (nullopt: Go's nil mask) and preferred.
struct HintSpec {
  std::optional<std::vector<int>> numa;
  bool preferred = false;
  bool operator==(const HintSpec&) const = default;
};
// A resource's hint list (nullopt: Go's nil list, "no preference").
using HintList = std::optional<std::vector<HintSpec>>;
// resource -> hints, as one hint provider answers.
using ResourceHints = std::map<std::string, HintList>;

// A static hint provider standing in for the CPU or memory manager.
struct HintProviderSpec {
  std::string name;
  ResourceHints hints;                              // every container
  std::map<std::string, ResourceHints> containers;  // per-container override
  std::optional<ResourceHints> pod;                 // pod scope; nullopt: hints
};

// ---- expectations ----------------------------------------------------------

// A set of device ids given literally (`[a, b]`) or by a capture of an
// earlier step (`$name`).
struct SetRef {
  std::vector<std::string> ids;
  std::string capture;  // non-empty: the capture's name (without '$')
};

// Expectations on one set of device ids (a container's devices of a
// resource, a resource's healthy/unhealthy/allocated set, a checkpoint
// entry). `absent`: the set is not there at all (which differs from empty
// where the kubelet tells the two apart).
struct SetExpect {
  bool absent = false;
  std::optional<int64_t> count;
  std::optional<std::string> count_of;  // the same size as this capture
  std::optional<SetRef> ids;            // exactly these
  std::optional<SetRef> subset_of;      // every id within
  std::optional<SetRef> superset_of;    // every listed id present
  std::optional<SetRef> disjoint_from;  // no id in common
  bool empty() const {
    return !absent && !count && !count_of && !ids && !subset_of && !superset_of && !disjoint_from;
  }
};

// A node-status quantity: a number, or `absent` (no entry at all, which
// node status tells apart from 0).
struct QuantityExpect {
  bool absent = false;
  int64_t value = 0;
};

struct ResourceExpect {
  std::string resource;
  Location loc;
  std::optional<QuantityExpect> capacity;
  std::optional<QuantityExpect> allocatable;
  // The device manager's sets (a list is the exact set).
  std::optional<SetExpect> healthy;
  std::optional<SetExpect> unhealthy;
  std::optional<SetExpect> allocated;
  std::optional<int64_t> healthy_count;
  std::optional<int64_t> unhealthy_count;
  // Known to the device manager at all (endpoint or checkpoint placeholder).
  std::optional<bool> registered;
  // Has a live plugin connection (registered and not stopped).
  std::optional<bool> connected;
};

struct DeviceExpect {
  std::string resource;
  Location loc;
  SetExpect set;                             // the devices' ids
  std::optional<std::vector<int64_t>> numa;  // the NUMA nodes used
};

struct KeyValueExpect {
  std::vector<std::pair<std::string, StringMatcher>> entries;
  bool exact = false;  // no other keys allowed
};

struct MountExpect {
  std::optional<StringMatcher> container_path;
  std::optional<StringMatcher> host_path;
  std::optional<bool> read_only;
};

struct DeviceSpecExpect {
  std::optional<StringMatcher> container_path;
  std::optional<StringMatcher> host_path;
  std::optional<StringMatcher> permissions;
};

struct ContainerExpect {
  std::string name;
  Location loc;
  std::vector<DeviceExpect> devices;
  // `devices: none`: no device of any resource.
  bool no_devices = false;
  std::optional<KeyValueExpect> envs;
  std::optional<KeyValueExpect> annotations;
  // Each listed item must match a distinct actual item, in any order (the
  // kubelet's order is Go map order); with `*_exact`, nothing else either.
  std::optional<std::vector<MountExpect>> mounts;
  bool mounts_exact = false;
  std::optional<std::vector<DeviceSpecExpect>> device_specs;
  bool device_specs_exact = false;
  std::optional<std::vector<StringMatcher>> cdi_devices;
  bool cdi_devices_exact = false;
  // `options: none`: the device manager hands the runtime no options.
  bool no_options = false;
  std::optional<bool> running;
  std::optional<int64_t> restart_count;
  std::optional<StringMatcher> start_error;
  // The NUMA affinity the topology manager stored (set: checked; a nullopt
  // value: none stored / nil).
  bool has_numa_affinity = false;
  std::optional<std::vector<int>> numa_affinity;
  // Container scope: provider -> resource -> hints of this container's merge.
  std::optional<std::map<std::string, ResourceHints>> topology_hints;
  // provider -> resources that must have no hint entry at all (`absent`).
  std::map<std::string, std::vector<std::string>> absent_hints;
  // Device health in the container's status (health_check.h).
  std::optional<ResourceHealthExpect> allocated_resources_status;
  // The CDI device IDs of its DRA claims (ContainerConfig.CDIDevices), each
  // listed matcher a distinct ID, nothing else (empty list: none).
  std::optional<std::vector<StringMatcher>> dra_cdi_devices;
};

struct PodExpect {
  std::string ref;  // name, namespace/name or UID
  Location loc;
  std::optional<bool> exists;
  std::optional<bool> admitted;
  std::optional<std::string> phase;  // Pending, Running, Succeeded, Failed
  std::optional<StringMatcher> reason;
  // The admission handler's message (what the kubelet logs and records in
  // its event), and the pod status message the kubelet writes for a
  // rejected pod (RejectedStatusMessage).
  std::optional<StringMatcher> message;
  std::optional<StringMatcher> status_message;
  std::vector<ContainerExpect> containers;
  // Pod scope: provider -> resource -> hints of the pod's merge.
  std::optional<std::map<std::string, ResourceHints>> topology_hints;
  std::map<std::string, std::vector<std::string>> absent_hints;
};

struct CheckpointEntryExpect {
  Location loc;
  std::string pod;  // name, namespace/name or UID
  std::string container;
  std::string resource;
  SetExpect devices;
};

struct CheckpointExpect {
  Location loc;
  std::optional<bool> exists;
  std::optional<bool> valid;  // parses and the checksum matches
  std::optional<int64_t> entry_count;
  std::vector<CheckpointEntryExpect> entries;
  bool entries_exact = false;
  // resource -> exact device set of registeredDevices (the map holds no
  // other resource).
  std::optional<std::map<std::string, std::vector<std::string>>> registered;
  // resource -> expectations on its registeredDevices entry (`absent`: no
  // entry); other resources are not looked at.
  std::map<std::string, SetExpect> registered_sets;
};

struct CallExpect {
  Location loc;
  std::string method;
  // A JSON subset the call's arguments must contain (objects: listed keys;
  // arrays: same length, element-wise; strings may be {regex: RE}).
  std::optional<nlohmann::json> args;
  // Sent calls (Register): the result the plugin got back. `ok`: no error;
  // else the error message and/or the gRPC code name (e.g. UNKNOWN).
  std::optional<bool> ok;
  std::optional<StringMatcher> error;
  std::optional<std::string> code;
};

struct CallsExpect {
  Location loc;
  std::string plugin;
  // Only calls received since the current step started (default), or since
  // the plugin first started.
  bool since_start = false;
  // The sequence must appear in order; with `exact`, the considered calls
  // (those whose method is in `methods`, by default the methods named in the
  // sequence) must be exactly the sequence.
  std::vector<CallExpect> sequence;
  bool exact = false;
  std::vector<std::string> methods;
  std::map<std::string, int64_t> counts;  // method -> number of calls
};

// ---- PodResources expectations (what an agent on the socket sees) ----------

// One container as List/Get report it: resource -> devices (the forms of
// DeviceExpect; `numa` is the set of NUMA nodes in the devices' topology).
struct PrContainerExpect {
  std::string name;
  Location loc;
  bool no_devices = false;  // `none`: listed, with no devices
  bool absent = false;      // `absent`: the pod is listed, this container not
  std::vector<DeviceExpect> devices;
};

struct PrPodExpect {
  // List: name or namespace/name. Get: namespace/name, or a name in
  // namespace "default".
  std::string ref;
  Location loc;
  bool absent = false;  // List: not listed
  // Get: the call fails with this message (code Unknown, as from a kubelet).
  std::optional<StringMatcher> error;
  std::vector<PrContainerExpect> containers;
};

struct PodResourcesExpect {
  Location loc;
  // GetAllocatableResources: per resource (a resource absent from the
  // answer has no devices).
  std::vector<DeviceExpect> allocatable;
  // List: the number of pods listed, and per-pod expectations.
  std::optional<int64_t> pod_count;
  std::vector<PrPodExpect> pods;
  // Get, one call per entry.
  std::vector<PrPodExpect> get;
};

// ---- DRA expectations ------------------------------------------------------

// One ResourceClaim, named by `name` (namespace/name, or a name in
// "default") or, for a claim made from a template, by the pod and the
// pod's spec.resourceClaims entry (`pod`, `claim`).
struct DraClaimExpect {
  Location loc;
  std::string name;
  std::string pod;
  std::string claim;
  std::optional<bool> exists;     // in the API store
  std::optional<bool> allocated;  // status.allocation set
  // status.reservedFor: exactly these pods (refs), any order.
  std::optional<std::vector<std::string>> reserved_for;
  // The DRA manager's claim-info cache: present, and prepared since the
  // node started.
  std::optional<bool> cached;
  std::optional<bool> prepared;
  // The allocated devices' names (status.allocation.devices.results).
  std::optional<SetExpect> devices;
};

// One kubelet -> driver call as the node made it.
struct DraCallExpect {
  Location loc;
  std::string method;  // NodePrepareResources or NodeUnprepareResources
  // The claims of the call by name ({regex} allowed), each matching a
  // distinct claim, no other claim (nullopt: not checked).
  std::optional<std::vector<StringMatcher>> claims;
  std::optional<bool> ok;  // the call and every claim succeeded
};

// The calls the node made to one driver (all instances).
struct DraCallsExpect {
  Location loc;
  std::string driver;
  bool since_start = false;             // default: since the step began
  std::vector<DraCallExpect> sequence;  // in this order, others between
  bool exact = false;                   // nothing but the sequence
  std::map<std::string, int64_t> counts;
};

// dra_manager_state.
struct DraCheckpointExpect {
  Location loc;
  std::optional<bool> exists;
  std::optional<bool> valid;  // parses, checksum matches, Data decodes
  std::optional<int64_t> entry_count;
  // Claims (by name or namespace/name) with an entry, and without one.
  std::vector<std::string> claims;
  std::vector<std::string> absent_claims;
  // Pods (refs) among the PodUIDs of some entry.
  std::vector<std::string> pods;
};

// The ResourceSlices of one DRA driver in the API endpoint (any node; the
// node's name is checked by node_name).
struct ResourceSlicesExpect {
  Location loc;
  std::string driver;
  bool absent = false;                            // no slice of the driver
  std::optional<int64_t> slices;                  // how many slices
  std::optional<std::vector<std::string>> pools;  // the pools' names, exactly
  std::optional<SetExpect> devices;               // device names across its slices
  std::optional<StringMatcher> node_name;         // every slice's spec.nodeName
};

// One request to the API endpoint (expect.api_requests): each field that is
// set must match.
struct ApiRequestExpect {
  Location loc;
  std::optional<std::string> method;  // GET, POST, PUT, DELETE, PATCH
  // The request's path without its query ({regex} allowed).
  std::optional<StringMatcher> path;
  std::optional<StringMatcher> user_agent;  // the client's User-Agent header
  std::optional<int64_t> code;              // the HTTP status answered
  std::optional<bool> fault;                // whether an injected fault fired on it
  std::optional<bool> watch;                // a watch request (?watch=true)
  int64_t count = -1;                       // counts entries: how many (>= 0)
};

// The requests the drivers made to the API endpoint.
struct ApiRequestsExpect {
  Location loc;
  bool since_start = false;                // default: since the step began
  std::vector<ApiRequestExpect> sequence;  // in this order, others between
  std::vector<ApiRequestExpect> counts;    // each: `count` requests match
};

struct Expectations {
  Location loc;
  std::vector<ResourceExpect> resources;
  std::vector<PodExpect> pods;
  // No device held by containers of two different active pods, for these
  // resources (empty: every resource).
  std::optional<std::vector<std::string>> disjoint;
  std::optional<CheckpointExpect> checkpoint;
  std::vector<CallsExpect> calls;
  std::optional<PodResourcesExpect> pod_resources;
  // Each must match (regex search) one of the recent devmgr log lines.
  std::vector<std::pair<Location, std::string>> log;
  // DRA: ResourceClaims, the node's driver calls, dra_manager_state.
  std::vector<DraClaimExpect> claims;
  std::vector<DraCallsExpect> dra_calls;
  std::optional<DraCheckpointExpect> dra_checkpoint;
  std::vector<ResourceSlicesExpect> resource_slices;
  std::optional<ApiRequestsExpect> api_requests;
  // Real-time budget to keep re-checking until everything holds.
  std::optional<absl::Duration> within;
  bool empty() const {
    return resources.empty() && pods.empty() && !disjoint && !checkpoint && calls.empty() &&
           !pod_resources && log.empty() && claims.empty() && dra_calls.empty() &&
           !dra_checkpoint && resource_slices.empty() && !api_requests;
  }
};

// ---- steps -----------------------------------------------------------------

enum class StepKind {
  kAdmit,
  kDeletePod,
  kSetPhase,
  kRestartContainer,
  kRestartKubelet,
  kRebootNode,
  kStopKubelet,
  kStartKubelet,
  kStartPlugin,
  kStopPlugin,
  kKillPlugin,
  kPausePlugin,   // SIGSTOP
  kResumePlugin,  // SIGCONT
  kRestartPlugin,
  kAdvanceClock,
  kNodeStatus,
  kWaitRegistration,
  kWaitDevices,
  kSetHealth,
  kControl,
  kDeleteCheckpoint,
  kTruncateCheckpoint,
  kCorruptCheckpoint,
  kWriteCheckpoint,
  kRun,
  kApply,         // DRA: create or replace API objects
  kDeleteObject,  // DRA: delete an API object
  kWaitDriver,    // DRA: a driver registered, its slices published
  kApiFault,      // DRA: faults for the API endpoint, from this step on
  kCheck,         // expectations only
};

// The step's key in the YAML ("admit", "delete_pod", ...).
const char* StepKindName(StepKind kind);

// The checkpoint file a checkpoint step (delete_, truncate_, corrupt_,
// write_checkpoint) edits: the device manager's (default) or the DRA
// manager's (a DRA step: it turns DRA on for the node).
enum class CheckpointFile {
  kDeviceManager,  // kubelet_internal_checkpoint, in the device-plugin dir
  kDra,            // dra_manager_state, in the kubelet's root dir
};
// The file's name ("kubelet_internal_checkpoint", "dra_manager_state").
const char* CheckpointFileName(CheckpointFile f);

// write_checkpoint from a structured description: entries and registered
// devices become a kubelet checkpoint with the right checksum.
struct CheckpointEntrySpec {
  std::string pod;  // a pod ref (name, namespace/name) or a UID
  std::string container;
  std::string resource;
  // NUMA node -> device ids (V1: flattened); -1 is "no topology".
  std::map<int64_t, std::vector<std::string>> devices;
  // The serialized ContainerAllocateResponse, base64 as in the file
  // (nullopt: an empty response).
  std::optional<std::string> alloc_resp;
};
struct CheckpointSpec {
  bool v1 = false;  // the pre-1.20 format
  std::vector<CheckpointEntrySpec> entries;
  std::map<std::string, std::vector<std::string>> registered;
  // Write this checksum instead of the right one.
  std::optional<uint64_t> checksum;
  bool wrong_checksum = false;  // the right one plus one
};

// A value a step names for later expectations: the devices of a container
// (pod, container, resource), a device set of a resource (resource, set),
// or the devices of a checkpoint entry (checkpoint: true, pod, container,
// resource).
struct CaptureSpec {
  std::string name;
  Location loc;
  std::string pod;
  std::string container;
  std::string resource;
  std::string set;  // healthy, unhealthy, allocated or devices
  bool checkpoint = false;
};

struct Step;
// What a step does, for output ("admit pod default/p (containers [c])").
std::string DescribeStep(const Step& st);

struct Step {
  StepKind kind = StepKind::kCheck;
  Location loc;
  std::string name;  // optional description
  // Runs only under these kubelet profiles ("1.30", ..., "1.37"); empty: all.
  std::vector<std::string> versions;
  std::optional<absl::Duration> timeout;

  // kAdmit
  pod::Pod pod;
  // kDeletePod, kSetPhase, kRestartContainer
  std::string pod_ref;
  std::string container;
  pod::Phase phase = pod::Phase::kSucceeded;
  // plugin steps, kSetHealth, kControl, kWaitRegistration (optional)
  std::string plugin;
  // Plugin (re)starts, kubelet restart, node reboot: wait for registrations.
  bool wait_for_registration = true;
  // kRestartKubelet, kStartKubelet, kRebootNode: the kubelet's start must
  // fail with an error this ECMAScript regex finds (the kubelet then stays
  // stopped, as a kubelet that exits at start); nullopt: it must start.
  std::optional<std::string> expect_error;
  // kAdvanceClock
  absl::Duration advance = absl::ZeroDuration();
  // kWaitRegistration, kWaitDevices
  std::string resource;
  std::optional<int64_t> count;  // registrations (kWaitRegistration)
  std::optional<int64_t> capacity;
  std::optional<int64_t> allocatable;
  std::optional<int64_t> healthy;
  // kSetHealth
  std::string device;
  std::string health;
  bool wait = true;  // until the kubelet sees it
  // kControl: one control-file line
  std::string control_line;
  // kDeleteCheckpoint, kTruncateCheckpoint, kCorruptCheckpoint,
  // kWriteCheckpoint: the file edited.
  CheckpointFile checkpoint_file = CheckpointFile::kDeviceManager;
  // kTruncateCheckpoint
  int64_t truncate_to = 0;
  // kWriteCheckpoint: raw bytes, or a structured description
  std::string content;
  std::optional<CheckpointSpec> checkpoint;
  // kRun
  std::string command;
  int64_t expect_exit = 0;
  // kApply: the objects (JSON, as the API has them), in order.
  std::vector<nlohmann::json> objects;
  // kDeleteObject: kind (ResourceClaim, ResourceClaimTemplate,
  // DeviceClass), namespace ("" for a DeviceClass) and name.
  std::string object_kind;
  std::string object_namespace;
  std::string object_name;
  // kWaitDriver: the driver (`plugin` names its plugin when known) and the
  // devices its slices for the node must list at least (default 1).
  std::string driver;
  int64_t min_devices = 1;
  // kApiFault: fault SPECs of the API endpoint (apiserver/faults.h), each
  // checked by the parser; added after the scenario's and earlier steps'.
  std::vector<std::string> api_faults;

  Expectations expect;
  // The expectations must hold continuously for this long (from the end of
  // the action), not just eventually.
  std::optional<absl::Duration> expect_for;
  // Named values taken once the step (and its expectations) passed.
  std::vector<CaptureSpec> captures;
};

// ---- the scenario ----------------------------------------------------------

struct NodeSpec {
  // Profiles to run the scenario under (each a separate run); empty: the
  // --kubelet-version flag's (default 1.32).
  std::vector<std::string> kubelet_versions;
  // The device-plugin dir; empty: a fresh temp dir.
  std::string dir;
  bool plugins_registry = false;
  bool fsync = false;
  int64_t max_recv_msg_size = 4 * 1024 * 1024;
  std::vector<int> numa_nodes = {0};
  // One row per numa_nodes entry, indexed by node id (optional).
  std::vector<std::vector<uint64_t>> numa_distances;
  absl::Duration dial_timeout = absl::Seconds(5);
  // The topology manager (docs/topology.md).
  std::string topology_policy = "none";
  std::string topology_scope = "container";
  std::map<std::string, std::string> topology_policy_options;
  std::vector<HintProviderSpec> hint_providers;
  // A kubelet --feature-gates value for the PodResources gates
  // (KubeletPodResourcesGet, KubeletPodResourcesListUseActivePods,
  // SidecarContainers); validated by the parser.
  std::string feature_gates;
};

// Real-time limits (the virtual clock is separate and only moves on
// advance_clock).
struct Timeouts {
  absl::Duration step = absl::Seconds(20);   // any single step
  absl::Duration wait = absl::Seconds(30);   // registrations, device counts (node e2e: 30 s)
  absl::Duration expect = absl::Seconds(3);  // expectations to settle
};

struct Scenario {
  std::string name;  // default: the file name without .yaml
  std::string description;
  std::string file;  // as given
  std::string dir;   // the file's directory (relative paths resolve here)
  // applies_to: the kubelet profiles the scenario's behaviour holds under
  // (e.g. ["1.37"] or "1.30-1.36"); under any other profile it is reported
  // skipped. Empty: every profile.
  std::vector<std::string> applies_to;
  NodeSpec node;
  Timeouts timeouts;
  std::vector<PluginSpec> plugins;
  std::vector<Step> steps;
  // api_faults: fault SPECs (apiserver/faults.h) the API endpoint has from
  // its start, before any plugin starts; checked by the parser.
  std::vector<std::string> api_faults;

  // DRA on the node: a dra_driver plugin, api_faults or a DRA step (apply,
  // delete_object, wait_driver, api_fault, a checkpoint step on
  // dra_manager_state). Turns on the API endpoint and plugins_registry;
  // needs kubelet 1.34 or newer.
  bool UsesDra() const;
};

}  // namespace devmgr::scenario

#endif  // DEVMGR_SCENARIO_FORMAT_SCENARIO_H_
