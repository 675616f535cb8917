#include "topology/bitmask.h"

#include <bit>

#include "fmt/format.h"

namespace devmgr::topology {
namespace {

absl::Status CheckBits(const std::vector<int>& bits) {
  for (int b : bits) {
    if (b < 0 || b >= 64) return absl::InvalidArgumentError("bit number must be less than 64");
  }
  return absl::OkStatus();
}

void Iterate(const std::vector<int>& bits, size_t start, uint64_t accum, int have, int size,
             const std::function<void(BitMask)>& fn) {
  if (have == size) {
    fn(BitMask(accum));
    return;
  }
  for (size_t i = start; i < bits.size(); ++i) {
    const int b = bits[i];
    const uint64_t bit = (b >= 0 && b < 64) ? (uint64_t{1} << b) : 0;
    Iterate(bits, i + 1, accum | bit, have + 1, size, fn);
  }
}

}  // namespace

absl::StatusOr<BitMask> BitMask::FromBits(const std::vector<int>& bits) {
  BitMask m;
  if (absl::Status s = m.Add(bits); !s.ok()) return s;
  return m;
}

absl::Status BitMask::Add(const std::vector<int>& bits) {
  if (absl::Status s = CheckBits(bits); !s.ok()) return s;
  for (int b : bits) bits_ |= uint64_t{1} << b;
  return absl::OkStatus();
}

absl::Status BitMask::Remove(const std::vector<int>& bits) {
  if (absl::Status s = CheckBits(bits); !s.ok()) return s;
  for (int b : bits) bits_ &= ~(uint64_t{1} << b);
  return absl::OkStatus();
}

bool BitMask::IsSet(int bit) const {
  if (bit < 0 || bit >= 64) return false;
  return (bits_ & (uint64_t{1} << bit)) != 0;
}

bool BitMask::AnySet(const std::vector<int>& bits) const {
  for (int b : bits) {
    if (IsSet(b)) return true;
  }
  return false;
}

bool BitMask::IsNarrowerThan(const BitMask& other) const {
  if (Count() == other.Count()) return IsLessThan(other);
  return Count() < other.Count();
}

int BitMask::Count() const { return std::popcount(bits_); }

std::vector<int> BitMask::GetBits() const {
  std::vector<int> out;
  for (int i = 0; i < 64; ++i) {
    if (IsSet(i)) out.push_back(i);
  }
  return out;
}

std::string BitMask::String() const {
  // The shortest even width above the highest "greater than 1<<shift".
  constexpr int kGrouping = 2;
  for (int shift = 64 - kGrouping; shift > 0; shift -= kGrouping) {
    if (bits_ > (uint64_t{1} << shift)) {
      return fmt::format("{:0{}b}", bits_, shift + kGrouping);
    }
  }
  return fmt::format("{:0{}b}", bits_, kGrouping);
}

BitMask And(BitMask first, const std::vector<BitMask>& rest) {
  for (const BitMask& m : rest) first.And(m);
  return first;
}

BitMask Or(BitMask first, const std::vector<BitMask>& rest) {
  for (const BitMask& m : rest) first.Or(m);
  return first;
}

void IterateBitMasks(const std::vector<int>& bits, const std::function<void(BitMask)>& fn) {
  for (int size = 1; size <= static_cast<int>(bits.size()); ++size) {
    Iterate(bits, 0, 0, 0, size, fn);
  }
}

}  // namespace devmgr::topology
