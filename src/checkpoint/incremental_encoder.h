// IncrementalEncoder: the bytes and checksum of a V2 checkpoint kept between
// writes, so that the cost of a write follows what changed rather than the
// size of the node. It keeps, per PodDeviceEntry and per registered
// resource, both renderings (json.Marshal bytes and go-spew text), and the
// FNV-1a state after each entry of the spew text.
//
// What a write costs, after a change of:
//  - one entry (an allocation): rendering that entry; re-hashing the spew
//    text from that entry to the end (the later entries and the whole
//    registered-devices part: FNV-1a is a stream, and the kubelet's text puts
//    RegisteredDevices after PodDeviceEntries, so no state past the changed
//    entry can be reused); copying the entries' JSON in front of the cached
//    registered-devices JSON. No registered device ID is re-rendered.
//  - one resource's device list (a ListAndWatch update): rendering that
//    list, re-assembling the registered JSON and re-hashing that part.
// The output is byte-identical to Encode(MakeV2(data)) and its checksum to
// ComputeChecksum(data) for the same data (incremental_encoder_test.cc).
#ifndef DEVMGR_CHECKPOINT_INCREMENTAL_ENCODER_H_
#define DEVMGR_CHECKPOINT_INCREMENTAL_ENCODER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/checkpoint.h"

namespace devmgr::checkpoint {

// Thread-compatible.
class IncrementalEncoder {
 public:
  // One key of RegisteredDevices as the caller tracks it.
  struct Resource {
    std::string name;
    // The caller's version of this resource's list: it must change whenever
    // the list (members or order) changes.
    uint64_t version = 0;
    // The list. May be left nullopt when NeedsIds(name, version) is false:
    // the cached rendering is kept.
    std::optional<DeviceList> ids;
  };

  // One entry of Data.PodDeviceEntries by reference (SetEntryRefs).
  struct EntryRef {
    std::string_view pod_uid;
    std::string_view container_name;
    std::string_view resource_name;
    // Identifies the entry's device IDs and AllocResp: the caller gives a
    // new version whenever they change, and never gives a version that
    // stood for other data. 0 is no version (the data are compared).
    uint64_t version = 0;
    const DevicesPerNUMA* device_ids = nullptr;  // required
    const std::string* alloc_resp = nullptr;     // nullptr: JSON null
  };

  struct Output {
    std::string_view bytes;  // valid until the next call of a Set* method
    uint64_t checksum = 0;
  };

  // Counters of re-rendering work since construction (tests and benches).
  struct Stats {
    size_t entries_rendered = 0;
    // SetEntryRefs: entries kept because their version matched, and
    // entries whose data were compared with a cached entry's.
    size_t entries_kept_by_version = 0;
    size_t entries_compared = 0;
    size_t lists_rendered = 0;
    size_t registered_ids_rendered = 0;
    size_t spew_bytes_hashed = 0;
  };

  IncrementalEncoder();
  ~IncrementalEncoder();
  IncrementalEncoder(const IncrementalEncoder&) = delete;
  IncrementalEncoder& operator=(const IncrementalEncoder&) = delete;

  // Data.PodDeviceEntries (nullopt: JSON null, spew <nil>). An entry equal
  // to one cached under the same (pod, container, resource) keeps its
  // renderings.
  void SetEntries(std::optional<std::vector<PodDevicesEntry>> entries);
  // The same by reference: an entry cached under the same key at the same
  // version keeps its renderings and its data are neither copied nor
  // compared, so that a write costs what changed, not the number of
  // entries. Other entries' data are copied (and rendered by Render), so
  // what `refs` point to need only live through this call. `nil`: JSON
  // null (`refs` must be empty).
  void SetEntryRefs(bool nil, const std::vector<EntryRef>& refs);

  // Data.RegisteredDevices. With `nil`, the map is nil and `resources` must
  // be empty. Otherwise `resources` are the map's keys, in bytewise order,
  // without duplicates.
  // REQUIRES: ids is set for every resource for which NeedsIds is true.
  void SetRegistered(bool nil, std::vector<Resource> resources);
  // The same from a whole map; lists are compared with the cached ones, so
  // only a changed list is rendered (but every list is read).
  void SetRegisteredDevices(const RegisteredDevices& registered);

  // False when `name` is cached at `version` (its ids may then be omitted).
  bool NeedsIds(std::string_view name, uint64_t version) const;

  // The file bytes (Encode of the V2 checkpoint with its checksum) and the
  // checksum, for what was last set.
  Output Render();

  // The go-spew text the checksum covers (SpewV2 of the data): for tests.
  std::string SpewForTest() const;
  const Stats& stats() const { return stats_; }

 private:
  struct CachedEntry;
  struct CachedResource;

  class Matcher;
  // After the entries were replaced (`old_order`: the previous ones, still
  // alive): how far the spew states stay valid.
  void FinishEntries(bool nil, const std::vector<const CachedEntry*>& old_order);
  void RenderPendingEntries();
  void UpdateSpewStates();
  void AssembleJson();

  // Entries.
  bool entries_nil_ = true;
  std::vector<std::unique_ptr<CachedEntry>> entries_;
  // FNV-1a state after kSpewHead, "[" and entries_[0..i] (with the spaces
  // between them); valid for i < states_valid_.
  std::vector<uint32_t> states_;
  size_t states_valid_ = 0;

  // Registered devices.
  bool registered_nil_ = false;
  std::vector<std::unique_ptr<CachedResource>> resources_;
  bool registered_dirty_ = true;

  // JSON output: buffer = [free][head + entries][registered + "},\"Checksum\":"][digits "}"].
  // The registered part sits at a fixed offset; the entries part is copied
  // right-aligned in front of it on each Render.
  std::string json_;
  size_t registered_begin_ = 0;  // where the registered part starts in json_
  size_t registered_end_ = 0;    // end of `},"Checksum":`
  size_t entries_json_size_ = 0;

  Stats stats_;
};

}  // namespace devmgr::checkpoint

#endif  // DEVMGR_CHECKPOINT_INCREMENTAL_ENCODER_H_
