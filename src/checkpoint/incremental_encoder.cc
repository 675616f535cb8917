// IncrementalEncoder: cached per-entry and per-resource renderings, FNV-1a
// prefix states over the entries, and a JSON buffer whose registered-devices
// part stays in place between writes.
#include "checkpoint/incremental_encoder.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "checkpoint/checksum.h"
#include "checkpoint/json_codec.h"
#include "checkpoint/render.h"

namespace devmgr::checkpoint {

struct IncrementalEncoder::CachedEntry {
  PodDevicesEntry e;
  // The caller's version of `e` (SetEntryRefs); 0: none.
  uint64_t version = 0;
  // False until Render renders `json` and `spew`.
  bool rendered = false;
  std::string json;
  std::string spew;
};

struct IncrementalEncoder::CachedResource {
  std::string name;
  // Set by SetRegistered: `version` identifies the list.
  bool versioned = false;
  uint64_t version = 0;
  // Set by SetRegisteredDevices: the list, to compare the next one with.
  std::optional<DeviceList> ids;
  std::string json;  // "name":[...]
  std::string spew;  // name:[...]
};

namespace {

using EntryKey = std::tuple<std::string_view, std::string_view, std::string_view>;

EntryKey KeyOf(const PodDevicesEntry& e) { return {e.pod_uid, e.container_name, e.resource_name}; }

bool SameAllocResp(const std::optional<std::string>& cached, const std::string* given) {
  return given == nullptr ? !cached.has_value() : cached.has_value() && *cached == *given;
}

uint32_t Hash(uint32_t h, std::string_view s) { return Fnv1a32Update(h, s.data(), s.size()); }

uint32_t EntriesBaseState() {
  static const uint32_t base = Hash(Hash(kFnv32Offset, render::kSpewHead), "[");
  return base;
}

}  // namespace

IncrementalEncoder::IncrementalEncoder() = default;
IncrementalEncoder::~IncrementalEncoder() = default;

// The previous entries by key, handed out once each to the new entries they
// match.
class IncrementalEncoder::Matcher {
 public:
  explicit Matcher(std::vector<std::unique_ptr<CachedEntry>> old) : old_(std::move(old)) {
    order_.reserve(old_.size());
    for (const auto& c : old_) order_.push_back(c.get());
    // Duplicates of a key are chained through `next_`, first one first.
    next_.assign(old_.size(), SIZE_MAX);
    first_.reserve(old_.size());
    for (size_t j = old_.size(); j-- > 0;) {
      auto [it, inserted] = first_.try_emplace(KeyOf(old_[j]->e), j);
      if (!inserted) {
        next_[j] = it->second;
        it->second = j;
      }
    }
  }

  // The first unclaimed previous entry under `key` that `same` accepts.
  template <typename Same>
  std::unique_ptr<CachedEntry> Take(const EntryKey& key, const Same& same) {
    auto it = first_.find(key);
    if (it == first_.end()) return nullptr;
    for (size_t j = it->second; j != SIZE_MAX; j = next_[j]) {
      if (old_[j] != nullptr && same(*old_[j])) return std::move(old_[j]);
    }
    return nullptr;
  }

  const std::vector<const CachedEntry*>& order() const { return order_; }

 private:
  std::vector<std::unique_ptr<CachedEntry>> old_;
  std::vector<const CachedEntry*> order_;
  absl::flat_hash_map<EntryKey, size_t> first_;
  std::vector<size_t> next_;
};

void IncrementalEncoder::SetEntries(std::optional<std::vector<PodDevicesEntry>> entries) {
  const bool nil = !entries.has_value();
  Matcher old(std::move(entries_));
  entries_.clear();
  if (!nil) {
    entries_.reserve(entries->size());
    for (PodDevicesEntry& e : *entries) {
      std::unique_ptr<CachedEntry> reused = old.Take(KeyOf(e), [&e](const CachedEntry& c) {
        return c.e.device_ids == e.device_ids && c.e.alloc_resp == e.alloc_resp;
      });
      if (reused == nullptr) {
        reused = std::make_unique<CachedEntry>();
        reused->e = std::move(e);
      }
      entries_.push_back(std::move(reused));
    }
  }
  FinishEntries(nil, old.order());
}

void IncrementalEncoder::SetEntryRefs(bool nil, const std::vector<EntryRef>& refs) {
  assert(!nil || refs.empty());
  Matcher old(std::move(entries_));
  entries_.clear();
  entries_.reserve(refs.size());
  for (const EntryRef& r : refs) {
    std::unique_ptr<CachedEntry> reused =
        old.Take({r.pod_uid, r.container_name, r.resource_name},
                 [&r](const CachedEntry& c) { return r.version != 0 && c.version == r.version; });
    if (reused != nullptr) {
      ++stats_.entries_kept_by_version;
    } else {
      // A new version whose data did not change (the same allocation
      // inserted again) keeps the renderings too.
      reused = old.Take(
          {r.pod_uid, r.container_name, r.resource_name}, [this, &r](const CachedEntry& c) {
            ++stats_.entries_compared;
            return c.e.device_ids == *r.device_ids && SameAllocResp(c.e.alloc_resp, r.alloc_resp);
          });
    }
    if (reused == nullptr) {
      reused = std::make_unique<CachedEntry>();
      reused->e = PodDevicesEntry{
          std::string(r.pod_uid), std::string(r.container_name), std::string(r.resource_name),
          *r.device_ids,
          r.alloc_resp == nullptr ? std::nullopt : std::optional<std::string>(*r.alloc_resp)};
    }
    reused->version = r.version;
    entries_.push_back(std::move(reused));
  }
  FinishEntries(nil, old.order());
}

void IncrementalEncoder::FinishEntries(bool nil, const std::vector<const CachedEntry*>& old_order) {
  // The spew states stay valid up to the first position whose entry is not
  // the same cached object. (Compared while every old entry is still
  // alive, so a new entry cannot have an old one's address.)
  size_t same = 0;
  if (nil == entries_nil_) {
    const size_t n = std::min(old_order.size(), entries_.size());
    while (same < n && entries_[same].get() == old_order[same]) ++same;
  }
  states_valid_ = std::min(states_valid_, same);
  entries_nil_ = nil;
}

void IncrementalEncoder::RenderPendingEntries() {
  for (const auto& c : entries_) {
    if (c->rendered) continue;
    render::AppendJsonEntry(&c->json, c->e);
    render::AppendSpewEntry(&c->spew, c->e);
    c->rendered = true;
    ++stats_.entries_rendered;
  }
}

bool IncrementalEncoder::NeedsIds(std::string_view name, uint64_t version) const {
  auto it = std::lower_bound(
      resources_.begin(), resources_.end(), name,
      [](const std::unique_ptr<CachedResource>& r, std::string_view n) { return r->name < n; });
  if (it == resources_.end() || (*it)->name != name) return true;
  return !(*it)->versioned || (*it)->version != version;
}

namespace {

void RenderResource(const std::string& name, const DeviceList& ids, std::string* json,
                    std::string* spew) {
  AppendGoJsonString(json, name);
  json->push_back(':');
  render::AppendJsonList(json, ids);
  spew->append(name);
  spew->push_back(':');
  render::AppendSpewList(spew, ids);
}

}  // namespace

void IncrementalEncoder::SetRegistered(bool nil, std::vector<Resource> resources) {
  assert(!nil || resources.empty());
  std::vector<std::unique_ptr<CachedResource>> old = std::move(resources_);
  resources_.clear();
  resources_.reserve(resources.size());
  bool changed = nil != registered_nil_ || old.size() != resources.size();
  size_t j = 0;
  for (Resource& r : resources) {
    assert(resources_.empty() || resources_.back()->name < r.name);
    while (j < old.size() && old[j]->name < r.name) ++j;
    const bool have = j < old.size() && old[j]->name == r.name;
    if (have && !r.ids.has_value() && old[j]->versioned && old[j]->version == r.version) {
      if (j != resources_.size()) changed = true;
      resources_.push_back(std::move(old[j]));
      ++j;
      continue;
    }
    // The stale rendering goes first: with a million IDs it is ~85 MB.
    if (have) old[j++].reset();
    // A missing list the cache cannot supply is a caller bug; it is
    // written as an empty list.
    assert(r.ids.has_value());
    auto c = std::make_unique<CachedResource>();
    c->name = std::move(r.name);
    c->versioned = true;
    c->version = r.version;
    const DeviceList ids = r.ids.has_value() ? *std::move(r.ids) : DeviceList(std::in_place);
    RenderResource(c->name, ids, &c->json, &c->spew);
    ++stats_.lists_rendered;
    stats_.registered_ids_rendered += ids.has_value() ? ids->size() : 0;
    resources_.push_back(std::move(c));
    changed = true;
  }
  registered_nil_ = nil;
  if (changed) registered_dirty_ = true;
}

void IncrementalEncoder::SetRegisteredDevices(const RegisteredDevices& registered) {
  std::vector<std::unique_ptr<CachedResource>> old = std::move(resources_);
  resources_.clear();
  bool changed = registered.has_value() == registered_nil_ ||
                 old.size() != (registered ? registered->size() : 0);
  if (registered.has_value()) {
    size_t j = 0;
    for (const auto& [name, ids] : *registered) {  // bytewise order
      while (j < old.size() && old[j]->name < name) ++j;
      if (j < old.size() && old[j]->name == name && old[j]->ids.has_value() &&
          *old[j]->ids == ids) {
        if (j != resources_.size()) changed = true;
        resources_.push_back(std::move(old[j]));
        ++j;
        continue;
      }
      if (j < old.size() && old[j]->name == name) old[j++].reset();
      auto c = std::make_unique<CachedResource>();
      c->name = name;
      c->ids = ids;
      RenderResource(c->name, ids, &c->json, &c->spew);
      ++stats_.lists_rendered;
      stats_.registered_ids_rendered += ids.has_value() ? ids->size() : 0;
      resources_.push_back(std::move(c));
      changed = true;
    }
  }
  registered_nil_ = !registered.has_value();
  if (changed) registered_dirty_ = true;
}

void IncrementalEncoder::AssembleJson() {
  // Registered part: `,"RegisteredDevices":` R `},"Checksum":`.
  size_t size = render::kJsonRegistered.size() + render::kJsonChecksum.size() + 2;
  for (const auto& r : resources_) size += r->json.size() + 1;
  const size_t front = std::max<size_t>(4096, 2 * entries_json_size_);
  std::string().swap(json_);  // the old buffer is not needed: free it first
  std::string buf;
  buf.reserve(front + size + 24);
  buf.resize(front);
  buf.append(render::kJsonRegistered);
  if (registered_nil_) {
    buf.append("null");
  } else {
    buf.push_back('{');
    for (size_t i = 0; i < resources_.size(); ++i) {
      if (i != 0) buf.push_back(',');
      buf.append(resources_[i]->json);
    }
    buf.push_back('}');
  }
  buf.append(render::kJsonChecksum);
  json_ = std::move(buf);
  registered_begin_ = front;
  registered_end_ = json_.size();
}

void IncrementalEncoder::UpdateSpewStates() {
  const size_t n = entries_.size();
  states_.resize(n);
  if (states_valid_ > n) states_valid_ = n;
  uint32_t h = states_valid_ == 0 ? EntriesBaseState() : states_[states_valid_ - 1];
  for (size_t i = states_valid_; i < n; ++i) {
    if (i != 0) h = Hash(h, " ");
    h = Hash(h, entries_[i]->spew);
    stats_.spew_bytes_hashed += entries_[i]->spew.size() + (i != 0);
    states_[i] = h;
  }
  states_valid_ = n;
}

IncrementalEncoder::Output IncrementalEncoder::Render() {
  // ---- checksum ----
  uint32_t h;
  if (entries_nil_) {
    h = Hash(Hash(kFnv32Offset, render::kSpewHead), "<nil>");
  } else {
    RenderPendingEntries();
    UpdateSpewStates();
    h = Hash(entries_.empty() ? EntriesBaseState() : states_.back(), "]");
  }
  h = Hash(h, render::kSpewRegistered);
  if (registered_nil_) {
    h = Hash(h, "<nil>");
  } else {
    h = Hash(h, "map[");
    for (size_t i = 0; i < resources_.size(); ++i) {
      if (i != 0) h = Hash(h, " ");
      h = Hash(h, resources_[i]->spew);
      stats_.spew_bytes_hashed += resources_[i]->spew.size();
    }
    h = Hash(h, "]");
  }
  h = Hash(h, "}");

  // ---- JSON ----
  size_t entries_size = render::kJsonHead.size();
  if (entries_nil_) {
    entries_size += 4;
  } else {
    entries_size += 2 + (entries_.empty() ? 0 : entries_.size() - 1);
    for (const auto& e : entries_) entries_size += e->json.size();
  }
  entries_json_size_ = entries_size;
  if (registered_dirty_ || entries_size > registered_begin_) {
    AssembleJson();
    registered_dirty_ = false;
  }
  const size_t start = registered_begin_ - entries_size;
  char* p = json_.data() + start;
  auto put = [&p](std::string_view s) {
    std::copy(s.begin(), s.end(), p);
    p += s.size();
  };
  put(render::kJsonHead);
  if (entries_nil_) {
    put("null");
  } else {
    put("[");
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (i != 0) put(",");
      put(entries_[i]->json);
    }
    put("]");
  }
  assert(p == json_.data() + registered_begin_);
  json_.resize(registered_end_);
  char digits[24];
  const auto res = std::to_chars(digits, digits + sizeof(digits), uint64_t{h});
  json_.append(digits, static_cast<size_t>(res.ptr - digits));
  json_.push_back('}');
  return Output{std::string_view(json_).substr(start), h};
}

std::string IncrementalEncoder::SpewForTest() const {
  std::string out(render::kSpewHead);
  if (entries_nil_) {
    out.append("<nil>");
  } else {
    out.push_back('[');
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (i != 0) out.push_back(' ');
      if (entries_[i]->rendered) {
        out.append(entries_[i]->spew);
      } else {
        render::AppendSpewEntry(&out, entries_[i]->e);
      }
    }
    out.push_back(']');
  }
  out.append(render::kSpewRegistered);
  if (registered_nil_) {
    out.append("<nil>");
  } else {
    out.append("map[");
    for (size_t i = 0; i < resources_.size(); ++i) {
      if (i != 0) out.push_back(' ');
      out.append(resources_[i]->spew);
    }
    out.push_back(']');
  }
  out.push_back('}');
  return out;
}

}  // namespace devmgr::checkpoint
