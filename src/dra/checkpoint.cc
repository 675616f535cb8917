#include "dra/checkpoint.h"

#include <array>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "checkpoint/go_json.h"

namespace devmgr::dra {
namespace {

struct Crc32Table {
  std::array<uint32_t, 256> t{};
  constexpr Crc32Table() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
  }
};
constexpr Crc32Table kCrc32;

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
  uint32_t c = 0xFFFFFFFFu;
  for (const char ch : bytes) c = kCrc32.t[(c ^ static_cast<unsigned char>(ch)) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
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
