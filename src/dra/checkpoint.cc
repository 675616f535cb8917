#include "dra/checkpoint.h"

#include <zlib.h>

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "checkpoint/go_json.h"

namespace devmgr::dra {
namespace {

// The kubelet's error chain around a failed read of the file, as
// dra.NewManager returns it (manager.go "create ResourceClaim cache",
// claiminfo.go newClaimInfoCache, state/checkpointer.go GetOrCreate).
std::string GetOrCreateError(std::string_view cause) {
  return "create ResourceClaim cache: GetOrCreate() on checkpoint state: failed to get "
         "checkpoint " +
         std::string(kCheckpointName) + ": " + std::string(cause);
}

}  // namespace

uint32_t Crc32Ieee(std::string_view bytes) {
  // zlib's crc32 is the IEEE polynomial, as Go's crc32.ChecksumIEEE.
  return static_cast<uint32_t>(
      crc32_z(crc32_z(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

Checkpoint NewCheckpoint(const ClaimInfoStateList& list, StateLayout layout) {
  Checkpoint cp;
  cp.data = EncodeData(NewCheckpointData(list), layout);
  cp.checksum = Crc32Ieee(cp.data);
  return cp;
}

std::string EncodeFile(const Checkpoint& cp) {
  std::string out = "{\"Data\":";
  checkpoint::AppendGoJsonString(&out, cp.data);
  out.append(",\"Checksum\":");
  out.append(std::to_string(cp.checksum));
  out.push_back('}');
  return out;
}

bool ChecksumMatches(const Checkpoint& cp) { return Crc32Ieee(cp.data) == cp.checksum; }

absl::StatusOr<CheckpointData> ReadAndVerify(const checkpoint::FileStore& store,
                                             StateLayout layout) {
  absl::StatusOr<std::string> bytes = store.Read(kCheckpointName);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) return absl::NotFoundError("checkpoint is not found");
    return bytes.status();
  }
  absl::StatusOr<Checkpoint> cp = DecodeFile(*bytes);
  if (!cp.ok())
    return absl::InvalidArgumentError(GetOrCreateError(std::string(cp.status().message())));
  if (!ChecksumMatches(*cp))
    return absl::DataLossError(GetOrCreateError("checkpoint is corrupted"));
  absl::StatusOr<CheckpointData> data = DecodeData(cp->data, layout);
  if (!data.ok()) {
    return absl::InvalidArgumentError("create ResourceClaim cache: GetEntries() on checkpoint: " +
                                      std::string(data.status().message()));
  }
  return data;
}

VerifyResult Verify(std::string_view bytes, StateLayout layout) {
  VerifyResult r;
  absl::StatusOr<Checkpoint> cp = DecodeFile(bytes);
  if (!cp.ok()) {
    r.error = std::string(cp.status().message());
    return r;
  }
  r.parsed = true;
  r.file = std::move(*cp);
  r.stored = r.file.checksum;
  r.computed = Crc32Ieee(r.file.data);
  absl::StatusOr<CheckpointData> data = DecodeData(r.file.data, layout);
  if (data.ok()) {
    r.data = std::move(*data);
  } else {
    r.data_error = std::string(data.status().message());
  }
  r.valid = r.stored == r.computed && r.data.has_value();
  return r;
}

}  // namespace devmgr::dra
