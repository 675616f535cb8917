// The kubelet's checkpoint checksum: FNV-1a 32 over the go-spew rendering of
// the checkpoint data (hashutil.DeepHashObject / dump.ForHash with
// SortKeys, DisableMethods, SpewKeys). The entry points SpewV2, SpewV1,
// ComputeChecksum and ComputeChecksumV1 are declared in checkpoint.h; this
// header adds the hash primitive. The checksum is computed by streaming the
// rendering into the hasher, without building the text.
#ifndef DEVMGR_CHECKPOINT_CHECKSUM_H_
#define DEVMGR_CHECKPOINT_CHECKSUM_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace devmgr::checkpoint {

inline constexpr uint32_t kFnv32Offset = 2166136261u;
inline constexpr uint32_t kFnv32Prime = 16777619u;

// FNV-1a, 32 bit (Go's hash/fnv New32a), continuing from `state`.
inline uint32_t Fnv1a32Update(uint32_t state, const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    state ^= static_cast<unsigned char>(p[i]);
    state *= kFnv32Prime;
  }
  return state;
}

// FNV-1a 32 of `s`.
inline uint32_t Fnv1a32(std::string_view s) {
  return Fnv1a32Update(kFnv32Offset, s.data(), s.size());
}

// The checksum check of a V2 file in one pass over its bytes, without
// decoding it, for files in the layout json.Marshal writes (what the kubelet
// and devmgr write: keys in field order, no whitespace, plain ASCII strings
// without escapes, ascending NUMA keys, canonical numbers and base64). Sets
// *stored and *computed (the checksum of what Go would decode) and returns
// true when the file is in that layout and is valid JSON for the V2 types;
// returns false when it is not in that layout, and the file must then be
// decoded the general way (VerifyOnly in checkpoint.h does so).
bool OnePassVerifyV2(std::string_view bytes, uint64_t* stored, uint64_t* computed);

}  // namespace devmgr::checkpoint

#endif  // DEVMGR_CHECKPOINT_CHECKSUM_H_
