#include "dra/checkpoint_encoder.h"

#include <zlib.h>

#include <deque>
#include <string_view>
#include <utility>

#include "checkpoint/go_json.h"
#include "dra/checkpoint.h"

namespace devmgr::dra {
namespace {

// `s` as it appears between the quotes of a Go JSON string.
std::string Escaped(std::string_view s) {
  std::string quoted;
  quoted.reserve(s.size() + s.size() / 8 + 2);
  checkpoint::AppendGoJsonString(&quoted, s);
  return quoted.substr(1, quoted.size() - 2);
}

uLong Crc(uLong crc, std::string_view s) {
  return crc32_z(crc, reinterpret_cast<const Bytef*>(s.data()), s.size());
}

}  // namespace

CheckpointEncoder::CheckpointEncoder(StateLayout layout) : layout_(layout) {
  // Data of an empty list ends with "[]}": the head is all before the ']'.
  const std::string empty = EncodeData(NewCheckpointData(std::vector<ClaimInfoState>{}), layout_);
  raw_head_ = empty.substr(0, empty.size() - 2);
  escaped_head_ = Escaped(raw_head_);
}

CheckpointEncoder::Piece CheckpointEncoder::Make(const ClaimInfoState& s) const {
  Piece p;
  p.state = s;
  AppendClaim(&p.raw, s, layout_);
  p.escaped = Escaped(p.raw);
  return p;
}

std::string_view CheckpointEncoder::Encode(const std::vector<const ClaimInfoState*>& states) {
  // Mark the pieces in use with this call's stamp (no allocation for the
  // claims that did not change), then drop the rest.
  ++stamp_;
  std::vector<const Piece*> order;
  order.reserve(states.size());
  // A second, different state under one UID (not from the manager's cache,
  // which is keyed by UID) is encoded for this call only.
  std::deque<Piece> uncached;
  size_t used = 0;
  for (const ClaimInfoState* s : states) {
    auto [it, fresh] = pieces_.try_emplace(s->claim_uid);
    Piece& p = it->second;
    if (p.stamp == stamp_) {
      order.push_back(p.state == *s ? &p : &uncached.emplace_back(Make(*s)));
      continue;
    }
    if (fresh || !(p.state == *s)) p = Make(*s);
    p.stamp = stamp_;
    ++used;
    order.push_back(&p);
  }
  if (used < pieces_.size())
    std::erase_if(pieces_, [&](const auto& kv) { return kv.second.stamp != stamp_; });

  // The checksum in one pass over Data (zlib's crc32 is several times
  // slower over a thousand short pieces than over one buffer).
  data_.assign(raw_head_);
  size_t escaped_size = escaped_head_.size();
  for (size_t i = 0; i < order.size(); ++i) {
    if (i > 0) data_.push_back(',');
    data_.append(order[i]->raw);
    escaped_size += order[i]->escaped.size() + 1;
  }
  data_.append("]}");
  const uLong crc = Crc(crc32_z(0L, Z_NULL, 0), data_);

  constexpr std::string_view kOpen = "{\"Data\":\"";
  constexpr std::string_view kClose = "]}\",\"Checksum\":";
  std::string& out = file_;
  out.clear();
  out.reserve(kOpen.size() + escaped_size + kClose.size() + 12);
  out.append(kOpen);
  out.append(escaped_head_);
  for (size_t i = 0; i < order.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(order[i]->escaped);
  }
  out.append(kClose);
  out.append(std::to_string(static_cast<uint32_t>(crc)));
  out.push_back('}');
  return out;
}

}  // namespace devmgr::dra
