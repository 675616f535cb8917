// CheckpointEncoder: the dra_manager_state file of the claim-info cache,
// rewritten after every prepare and unprepare, without encoding again the
// claims that did not change. Each claim's JSON (an element of Data's list)
// and its escaped form inside the file's "Data" string are kept from the
// previous call while the claim's state is equal to the one they were made
// from; the checksum is CRC32 over Data assembled from the pieces. The bytes are those
// of EncodeFile(NewCheckpoint(list, layout)) (tests/: checkpoint_encoder_test).
//
// Why it is correct to escape per claim: Go's JSON string escaping decides
// for each character (or each UTF-8 sequence) on its own, and the pieces
// are cut at ASCII punctuation between elements, never inside a sequence.
#ifndef DEVMGR_DRA_CHECKPOINT_ENCODER_H_
#define DEVMGR_DRA_CHECKPOINT_ENCODER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dra/state.h"

namespace devmgr::dra {

class CheckpointEncoder {
 public:
  explicit CheckpointEncoder(StateLayout layout);

  // The file for a list of `states` in this order (never a nil list: the
  // manager writes an empty cache as []), valid until the next call (the
  // buffers are kept, so a rewrite of the same size allocates nothing).
  // Claims not in `states` are forgotten. Not thread-safe.
  std::string_view Encode(const std::vector<const ClaimInfoState*>& states);

 private:
  struct Piece {
    ClaimInfoState state;  // what raw and escaped were made from
    std::string raw;       // json.Marshal of the state
    std::string escaped;   // raw as it appears inside the "Data" string
    uint64_t stamp = 0;    // the last call that used it
  };
  Piece Make(const ClaimInfoState& s) const;

  const StateLayout layout_;
  std::string raw_head_, escaped_head_;            // Data up to the list's '['
  std::unordered_map<std::string, Piece> pieces_;  // by claim UID
  uint64_t stamp_ = 0;
  std::string data_;  // the last Data, its capacity kept for the next call
  std::string file_;  // the last file, likewise
};

}  // namespace devmgr::dra

#endif  // DEVMGR_DRA_CHECKPOINT_ENCODER_H_
