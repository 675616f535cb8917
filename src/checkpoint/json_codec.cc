// The device manager's checkpoint (kubelet_internal_checkpoint) decoded as
// json.Unmarshal decodes it into the kubelet's Data or DataV1 struct: the
// format's Decode* functions over the shared Go JSON reader (go_json.h).
// The encoder is json_encode.cc.
#include "checkpoint/json_codec.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "checkpoint/go_json.h"
#include "fmt/format.h"

namespace devmgr::checkpoint {
namespace {

// ---------------------------------------------------------------------------
// Go memory model of the decode targets.

// Map values are decoded into a fresh (zeroed) value each time in Go, so no
// stale backing array survives in them: store them in the public form.
using GoNuma = GoMap<int64_t, DeviceList>;
using GoRegistered = GoMap<std::string, DeviceList>;

template <class Dev>
struct GoEntry {
  std::string pod_uid;
  std::string container_name;
  std::string resource_name;
  Dev device_ids;
  GoBytes alloc_resp;
};
template <class Dev>
struct GoData {
  GoSlice<GoEntry<Dev>> entries;
  GoRegistered registered;
};
template <class Dev>
struct GoTop {
  GoData<Dev> data;
  uint64_t checksum = 0;
  std::optional<std::string> boot_id;
};

// Go reflect type names used in error texts, per format.
struct TypeNames {
  const char* top;  // Go value of type ...
  const char* data_type;
  const char* data_struct;
  const char* entries_type;
  const char* entry_type;
  const char* entry_struct;
  const char* device_ids_type;
};
constexpr TypeNames kNamesV2 = {"checkpoint.Data",
                                "checkpoint.checkpointData",
                                "checkpointData",
                                "[]checkpoint.PodDevicesEntry",
                                "checkpoint.PodDevicesEntry",
                                "PodDevicesEntry",
                                "checkpoint.DevicesPerNUMA"};
constexpr TypeNames kNamesV1 = {"checkpoint.DataV1",
                                "checkpoint.checkpointDataV1",
                                "checkpointDataV1",
                                "[]checkpoint.PodDevicesEntryV1",
                                "checkpoint.PodDevicesEntryV1",
                                "PodDevicesEntryV1",
                                "[]string"};
// The kubelet's Data.Checksum is of type checksum.Checksum (a uint64).
constexpr char kChecksumType[] = "checksum.Checksum";

DeviceList ToList(GoStrings&& s) { return ToStringList(std::move(s)); }

// ---------------------------------------------------------------------------
// The parser: the device-manager types over the Go JSON reader.

class Parser : public GoJsonReader {
 public:
  Parser(std::string_view in, const TypeNames& names) : GoJsonReader(in), names_(names) {}

  // Decodes the whole input into `top`; false on any error (see error()).
  template <class Dev>
  bool Run(GoTop<Dev>* top) {
    return GoJsonReader::Run([&] { return DecodeTop(top); });
  }

 private:
  bool DecodeUint64(uint64_t* dst, const char* type) { return DecodeUint(dst, UINT64_MAX, type); }

  bool DecodeNuma(GoNuma* dst) {
    GoJsonKind k = GoJsonKind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == GoJsonKind::kNull) {
      *dst = GoNuma{};
      return Literal("null");
    }
    if (k != GoJsonKind::kObject) return Mismatch(k, names_.device_ids_type);
    dst->nil = false;
    return Object([&](std::string_view key, const unsigned char* key_at) {
      std::string key_copy(key);
      GoStrings value;
      if (!DecodeStrings(&value, "[]string")) return false;
      int64_t node;
      if (ParseInt64(key_copy, &node)) {
        dst->m[node] = ToList(std::move(value));
      } else {
        TypeError(fmt::format("number {}", key_copy), "int64", key_at);
      }
      return true;
    });
  }

  bool DecodeRegistered(GoRegistered* dst) {
    GoJsonKind k = GoJsonKind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == GoJsonKind::kNull) {
      *dst = GoRegistered{};
      return Literal("null");
    }
    if (k != GoJsonKind::kObject) return Mismatch(k, "map[string][]string");
    dst->nil = false;
    return Object([&](std::string_view key, const unsigned char*) {
      std::string key_copy(key);
      GoStrings value;
      if (!DecodeStrings(&value, "[]string")) return false;
      dst->m.insert_or_assign(std::move(key_copy), ToList(std::move(value)));
      return true;
    });
  }

  bool DecodeDeviceIds(GoNuma* dst) { return DecodeNuma(dst); }
  bool DecodeDeviceIds(GoStrings* dst) { return DecodeStrings(dst, "[]string"); }

  template <class Dev>
  bool DecodeEntry(GoEntry<Dev>* e) {
    GoJsonKind k = GoJsonKind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == GoJsonKind::kNull) return Literal("null");
    if (k != GoJsonKind::kObject) return Mismatch(k, names_.entry_type);
    const char* st = names_.entry_struct;
    return Object([&](std::string_view key, const unsigned char*) {
      if (FieldMatches(key, "PodUID")) {
        FieldScope s(this, st, "PodUID");
        return DecodeString(&e->pod_uid);
      }
      if (FieldMatches(key, "ContainerName")) {
        FieldScope s(this, st, "ContainerName");
        return DecodeString(&e->container_name);
      }
      if (FieldMatches(key, "ResourceName")) {
        FieldScope s(this, st, "ResourceName");
        return DecodeString(&e->resource_name);
      }
      if (FieldMatches(key, "DeviceIDs")) {
        FieldScope s(this, st, "DeviceIDs");
        return DecodeDeviceIds(&e->device_ids);
      }
      if (FieldMatches(key, "AllocResp")) {
        FieldScope s(this, st, "AllocResp");
        return DecodeBytes(&e->alloc_resp);
      }
      return Skip();
    });
  }

  template <class Dev>
  bool DecodeEntries(GoSlice<GoEntry<Dev>>* dst) {
    return DecodeSlice(dst, names_.entries_type,
                       [this](GoEntry<Dev>* e) { return DecodeEntry(e); });
  }

  template <class Dev>
  bool DecodeData(GoData<Dev>* d) {
    GoJsonKind k = GoJsonKind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == GoJsonKind::kNull) return Literal("null");
    if (k != GoJsonKind::kObject) return Mismatch(k, names_.data_type);
    const char* st = names_.data_struct;
    return Object([&](std::string_view key, const unsigned char*) {
      if (FieldMatches(key, "PodDeviceEntries")) {
        FieldScope s(this, st, "PodDeviceEntries");
        return DecodeEntries(&d->entries);
      }
      if (FieldMatches(key, "RegisteredDevices")) {
        FieldScope s(this, st, "RegisteredDevices");
        return DecodeRegistered(&d->registered);
      }
      return Skip();
    });
  }

  template <class Dev>
  bool DecodeTop(GoTop<Dev>* top) {
    GoJsonKind k = GoJsonKind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == GoJsonKind::kNull) return Literal("null");
    if (k != GoJsonKind::kObject) return Mismatch(k, names_.top);
    const bool v2 = std::is_same_v<Dev, GoNuma>;
    const char* st = v2 ? "Data" : "DataV1";
    return Object([&](std::string_view key, const unsigned char*) {
      if (FieldMatches(key, "Data")) {
        FieldScope s(this, st, "Data");
        return DecodeData(&top->data);
      }
      if (FieldMatches(key, "Checksum")) {
        FieldScope s(this, st, "Checksum");
        return DecodeUint64(&top->checksum, kChecksumType);
      }
      if (v2 && FieldMatches(key, "BootID")) {
        FieldScope s(this, st, "BootID");
        GoJsonKind bk;
        if (!Peek(&bk)) return false;
        if (bk == GoJsonKind::kString) {
          std::string id;
          if (!String(&id)) return false;
          top->boot_id = std::move(id);
          return true;
        }
        if (bk == GoJsonKind::kNull) return Literal("null");
        return Mismatch(bk, "string");
      }
      return Skip();
    });
  }

  const TypeNames& names_;
};

// ---------------------------------------------------------------------------
// Go model -> public types.

std::optional<std::string> ToBytes(GoBytes&& b) {
  if (b.nil) return std::nullopt;
  b.buf.resize(b.len);
  return std::move(b.buf);
}

RegisteredDevices ToRegistered(GoRegistered&& r) {
  if (r.nil) return std::nullopt;
  return std::move(r.m);
}

DevicesPerNUMA ToDevices(GoNuma&& n) {
  if (n.nil) return std::nullopt;
  return std::move(n.m);
}
DeviceList ToDevices(GoStrings&& s) { return ToList(std::move(s)); }

template <class Entry, class Dev>
std::optional<std::vector<Entry>> ToEntries(GoSlice<GoEntry<Dev>>&& s) {
  if (s.nil) return std::nullopt;
  std::vector<Entry> out;
  out.reserve(s.len);
  for (size_t i = 0; i < s.len; ++i) {
    GoEntry<Dev>& g = s.buf[i];
    Entry e;
    e.pod_uid = std::move(g.pod_uid);
    e.container_name = std::move(g.container_name);
    e.resource_name = std::move(g.resource_name);
    e.device_ids = ToDevices(std::move(g.device_ids));
    e.alloc_resp = ToBytes(std::move(g.alloc_resp));
    out.push_back(std::move(e));
  }
  return out;
}

template <class Dev>
absl::Status DecodeInto(std::string_view bytes, const TypeNames& names, GoTop<Dev>* top) {
  // The kubelet decodes into a pre-initialised empty list and map.
  top->data.entries.nil = false;
  top->data.registered.nil = false;
  Parser parser(bytes, names);
  if (!parser.Run(top)) return parser.error();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Checkpoint> DecodeJson(std::string_view bytes, FormatVersion format) {
  Checkpoint cp;
  cp.format = format;
  if (format == FormatVersion::kV2) {
    GoTop<GoNuma> top;
    absl::Status s = DecodeInto(bytes, kNamesV2, &top);
    if (!s.ok()) return s;
    cp.data.pod_device_entries = ToEntries<PodDevicesEntry>(std::move(top.data.entries));
    cp.data.registered_devices = ToRegistered(std::move(top.data.registered));
    cp.checksum = top.checksum;
    cp.boot_id = std::move(top.boot_id);
  } else {
    GoTop<GoStrings> top;
    absl::Status s = DecodeInto(bytes, kNamesV1, &top);
    if (!s.ok()) return s;
    cp.data_v1.pod_device_entries = ToEntries<PodDevicesEntryV1>(std::move(top.data.entries));
    cp.data_v1.registered_devices = ToRegistered(std::move(top.data.registered));
    cp.checksum = top.checksum;
  }
  return cp;
}

}  // namespace devmgr::checkpoint
