// BitMask: a set of NUMA node ids as one 64-bit word, with the operations
// and the orderings of the kubelet's topologymanager/bitmask package
// (pkg/kubelet/cm/topologymanager/bitmask).
#ifndef DEVMGR_TOPOLOGY_BITMASK_H_
#define DEVMGR_TOPOLOGY_BITMASK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace devmgr::topology {

// A value type; bit i stands for NUMA node i (0..63).
class BitMask {
 public:
  constexpr BitMask() = default;
  constexpr explicit BitMask(uint64_t bits) : bits_(bits) {}

  // NewBitMask: the mask with these bits. Fails with "bit number must be
  // less than 64" for a bit outside 0..63.
  static absl::StatusOr<BitMask> FromBits(const std::vector<int>& bits);

  // Add / Remove fail as FromBits does and then change nothing.
  absl::Status Add(const std::vector<int>& bits);
  absl::Status Remove(const std::vector<int>& bits);
  void And(const BitMask& other) { bits_ &= other.bits_; }
  void Or(const BitMask& other) { bits_ |= other.bits_; }
  void Clear() { bits_ = 0; }
  void Fill() { bits_ = ~uint64_t{0}; }

  bool IsEmpty() const { return bits_ == 0; }
  // False for bits outside 0..63.
  bool IsSet(int bit) const;
  bool AnySet(const std::vector<int>& bits) const;
  bool IsEqual(const BitMask& other) const { return bits_ == other.bits_; }
  // Fewer bits set; on a tie, IsLessThan.
  bool IsNarrowerThan(const BitMask& other) const;
  // The numerically smaller mask ("more lower-numbered bits set").
  bool IsLessThan(const BitMask& other) const { return bits_ < other.bits_; }
  bool IsGreaterThan(const BitMask& other) const { return bits_ > other.bits_; }
  int Count() const;
  // The set bits, ascending.
  std::vector<int> GetBits() const;
  uint64_t bits() const { return bits_; }

  // Go's String(): binary, zero-padded to a multiple of two digits, e.g.
  // "01", "10", "11", "0101".
  std::string String() const;

  bool operator==(const BitMask&) const = default;

 private:
  uint64_t bits_ = 0;
};

// bitmask.And / bitmask.Or of `first` and the rest.
BitMask And(BitMask first, const std::vector<BitMask>& rest);
BitMask Or(BitMask first, const std::vector<BitMask>& rest);

// IterateBitMasks: every non-empty subset of `bits`, by size 1..n, and
// within one size as the lexicographic combinations of the list order.
// Ids must be 0..63 (the node configuration guarantees it).
void IterateBitMasks(const std::vector<int>& bits, const std::function<void(BitMask)>& fn);

}  // namespace devmgr::topology

#endif  // DEVMGR_TOPOLOGY_BITMASK_H_
