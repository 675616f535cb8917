// IncrementalEncoder against the from-scratch encoder (Encode, SpewV2,
// ComputeChecksum): the golden files, many random mutation sequences, and
// the amount of re-rendering a change costs.
#include "checkpoint/incremental_encoder.h"

#include <map>
#include <random>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_testutil.h"
#include "common/status_testutil.h"
#include "gtest/gtest.h"

namespace devmgr::checkpoint {
namespace {

using testing::ManifestRow;
using testing::ReadFileOrDie;
using testing::ReadManifest;
using testing::TestDataDir;

// Feeds `data` to `enc` (entries and the whole registered map) and checks
// the three outputs against the from-scratch ones.
void ExpectSameAsScratch(IncrementalEncoder& enc, const CheckpointData& data,
                         const std::string& where) {
  const Checkpoint scratch = MakeV2(data);
  const IncrementalEncoder::Output out = enc.Render();
  EXPECT_EQ(out.checksum, scratch.checksum) << where;
  EXPECT_EQ(std::string(out.bytes), Encode(scratch)) << where;
  EXPECT_EQ(enc.SpewForTest(), SpewV2(data)) << where;
}

TEST(IncrementalEncoderGolden, EveryValidV2FileRendersByteForByte) {
  int checked = 0;
  for (const ManifestRow& row : ReadManifest()) {
    if (row.verdict != "OK" || row.format != "v2") continue;
    const std::string bytes = ReadFileOrDie(TestDataDir() + "/" + row.file);
    auto cp = DecodeV2(bytes);
    ASSERT_OK(cp) << row.file << ": " << cp.status();
    IncrementalEncoder enc;
    enc.SetEntries(cp->data.pod_device_entries);
    enc.SetRegisteredDevices(cp->data.registered_devices);
    const IncrementalEncoder::Output out = enc.Render();
    EXPECT_EQ(std::to_string(out.checksum), row.correct) << row.file;
    EXPECT_EQ(enc.SpewForTest(), ReadFileOrDie(TestDataDir() + "/" + row.spew)) << row.file;
    // Files json.Marshal wrote (not the hand-made reader-quirk ones) come
    // back byte for byte; the encoder never writes BootID.
    const bool marshalled = row.file.rfind("v2-reader-", 0) != 0 && !cp->boot_id.has_value();
    if (marshalled) {
      EXPECT_EQ(std::string(out.bytes), bytes) << row.file;
    }
    ExpectSameAsScratch(enc, cp->data, row.file);
    ++checked;
  }
  EXPECT_GE(checked, 40);
}

// Random checkpoint content with the awkward cases the renderings must get
// right: nil vs empty everywhere, JSON escapes, HTML characters, invalid
// UTF-8, U+2028, NUL bytes, negative and large NUMA ids.
class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}

  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(int percent) { return Int(1, 100) <= percent; }

  std::string Str() {
    static const char* const kPieces[] = {"gpu",
                                          "-",
                                          "0",
                                          "7f1e",
                                          "a b",
                                          "\"",
                                          "\\",
                                          "<",
                                          ">",
                                          "&",
                                          "\x01",
                                          "\n",
                                          "\t",
                                          "é",
                                          "\xE2\x80\xA8",
                                          "\xFF",
                                          "\xC3",
                                          "" /* NUL, see below */,
                                          "PodDevicesEntryV1",
                                          "/"};
    std::string s;
    const int n = Int(0, 4);
    for (int i = 0; i < n; ++i) {
      const int k = Int(0, 19);
      if (k == 17) {
        s.push_back('\0');
      } else {
        s += kPieces[k];
      }
    }
    return s;
  }

  DeviceList List() {
    if (Chance(10)) return std::nullopt;
    std::vector<std::string> ids;
    const int n = Int(0, 6);
    for (int i = 0; i < n; ++i)
      ids.push_back(Chance(70) ? "dev-" + std::to_string(Int(0, 50)) : Str());
    return ids;
  }

  PodDevicesEntry Entry() {
    PodDevicesEntry e;
    e.pod_uid = Chance(80) ? "pod-" + std::to_string(Int(0, 30)) : Str();
    e.container_name = Chance(80) ? "c" + std::to_string(Int(0, 3)) : Str();
    e.resource_name = Chance(80) ? "vendor.com/r" + std::to_string(Int(0, 3)) : Str();
    MutateEntry(&e);
    return e;
  }

  void MutateEntry(PodDevicesEntry* e) {
    if (Chance(10)) {
      e->device_ids.reset();
    } else {
      auto& m = e->device_ids.emplace();
      static const int64_t kNodes[] = {
          -1, 0, 1, 2, 10, -9223372036854775807LL - 1, 9223372036854775807LL};
      const int n = Int(0, 3);
      for (int i = 0; i < n; ++i) m[kNodes[Int(0, 6)]] = List();
    }
    if (Chance(10)) {
      e->alloc_resp.reset();
    } else {
      std::string b;
      const int n = Chance(20) ? 0 : Int(1, 200);
      for (int i = 0; i < n; ++i) b.push_back(static_cast<char>(Int(0, 255)));
      e->alloc_resp = b;
    }
  }

 private:
  std::mt19937 rng_;
};

// One random change of `data`, as the manager's writes see them:
// allocations, GC, ListAndWatch updates, resources appearing and expiring,
// and the nil/empty transitions.
void Mutate(Gen& g, CheckpointData* data) {
  auto& entries = data->pod_device_entries;
  auto& reg = data->registered_devices;
  switch (g.Int(0, 9)) {
    case 0:
    case 1:  // an allocation: an entry inserted somewhere
      if (!entries) entries.emplace();
      entries->insert(entries->begin() + g.Int(0, static_cast<int>(entries->size())), g.Entry());
      break;
    case 2:  // GC: an entry removed
      if (entries && !entries->empty()) {
        entries->erase(entries->begin() + g.Int(0, static_cast<int>(entries->size()) - 1));
      }
      break;
    case 3:  // an entry's content changed in place
      if (entries && !entries->empty()) {
        g.MutateEntry(&(*entries)[g.Int(0, static_cast<int>(entries->size()) - 1)]);
      }
      break;
    case 4:  // two entries swapped (a different order of the same entries)
      if (entries && entries->size() >= 2) {
        std::swap((*entries)[g.Int(0, static_cast<int>(entries->size()) - 1)],
                  (*entries)[g.Int(0, static_cast<int>(entries->size()) - 1)]);
      }
      break;
    case 5:  // entries nil <-> empty
      if (!entries) {
        entries.emplace();
      } else if (entries->empty() || g.Chance(20)) {
        entries.reset();
      }
      break;
    case 6:
    case 7:  // a ListAndWatch update of one resource
      if (!reg) reg.emplace();
      (*reg)["vendor.com/r" + std::to_string(g.Int(0, 3))] = g.List();
      break;
    case 8:  // a resource expires, or one with an odd name appears
      if (reg && !reg->empty() && g.Chance(50)) {
        auto it = reg->begin();
        std::advance(it, g.Int(0, static_cast<int>(reg->size()) - 1));
        reg->erase(it);
      } else {
        if (!reg) reg.emplace();
        (*reg)[g.Str()] = g.List();
      }
      break;
    case 9:  // registered nil <-> empty
      if (!reg) {
        reg.emplace();
      } else if (reg->empty() || g.Chance(20)) {
        reg.reset();
      }
      break;
  }
}

TEST(IncrementalEncoderRandom, MatchesFromScratchAcrossManyMutations) {
  int steps = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    Gen g(seed);
    CheckpointData data;
    IncrementalEncoder enc;
    for (int step = 0; step < 60; ++step) {
      Mutate(g, &data);
      // Several mutations may happen between two writes.
      if (g.Chance(30)) Mutate(g, &data);
      enc.SetEntries(data.pod_device_entries);
      enc.SetRegisteredDevices(data.registered_devices);
      ExpectSameAsScratch(enc, data,
                          "seed " + std::to_string(seed) + " step " + std::to_string(step));
      if (HasFailure()) return;
      ++steps;
    }
  }
  EXPECT_EQ(steps, 40 * 60);
}

// The manager's path: every registered list comes with a version that the
// caller changes when the list changes (and sometimes when it does not),
// and the list itself only when the encoder's copy is stale.
TEST(IncrementalEncoderRandom, VersionedRegisteredListsMatchFromScratch) {
  int passed_lists = 0;
  int kept_lists = 0;
  for (uint32_t seed = 100; seed <= 130; ++seed) {
    Gen g(seed);
    CheckpointData data;
    std::map<std::string, std::pair<uint64_t, DeviceList>> given;  // name -> version, list
    uint64_t next_version = 1;
    IncrementalEncoder enc;
    for (int step = 0; step < 50; ++step) {
      Mutate(g, &data);
      if (!data.registered_devices) data.registered_devices.emplace();  // never nil in the manager
      std::vector<IncrementalEncoder::Resource> rs;
      for (const auto& [name, ids] : *data.registered_devices) {
        auto it = given.find(name);
        if (it == given.end() || it->second.second != ids || g.Chance(20)) {
          given[name] = {next_version++, ids};
        }
        IncrementalEncoder::Resource r;
        r.name = name;
        r.version = given[name].first;
        if (enc.NeedsIds(name, r.version)) {
          r.ids = ids;
          ++passed_lists;
        } else {
          ++kept_lists;
        }
        rs.push_back(std::move(r));
      }
      enc.SetEntries(data.pod_device_entries);
      enc.SetRegistered(false, std::move(rs));
      ExpectSameAsScratch(enc, data,
                          "seed " + std::to_string(seed) + " step " + std::to_string(step));
      if (HasFailure()) return;
    }
  }
  // Both paths were exercised.
  EXPECT_GT(passed_lists, 100);
  EXPECT_GT(kept_lists, 100);
}

// The manager's path for entries (SetEntryRefs): every entry comes with a
// version that changes when its data change (and sometimes when they do
// not, or is 0), and is handed over by reference.
TEST(IncrementalEncoderRandom, VersionedEntryRefsMatchFromScratch) {
  int reused_by_version = 0;   // entries given with the version they had before
  size_t kept_by_version = 0;  // entries the encoder kept by their version
  for (uint32_t seed = 200; seed <= 240; ++seed) {
    Gen g(seed);
    CheckpointData data;
    // An entry's whole spew text (key and data) -> its version.
    std::map<std::string, uint64_t> versions;
    uint64_t next_version = 1;
    IncrementalEncoder enc;
    for (int step = 0; step < 60; ++step) {
      Mutate(g, &data);
      if (g.Chance(30)) Mutate(g, &data);
      std::vector<IncrementalEncoder::EntryRef> refs;
      std::map<std::string, uint64_t> now;
      if (data.pod_device_entries) {
        for (const PodDevicesEntry& e : *data.pod_device_entries) {
          const std::string id = SpewV2({{{e}}, {}});
          auto it = versions.find(id);
          uint64_t v = it == versions.end() || g.Chance(10) ? next_version++ : it->second;
          if (g.Chance(5)) v = 0;
          if (v != 0 && it != versions.end() && v == it->second) ++reused_by_version;
          if (v != 0) now[id] = v;
          refs.push_back({e.pod_uid, e.container_name, e.resource_name, v, &e.device_ids,
                          e.alloc_resp ? &*e.alloc_resp : nullptr});
        }
      }
      versions = std::move(now);
      const size_t kept_before = enc.stats().entries_kept_by_version;
      enc.SetEntryRefs(!data.pod_device_entries.has_value(), refs);
      kept_by_version += enc.stats().entries_kept_by_version - kept_before;
      enc.SetRegisteredDevices(data.registered_devices);
      ExpectSameAsScratch(enc, data,
                          "seed " + std::to_string(seed) + " step " + std::to_string(step));
      if (HasFailure()) return;
    }
  }
  EXPECT_GT(reused_by_version, 1000);
  EXPECT_GT(kept_by_version, 1000u);
}

PodDevicesEntry Alloc(const std::string& pod, const std::string& dev) {
  PodDevicesEntry e;
  e.pod_uid = pod;
  e.container_name = "main";
  e.resource_name = "vendor.com/gpu";
  e.device_ids.emplace()[-1] = std::vector<std::string>{dev};
  e.alloc_resp = std::string("\x0a\x03\x41\x42\x43", 5);
  return e;
}

TEST(IncrementalEncoderWork, AnAllocationRendersOneEntryAndNoRegisteredIds) {
  std::vector<std::string> ids;
  for (int i = 0; i < 10000; ++i) ids.push_back("dev-" + std::to_string(i));
  CheckpointData data;
  data.registered_devices.emplace()["vendor.com/gpu"] = ids;
  IncrementalEncoder enc;
  enc.SetEntries(std::nullopt);
  enc.SetRegistered(false, {{"vendor.com/gpu", 1, DeviceList(ids)}});
  enc.Render();
  EXPECT_EQ(enc.stats().registered_ids_rendered, 10000u);

  data.pod_device_entries.emplace();
  for (int i = 0; i < 50; ++i)
    data.pod_device_entries->push_back(Alloc("pod-" + std::to_string(100 + i), ids[i]));
  EXPECT_FALSE(enc.NeedsIds("vendor.com/gpu", 1));
  enc.SetEntries(data.pod_device_entries);
  enc.SetRegistered(false, {{"vendor.com/gpu", 1, std::nullopt}});
  ExpectSameAsScratch(enc, data, "50 entries");
  const IncrementalEncoder::Stats before = enc.stats();

  // One more pod, sorted in the middle (pod-125a): one entry rendered, the
  // spew states of the 26 entries before it reused, no device ID rendered.
  auto& entries = *data.pod_device_entries;
  entries.insert(entries.begin() + 26, Alloc("pod-125a", ids[60]));
  enc.SetEntries(data.pod_device_entries);
  enc.SetRegistered(false, {{"vendor.com/gpu", 1, std::nullopt}});
  ExpectSameAsScratch(enc, data, "51 entries");
  const IncrementalEncoder::Stats after = enc.stats();
  EXPECT_EQ(after.entries_rendered - before.entries_rendered, 1u);
  EXPECT_EQ(after.lists_rendered, before.lists_rendered);
  EXPECT_EQ(after.registered_ids_rendered, before.registered_ids_rendered);
  // Hashed: the 25 entries from the new one on, and the registered part.
  size_t entry_spew = 0;
  for (size_t i = 26; i < entries.size(); ++i) entry_spew += SpewV2({{{entries[i]}}, {}}).size();
  const size_t hashed = after.spew_bytes_hashed - before.spew_bytes_hashed;
  EXPECT_LT(hashed, entry_spew + SpewV2({std::nullopt, data.registered_devices}).size());
  EXPECT_GT(hashed, SpewV2({std::nullopt, data.registered_devices}).size() / 2);
}

// Through references: an allocation among 50 entries renders that one entry
// and copies no other (the refs are gone before Render).
TEST(IncrementalEncoderWork, AnAllocationByReferenceRendersOneEntry) {
  std::vector<PodDevicesEntry> entries;
  for (int i = 0; i < 50; ++i) entries.push_back(Alloc("pod-" + std::to_string(100 + i), "d"));
  std::vector<uint64_t> versions;
  for (int i = 0; i < 50; ++i) versions.push_back(static_cast<uint64_t>(i + 1));
  IncrementalEncoder enc;
  auto give = [&] {
    // A copy that dies before Render: the encoder must not keep pointers.
    const std::vector<PodDevicesEntry> copy = entries;
    std::vector<IncrementalEncoder::EntryRef> refs;
    for (size_t i = 0; i < copy.size(); ++i) {
      refs.push_back({copy[i].pod_uid, copy[i].container_name, copy[i].resource_name, versions[i],
                      &copy[i].device_ids, &*copy[i].alloc_resp});
    }
    enc.SetEntryRefs(false, refs);
    enc.SetRegistered(false, {});
  };
  give();
  CheckpointData data{entries, RegisteredDevices(std::in_place)};
  ExpectSameAsScratch(enc, data, "50 entries");
  const IncrementalEncoder::Stats before = enc.stats();
  entries.insert(entries.begin() + 26, Alloc("pod-125a", "e"));
  versions.insert(versions.begin() + 26, 99);
  give();
  data.pod_device_entries = entries;
  ExpectSameAsScratch(enc, data, "51 entries");
  EXPECT_EQ(enc.stats().entries_rendered - before.entries_rendered, 1u);
  // The 50 others were kept by their versions, none compared field by field.
  EXPECT_EQ(enc.stats().entries_kept_by_version - before.entries_kept_by_version, 50u);
  EXPECT_EQ(enc.stats().entries_compared, before.entries_compared);
}

TEST(IncrementalEncoderWork, AnUnchangedWriteRendersNothing) {
  CheckpointData data;
  data.pod_device_entries.emplace().push_back(Alloc("p", "d"));
  data.registered_devices.emplace()["vendor.com/gpu"] = std::vector<std::string>{"d", "e"};
  IncrementalEncoder enc;
  enc.SetEntries(data.pod_device_entries);
  enc.SetRegisteredDevices(data.registered_devices);
  const std::string first(enc.Render().bytes);
  const IncrementalEncoder::Stats before = enc.stats();
  enc.SetEntries(data.pod_device_entries);
  enc.SetRegisteredDevices(data.registered_devices);
  EXPECT_EQ(std::string(enc.Render().bytes), first);
  EXPECT_EQ(enc.stats().entries_rendered, before.entries_rendered);
  EXPECT_EQ(enc.stats().lists_rendered, before.lists_rendered);
}

}  // namespace
}  // namespace devmgr::checkpoint
