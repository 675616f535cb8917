// The kubelet's device-manager checkpoint (kubelet_internal_checkpoint):
// typed data mirroring the kubelet's Go structs, with Go's nil-vs-empty
// distinction kept (it is hashed), plus decode/encode/checksum entry points.
// Format details: docs/checkpoint_format.md.
#ifndef DEVMGR_CHECKPOINT_CHECKPOINT_H_
#define DEVMGR_CHECKPOINT_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace devmgr::checkpoint {

class FileStore;

// File name inside the device-plugin directory.
inline constexpr char kCheckpointName[] = "kubelet_internal_checkpoint";

// std::nullopt is Go's nil; an engaged empty value is Go's empty slice/map.
using DeviceList = std::optional<std::vector<std::string>>;
// Go: type DevicesPerNUMA map[int64][]string. Keys are NUMA node ids; -1 is
// the kubelet's nodeWithoutTopology.
using DevicesPerNUMA = std::optional<std::map<int64_t, DeviceList>>;
// Go: map[string][]string (keys ordered bytewise, as Go's JSON and spew do).
using RegisteredDevices = std::optional<std::map<std::string, DeviceList>>;

// Go: PodDevicesEntry (V2, kubelet 1.20+).
struct PodDevicesEntry {
  std::string pod_uid;
  std::string container_name;
  std::string resource_name;
  DevicesPerNUMA device_ids;
  // Serialized v1beta1.ContainerAllocateResponse; nullopt is JSON null.
  std::optional<std::string> alloc_resp;
};

// Go: PodDevicesEntryV1 (kubelet <= 1.19): flat device list.
struct PodDevicesEntryV1 {
  std::string pod_uid;
  std::string container_name;
  std::string resource_name;
  DeviceList device_ids;
  std::optional<std::string> alloc_resp;
};

enum class FormatVersion { kV1, kV2 };

// Go: checkpointData (V2). This is what the checksum covers.
struct CheckpointData {
  std::optional<std::vector<PodDevicesEntry>> pod_device_entries;
  RegisteredDevices registered_devices;
};

// Go: checkpointDataV1.
struct CheckpointDataV1 {
  std::optional<std::vector<PodDevicesEntryV1>> pod_device_entries;
  RegisteredDevices registered_devices;
};

// One decoded file. Exactly one of `data` / `data_v1` is meaningful,
// according to `format`.
struct Checkpoint {
  FormatVersion format = FormatVersion::kV2;
  CheckpointData data;
  CheckpointDataV1 data_v1;
  // The stored "Checksum" (0 when the key is missing, as in Go).
  uint64_t checksum = 0;
  // Top-level "BootID" of recent kubelets; not hashed; kept on round trip.
  std::optional<std::string> boot_id;
};

// The go-spew text that the kubelet hashes (V2).
std::string SpewV2(const CheckpointData& data);
// The text a 1.20+ kubelet hashes when verifying a V1 file (type names
// renamed as checkpointv1.go does).
std::string SpewV1(const CheckpointDataV1& data);
// FNV-1a 32 of the spew text, as the kubelet stores it.
uint64_t ComputeChecksum(const CheckpointData& data);
uint64_t ComputeChecksumV1(const CheckpointDataV1& data);

// Decodes a file as Go's encoding/json would into the V2 types
// (case-insensitive keys, last duplicate wins, unknown keys ignored, invalid
// UTF-8 -> U+FFFD, missing top-level Data lists pre-initialised to empty).
// Fails with InvalidArgument naming the byte offset, like
// "invalid character '}' looking for beginning of value (offset 123)", when
// the JSON does not fit the V2 types (a V1 file fails here).
// Does not verify the checksum.
absl::StatusOr<Checkpoint> DecodeV2(std::string_view bytes);
// The same for the V1 types.
absl::StatusOr<Checkpoint> DecodeV1(std::string_view bytes);
// V2 first, then V1 (what `devmgr checkpoint` tools do).
absl::StatusOr<Checkpoint> DecodeAny(std::string_view bytes);

// The checksum of cp's data under cp.format's rule.
uint64_t ComputedChecksum(const Checkpoint& cp);

// True when the stored checksum matches the data (V1 or V2 rule).
bool ChecksumMatches(const Checkpoint& cp);

// Encodes exactly as the kubelet's json.Marshal does (V2 or V1 by
// `cp.format`), with the stored `cp.checksum` (call ComputeChecksum first to
// write a valid file). BootID, when set, is written after Checksum.
std::string Encode(const Checkpoint& cp);

// A valid V2 checkpoint for `data` (checksum computed).
Checkpoint MakeV2(CheckpointData data);

// V1 -> V2 as kubelet 1.30's readCheckpoint does: every entry's devices on
// NUMA node 0. The result's checksum is recomputed.
Checkpoint ConvertV1ToV2(const Checkpoint& v1);

// The kubelet's readCheckpoint over `store`'s kCheckpointName:
//  - missing file: NotFound("checkpoint is not found");
//  - V2 parses but the checksum differs: DataLoss("checkpoint is corrupted");
//  - V2 does not parse: InvalidArgument(the JSON error text);
//  - other read errors as FileStore::Read returns them.
// With allow_v1 (the 1.30 profile), when the V2 read fails for any reason
// but not-found, the file is retried as V1; if that parses and verifies the
// result is ConvertV1ToV2 of it, otherwise the ORIGINAL V2 error is returned.
// On success the result is always format kV2.
absl::StatusOr<Checkpoint> ReadAndVerify(const FileStore& store, bool allow_v1);

// What `devmgr checkpoint verify` reports for one file's bytes. The format
// is chosen as: V2 if it parses and verifies, else V1 if that parses and
// verifies, else whichever parses (V2 first); when neither parses, `error`
// is the V2 error.
struct VerifyResult {
  bool parsed = false;
  bool valid = false;  // parsed and the stored checksum matches
  FormatVersion format = FormatVersion::kV2;
  uint64_t stored = 0;
  uint64_t computed = 0;
  std::string error;      // when !parsed
  Checkpoint checkpoint;  // when parsed
};
VerifyResult Verify(std::string_view bytes);
// Verify without the decoded checkpoint (`checkpoint` is left empty): what
// `devmgr checkpoint verify` needs. A valid file in json.Marshal's layout is
// checked in one pass without decoding it (OnePassVerifyV2); any other file
// goes through Verify. The other fields are Verify's.
VerifyResult VerifyOnly(std::string_view bytes);

}  // namespace devmgr::checkpoint

#endif  // DEVMGR_CHECKPOINT_CHECKPOINT_H_
