// The reference DRA driver's configuration (`devmgr sample-dra-driver
// --config`), read from YAML by config_parser.cc: the driver name, its
// devices (published as one ResourceSlice), the CDI kind it writes specs for,
// the services it advertises, and one switch per misbehaviour
// (docs/sample-dra-driver.md).
#ifndef DEVMGR_DRAPLUGIN_CONFIG_H_
#define DEVMGR_DRAPLUGIN_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace devmgr::draplugin {

// The kubelet's directories (pkg/kubelet/config defaults).
inline constexpr char kDefaultRegistryDir[] = "/var/lib/kubelet/plugins_registry";
inline constexpr char kDefaultPluginDir[] = "/var/lib/kubelet/plugins";
inline constexpr char kDefaultCdiDir[] = "/var/run/cdi";

// One device attribute, as in the API: exactly one of the four is set
// (`type` says which); `value` is its text ("40", "true", "1.2.3").
struct Attribute {
  std::string type;  // "string", "int", "bool" or "version"
  std::string value;
};

struct DeviceConfig {
  std::string name;
  std::map<std::string, Attribute> attributes;  // qualified name -> value
  // Extra containerEdits env of its CDI device, "KEY" -> "value".
  std::map<std::string, std::string> env;
  // The health its DRAResourceHealth streams report at start ("Healthy",
  // "Unhealthy" or "Unknown"), and the message with it.
  std::string health = "Healthy";
  std::string health_message;
};

// The DRAResourceHealth services (KEP-4680), as registration names.
inline constexpr char kHealthV1alpha1[] = "v1alpha1.DRAResourceHealth";
inline constexpr char kHealthV1[] = "v1.DRAResourceHealth";

// Device health (the config's `health` section).
struct HealthConfig {
  // The health services the DRA socket serves. Default (no health.serve):
  // those registration.supported_versions advertises. Serving one without
  // advertising it, or the reverse, is allowed on purpose (kubelets up to
  // 1.36 open the v1alpha1 stream whatever a driver advertises).
  std::vector<std::string> serve;
  bool serve_set = false;
  // health_check_timeout_seconds of every reported device (0: unset, the
  // kubelet's 30 s).
  int64_t timeout_seconds = 0;
};

// Where a CDI spec goes (misbehave.cdi_spec).
enum class CdiSpecMode {
  kWrite,     // into --cdi-dir (well-behaved)
  kSkip,      // not written; the IDs are still answered
  kWrongDir,  // into <plugin-dir>/<driver>/cdi instead of --cdi-dir
};

// Every switch off: a well-behaved driver.
struct Misbehaviour {
  // A second Prepare of a prepared claim answers a different device.
  bool prepare_not_idempotent = false;
  // Unprepare of a claim UID it does not know answers an error.
  bool unprepare_unknown_fails = false;
  // A claim whose prepare fails after its CDI spec was written keeps the
  // spec and its entry in the state file.
  bool leak_state_on_failure = false;
  CdiSpecMode cdi_spec = CdiSpecMode::kWrite;
  // Claims (by name) answered with a per-claim error.
  std::vector<std::string> fail_claims;
  // Claims (by name) left out of the Prepare response.
  std::vector<std::string> omit_claims;
  // Each NodePrepareResources waits this long before answering.
  absl::Duration prepare_delay = absl::ZeroDuration();
  // Registration is served first and the DRA socket only this much later.
  absl::Duration register_before_serving = absl::ZeroDuration();
  // The published slice's first device gets an invalid name.
  bool invalid_slice = false;
  // GetInfo answers this plugin type instead of "DRAPlugin" ("" = DRAPlugin).
  std::string registration_type;
  // Prepare answers, for each allocated device, a device of that name with
  // "-unallocated" appended (in none of its slices, allocated to no claim).
  bool prepare_wrong_device = false;
  // A claim UID that was unprepared fails its next prepare.
  bool prepare_after_unprepare_fails = false;
  // A Prepare of several claims answers each with the first claim's devices.
  bool batch_mixes_claims = false;
  // Unprepare of a prepared claim reads the claim from the API first and
  // fails when it is gone.
  bool unprepare_reads_claim = false;
  // Prepare takes the claim of that name from the API whatever its UID (a
  // claim deleted and re-created under the same name is prepared for the
  // old UID).
  bool prepare_ignores_uid = false;
  // A repeated Prepare of a prepared claim answers the same devices but also
  // writes another CDI spec, <driver>-<claim uid>-again.json (left behind).
  bool reprepare_adds_spec = false;
  // After a restart, Unprepare of a claim restored from the state file fails:
  // the driver lost what it needs to release the claim's devices.
  bool restored_unprepare_fails = false;
  // After a restart, Unprepare of a claim restored from the state file and
  // not prepared again since fails: the driver rebuilds what it needs to
  // release the claim's devices only in Prepare.
  bool restored_unprepare_needs_prepare = false;
  // After a restart, Unprepare of a claim restored from the state file and
  // not prepared again since succeeds but leaves its CDI spec (the e2e DRA
  // test driver's shape: it keeps what it prepared in memory only).
  bool restored_unprepare_keeps_spec = false;
  // A repeated Prepare of a prepared claim answers its devices without
  // writing its CDI spec again (gone after a reboot: the CDI root is a tmpfs).
  bool reprepare_skips_spec = false;
  // The driver publishes its ResourceSlice only at its first start: it
  // records that it did in its plugin directory and trusts the API server
  // to keep the slice.
  bool publish_only_first_start = false;
  // A claim with an opaque config the driver does not support is refused
  // only after its CDI spec was written, and the spec stays (no state entry:
  // Unprepare does not remove it).
  bool leak_spec_on_failure = false;
  // A claim whose allocation holds a result of another driver gets the
  // per-claim error "requested device ... is not allocatable" (the driver
  // looks every result up among its own devices).
  bool foreign_results_fail = false;
  // Prepare answers every result of the allocation, other drivers' too.
  bool prepare_foreign_results = false;
  // Devices (by name) left out of every health list from the start (as the
  // control line `silence DEVICE` does later).
  std::vector<std::string> health_omit_devices;
};

struct Config {
  std::string driver = "sample.dra.devmgr.io";
  // The CDI kind is "<cdi_vendor>/<cdi_class>"; the vendor defaults to the driver name.
  std::string cdi_vendor;
  std::string cdi_class = "device";
  // PluginInfo.supported_versions, in order; each must be a served service.
  std::vector<std::string> supported_versions = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};
  std::vector<DeviceConfig> devices;
  HealthConfig health;
  Misbehaviour misbehave;

  // The health services served (health.serve, else the advertised ones).
  std::vector<std::string> ServedHealth() const {
    if (health.serve_set) return health.serve;
    std::vector<std::string> out;
    for (const std::string& v : supported_versions) {
      if (v == kHealthV1alpha1 || v == kHealthV1) out.push_back(v);
    }
    return out;
  }

  std::string CdiKind() const { return cdi_vendor + "/" + cdi_class; }
};

// The services this driver can serve, as registration names.
inline const std::vector<std::string>& ServedServices() {
  static const std::vector<std::string> kServices = {"v1.DRAPlugin", "v1beta1.DRAPlugin",
                                                     kHealthV1alpha1, kHealthV1};
  return kServices;
}

// Parses `yaml_text`; errors read "<source_name>:<line>:<col>: <what>".
absl::StatusOr<Config> ParseConfig(const std::string& yaml_text, const std::string& source_name);
// Reads and parses the file at `path`; NotFound "<path>: cannot read the file".
absl::StatusOr<Config> LoadConfig(const std::string& path);

// The server URL of a kubeconfig file: the cluster of its current context,
// else its first cluster. Errors name the file.
absl::StatusOr<std::string> KubeconfigServer(const std::string& path);

}  // namespace devmgr::draplugin

#endif  // DEVMGR_DRAPLUGIN_CONFIG_H_
