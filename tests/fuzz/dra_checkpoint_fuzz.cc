// Fuzz target: the dra_manager_state decoder and encoder (`devmgr checkpoint verify|repair` on a
// DRA file, and dra::ReadAndVerify). The input is tried both as a whole file and as the Data
// JSON inside one. Properties:
//  - a file DecodeFile accepts re-encodes (EncodeFile) to bytes that decode to the same Data and
//    checksum, and encode to themselves; Verify agrees with DecodeFile and ChecksumMatches;
//  - Data that DecodeData accepts under a layout re-encodes (EncodeData) to bytes that decode
//    under that layout to the same state: encoding is a fixed point after one round;
//  - NewCheckpoint of any decoded state verifies;
//  - a refusal always has an error text.
// See docs/checkpoint_format.md "dra_manager_state".
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dra/checkpoint.h"
#include "fuzz_check.h"

using namespace devmgr::dra;

namespace {

void CheckFile(std::string_view bytes) {
  const absl::StatusOr<Checkpoint> cp = DecodeFile(bytes);
  const VerifyResult v = Verify(bytes, StateLayout::k137);
  FUZZ_CHECK(v.parsed == cp.ok(), "Verify and DecodeFile disagree");
  if (!cp.ok()) {
    FUZZ_CHECK(!v.error.empty(), "a refused file has no error message");
    return;
  }
  FUZZ_CHECK(v.stored == cp->checksum && (v.stored == v.computed) == ChecksumMatches(*cp),
             "Verify's checksums disagree with DecodeFile's");
  const std::string enc = EncodeFile(*cp);
  const absl::StatusOr<Checkpoint> back = DecodeFile(enc);
  FUZZ_CHECK(back.ok(), "re-encoded file refused: %s",
             std::string(back.status().message()).c_str());
  FUZZ_CHECK(*back == *cp, "re-encoded file decodes differently\n%s", enc.c_str());
  FUZZ_CHECK(EncodeFile(*back) == enc, "file encoding is not stable");
}

void CheckData(std::string_view data) {
  for (StateLayout layout : {StateLayout::k134, StateLayout::k135, StateLayout::k137}) {
    const absl::StatusOr<CheckpointData> d = DecodeData(data, layout);
    if (!d.ok()) {
      FUZZ_CHECK(!d.status().message().empty(), "a refused Data has no error message");
      continue;
    }
    const std::string enc = EncodeData(*d, layout);
    const absl::StatusOr<CheckpointData> back = DecodeData(enc, layout);
    FUZZ_CHECK(back.ok(), "re-encoded Data refused: %s\n%s",
               std::string(back.status().message()).c_str(), enc.c_str());
    FUZZ_CHECK(EncodeData(*back, layout) == enc, "Data encoding is not stable\n%s", enc.c_str());
    const Checkpoint cp = NewCheckpoint(back->claim_info_state_list, layout);
    FUZZ_CHECK(Verify(EncodeFile(cp), layout).valid, "a new checkpoint does not verify");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  CheckFile(bytes);
  CheckData(bytes);
  // The Data of a file, when there is one.
  const absl::StatusOr<Checkpoint> cp = DecodeFile(bytes);
  if (cp.ok()) CheckData(cp->data);
  return 0;
}
