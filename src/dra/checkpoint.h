// The DRA manager's checkpoint file, dra_manager_state: the kubelet's
// pkg/kubelet/cm/dra/state Checkpoint, byte for byte. The file is
// json.Marshal of {Data string; Checksum uint32}, where Data is itself
// json.Marshal of CheckpointData and Checksum is the CRC32 (IEEE) of Data's
// bytes. Format details: docs/checkpoint_format.md ("dra_manager_state").
#ifndef DEVMGR_DRA_CHECKPOINT_H_
#define DEVMGR_DRA_CHECKPOINT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "checkpoint/file_store.h"
#include "dra/state.h"

namespace devmgr::dra {

// Go: state.Checkpoint, the outer JSON object.
struct Checkpoint {
  std::string data;
  uint32_t checksum = 0;

  bool operator==(const Checkpoint&) const = default;
};

// CRC32 with the IEEE polynomial (Go's crc32.ChecksumIEEE, zlib's crc32).
uint32_t Crc32Ieee(std::string_view bytes);

// json.Marshal of `data` with the struct layout of `layout` (field order of
// the Go structs, map keys sorted, Go's string escaping, nil as null).
std::string EncodeData(const CheckpointData& data, StateLayout layout);

// json.Marshal of one ClaimInfoState (an element of Data's list).
void AppendClaim(std::string* out, const ClaimInfoState& c, StateLayout layout);

// state.NewCheckpoint: Data is EncodeData of the list with the kubelet's
// kind and API version, Checksum its CRC32.
Checkpoint NewCheckpoint(const ClaimInfoStateList& list, StateLayout layout);

// Checkpoint.MarshalCheckpoint: {"Data":"...","Checksum":N}.
std::string EncodeFile(const Checkpoint& cp);

// json.Unmarshal of a file into the Checkpoint that the kubelet's
// GetOrCreate pre-sets to NewCheckpoint(nil): keys missing from the file
// (and a file that is just `null`) keep those values. Case-insensitive keys,
// the last duplicate wins, unknown keys are ignored. Does not verify the
// checksum. Fails with InvalidArgument and Go's error text followed by
// " (offset N)" (the 0-based byte offset; see checkpoint/go_json.h).
absl::StatusOr<Checkpoint> DecodeFile(std::string_view bytes);

// Checkpoint.VerifyChecksum: the CRC32 of cp.data equals cp.checksum.
bool ChecksumMatches(const Checkpoint& cp);

// Checkpoint.GetClaimInfoStateList: json.Unmarshal of Data into the
// CheckpointData of `layout`. Keys that layout's structs lack (ShareID
// before 1.35, skipNodeOperations before 1.37) are ignored; kind and
// apiVersion are not checked. Errors as DecodeFile's.
absl::StatusOr<CheckpointData> DecodeData(std::string_view data, StateLayout layout);

// The kubelet's start-up read of `store`'s dra_manager_state
// (newClaimInfoCache: checkpointer.GetOrCreate, then
// GetClaimInfoStateList). The texts are the kubelet's error chain as
// NewManager returns it:
//  - missing file: NotFound("checkpoint is not found") (the kubelet then
//    writes an empty checkpoint and starts);
//  - the file does not decode: InvalidArgument("create ResourceClaim cache:
//    GetOrCreate() on checkpoint state: failed to get checkpoint
//    dra_manager_state: <JSON error> (offset N)");
//  - checksum mismatch: DataLoss("create ResourceClaim cache: GetOrCreate()
//    on checkpoint state: failed to get checkpoint dra_manager_state:
//    checkpoint is corrupted");
//  - Data does not decode: InvalidArgument("create ResourceClaim cache:
//    GetEntries() on checkpoint: <JSON error> (offset N)");
//  - other read errors as FileStore::Read returns them.
// The same texts in 1.34-1.37 (checked at v1.34.4, v1.35.4, v1.36.3,
// v1.37.2).
absl::StatusOr<CheckpointData> ReadAndVerify(const checkpoint::FileStore& store,
                                             StateLayout layout);

// What `devmgr checkpoint verify` reports for one dra_manager_state file.
struct VerifyResult {
  bool parsed = false;                 // the outer JSON decodes
  bool valid = false;                  // parsed, checksum matches and Data decodes
  uint32_t stored = 0;                 // when parsed
  uint32_t computed = 0;               // when parsed
  std::string error;                   // when !parsed: DecodeFile's error
  std::string data_error;              // when parsed and Data does not decode
  Checkpoint file;                     // when parsed
  std::optional<CheckpointData> data;  // when Data decodes
};
VerifyResult Verify(std::string_view bytes, StateLayout layout);

// True when `bytes` has the shape of a dra_manager_state file: a JSON
// object whose "Data" member (Go's case-insensitive match, last one wins) is
// a string. The device manager's checkpoint has an object there.
bool LooksLikeDraCheckpoint(std::string_view bytes);

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_CHECKPOINT_H_
