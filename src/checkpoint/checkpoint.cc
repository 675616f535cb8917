// Checkpoint-level operations: format detection, verification, V1 -> V2
// conversion, and the kubelet's readCheckpoint.
#include "checkpoint/checkpoint.h"

#include <utility>

#include "absl/status/status.h"
#include "checkpoint/checksum.h"
#include "checkpoint/file_store.h"
#include "checkpoint/json_codec.h"

namespace devmgr::checkpoint {

absl::StatusOr<Checkpoint> DecodeV2(std::string_view bytes) {
  return DecodeJson(bytes, FormatVersion::kV2);
}

absl::StatusOr<Checkpoint> DecodeV1(std::string_view bytes) {
  return DecodeJson(bytes, FormatVersion::kV1);
}

absl::StatusOr<Checkpoint> DecodeAny(std::string_view bytes) {
  VerifyResult v = Verify(bytes);
  if (!v.parsed) return absl::InvalidArgumentError(v.error);
  return std::move(v.checkpoint);
}

uint64_t ComputedChecksum(const Checkpoint& cp) {
  return cp.format == FormatVersion::kV2 ? ComputeChecksum(cp.data) : ComputeChecksumV1(cp.data_v1);
}

bool ChecksumMatches(const Checkpoint& cp) { return ComputedChecksum(cp) == cp.checksum; }

std::string Encode(const Checkpoint& cp) { return EncodeJson(cp); }

Checkpoint MakeV2(CheckpointData data) {
  Checkpoint cp;
  cp.format = FormatVersion::kV2;
  cp.data = std::move(data);
  cp.checksum = ComputeChecksum(cp.data);
  return cp;
}

Checkpoint ConvertV1ToV2(const Checkpoint& v1) {
  CheckpointData data;
  // Like the kubelet's GetDataInLatestFormat: a nil list when there are no
  // entries, every entry's devices on NUMA node 0.
  if (v1.data_v1.pod_device_entries && !v1.data_v1.pod_device_entries->empty()) {
    data.pod_device_entries.emplace();
    for (const PodDevicesEntryV1& e : *v1.data_v1.pod_device_entries) {
      PodDevicesEntry out;
      out.pod_uid = e.pod_uid;
      out.container_name = e.container_name;
      out.resource_name = e.resource_name;
      out.device_ids.emplace();
      (*out.device_ids)[0] = e.device_ids;
      out.alloc_resp = e.alloc_resp;
      data.pod_device_entries->push_back(std::move(out));
    }
  }
  data.registered_devices = v1.data_v1.registered_devices;
  return MakeV2(std::move(data));
}

VerifyResult Verify(std::string_view bytes) {
  VerifyResult r;
  absl::StatusOr<Checkpoint> v2 = DecodeV2(bytes);
  if (v2.ok()) {
    r.stored = v2->checksum;
    r.computed = ComputedChecksum(*v2);
    if (r.stored == r.computed) {
      r.parsed = r.valid = true;
      r.format = FormatVersion::kV2;
      r.checkpoint = *std::move(v2);
      return r;
    }
  }
  absl::StatusOr<Checkpoint> v1 = DecodeV1(bytes);
  if (v1.ok()) {
    const uint64_t computed = ComputedChecksum(*v1);
    if (computed == v1->checksum || !v2.ok()) {
      r.parsed = true;
      r.valid = computed == v1->checksum;
      r.format = FormatVersion::kV1;
      r.stored = v1->checksum;
      r.computed = computed;
      r.checkpoint = *std::move(v1);
      return r;
    }
  }
  if (v2.ok()) {
    r.parsed = true;
    r.format = FormatVersion::kV2;
    r.checkpoint = *std::move(v2);
    return r;
  }
  r.error = std::string(v2.status().message());
  return r;
}

VerifyResult VerifyOnly(std::string_view bytes) {
  VerifyResult r;
  uint64_t stored = 0, computed = 0;
  if (OnePassVerifyV2(bytes, &stored, &computed) && stored == computed) {
    r.parsed = r.valid = true;
    r.format = FormatVersion::kV2;
    r.stored = stored;
    r.computed = computed;
    return r;
  }
  // A mismatch may still be a valid V1 file, or need the general decoder's
  // error: the general way decides.
  r = Verify(bytes);
  r.checkpoint = Checkpoint();
  return r;
}

absl::StatusOr<Checkpoint> ReadAndVerify(const FileStore& store, bool allow_v1) {
  absl::StatusOr<std::string> bytes = store.Read(kCheckpointName);
  if (absl::IsNotFound(bytes.status())) {
    return absl::NotFoundError("checkpoint is not found");
  }
  if (!bytes.ok()) return bytes.status();
  absl::Status v2_error;
  absl::StatusOr<Checkpoint> v2 = DecodeV2(*bytes);
  if (v2.ok()) {
    if (ChecksumMatches(*v2)) return v2;
    v2_error = absl::DataLossError("checkpoint is corrupted");
  } else {
    v2_error = v2.status();
  }
  if (allow_v1) {
    absl::StatusOr<Checkpoint> v1 = DecodeV1(*bytes);
    if (v1.ok() && ChecksumMatches(*v1)) return ConvertV1ToV2(*v1);
  }
  return v2_error;
}

}  // namespace devmgr::checkpoint
