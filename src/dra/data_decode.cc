// The dra_manager_state file decoded as json.Unmarshal decodes it: the outer
// state.Checkpoint and the state.CheckpointData inside its Data string, over
// the shared Go JSON reader (checkpoint/go_json.h). The decode targets model
// Go's memory so that duplicate keys behave as in Go: a slice decoded twice
// reuses its backing array (stale elements keep the fields the second array
// does not set), a map decoded twice merges, a map value starts from zero.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "checkpoint/go_json.h"
#include "dra/checkpoint.h"

namespace devmgr::dra {
namespace {

using checkpoint::FieldMatches;
using checkpoint::GoJsonKind;
using checkpoint::GoJsonReader;
using checkpoint::GoMap;
using checkpoint::GoSlice;
using checkpoint::GoStrings;
using checkpoint::ToStringList;

// ---------------------------------------------------------------------------
// Go memory model of the decode targets.

struct GoDevice {
  std::string pool_name;
  std::string device_name;
  std::optional<std::string> share_id;
  GoStrings request_names;
  GoStrings cdi_device_ids;
};
struct GoDriverState {
  GoSlice<GoDevice> devices;
  GoStrings skip_node_operations;
};
struct GoClaim {
  std::string claim_uid;
  std::string claim_name;
  std::string namespace_;
  GoMap<std::string, bool> pod_uids;  // the values are sets.Empty
  GoMap<std::string, GoDriverState> driver_state;
};
struct GoData {
  std::string kind;
  std::string api_version;
  GoSlice<GoClaim> list;
};

// Go reflect type names used in error texts.
constexpr char kDataType[] = "state.CheckpointData";
constexpr char kListType[] = "state.ClaimInfoStateList";
constexpr char kClaimType[] = "state.ClaimInfoState";
constexpr char kUidType[] = "types.UID";
constexpr char kPodUidsType[] = "sets.Set[string]";
constexpr char kEmptyType[] = "sets.Empty";
constexpr char kDriverMapType[] = "map[string]state.DriverState";
constexpr char kDriverStateType[] = "state.DriverState";
constexpr char kDevicesType[] = "[]state.Device";
constexpr char kDeviceType[] = "state.Device";
constexpr char kSkipOpsType[] = "[]v1.SkipNodeOperation";
constexpr char kSkipOpType[] = "v1.SkipNodeOperation";

// The decoders of one layout's types.
class DataParser : public GoJsonReader {
 public:
  DataParser(std::string_view in, StateLayout layout) : GoJsonReader(in), layout_(layout) {}

  bool Decode(GoData* d) {
    return Run([&] { return DecodeData(d); });
  }

 private:
  using Scope = GoJsonReader::FieldScope;

  // A string of a named Go string type (types.UID, v1.SkipNodeOperation).
  bool DecodeNamedString(std::string* dst, const char* type) {
    GoJsonKind k = GoJsonKind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == GoJsonKind::kString) return String(dst);
    if (k == GoJsonKind::kNull) return Literal("null");
    return Mismatch(k, type);
  }

  // An object for a struct: null and other kinds handled, then every
  // member passed to member(key).
  template <class F>
  bool DecodeStruct(const char* type, F&& member) {
    GoJsonKind k = GoJsonKind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == GoJsonKind::kNull) return Literal("null");
    if (k != GoJsonKind::kObject) return Mismatch(k, type);
    return Object([&](std::string_view key, const unsigned char*) { return member(key); });
  }

  // A map[string]V: merges into an existing map; each value decoded by
  // value(&fresh_value).
  template <class V, class F>
  bool DecodeMap(GoMap<std::string, V>* dst, const char* type, F&& value) {
    GoJsonKind k = GoJsonKind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == GoJsonKind::kNull) {
      *dst = GoMap<std::string, V>{};
      return Literal("null");
    }
    if (k != GoJsonKind::kObject) return Mismatch(k, type);
    dst->nil = false;
    return Object([&](std::string_view key, const unsigned char*) {
      std::string key_copy(key);
      V v{};
      if (!value(&v)) return false;
      dst->m.insert_or_assign(std::move(key_copy), std::move(v));
      return true;
    });
  }

  bool DecodeDevice(GoDevice* d) {
    return DecodeStruct(kDeviceType, [&](std::string_view key) {
      if (FieldMatches(key, "PoolName")) {
        Scope s(this, "Device", "PoolName");
        return DecodeString(&d->pool_name);
      }
      if (FieldMatches(key, "DeviceName")) {
        Scope s(this, "Device", "DeviceName");
        return DecodeString(&d->device_name);
      }
      if (layout_ != StateLayout::k134 && FieldMatches(key, "ShareID")) {
        Scope s(this, "Device", "ShareID");
        return DecodeShareId(&d->share_id);
      }
      if (FieldMatches(key, "RequestNames")) {
        Scope s(this, "Device", "RequestNames");
        return DecodeStrings(&d->request_names, "[]string");
      }
      if (FieldMatches(key, "CDIDeviceIDs")) {
        Scope s(this, "Device", "CDIDeviceIDs");
        return DecodeStrings(&d->cdi_device_ids, "[]string");
      }
      return Skip();
    });
  }

  // *types.UID: null sets nil, a string allocates (or reuses) the value.
  bool DecodeShareId(std::optional<std::string>* dst) {
    GoJsonKind k = GoJsonKind::kNull;  // set by Peek
    if (!Peek(&k)) return false;
    if (k == GoJsonKind::kNull) {
      dst->reset();
      return Literal("null");
    }
    if (!dst->has_value()) dst->emplace();
    return DecodeNamedString(&**dst, kUidType);
  }

  bool DecodeDriverState(GoDriverState* st) {
    return DecodeStruct(kDriverStateType, [&](std::string_view key) {
      if (FieldMatches(key, "Devices")) {
        Scope s(this, "DriverState", "Devices");
        return DecodeSlice(&st->devices, kDevicesType,
                           [&](GoDevice* d) { return DecodeDevice(d); });
      }
      if (layout_ == StateLayout::k137 && FieldMatches(key, "skipNodeOperations")) {
        Scope s(this, "DriverState", "skipNodeOperations");
        return DecodeSlice(&st->skip_node_operations, kSkipOpsType,
                           [&](std::string* op) { return DecodeNamedString(op, kSkipOpType); });
      }
      return Skip();
    });
  }

  // sets.Empty is struct{}: any object (members ignored) or null.
  bool DecodeEmpty(bool*) {
    return DecodeStruct(kEmptyType, [&](std::string_view) { return Skip(); });
  }

  bool DecodeClaim(GoClaim* c) {
    return DecodeStruct(kClaimType, [&](std::string_view key) {
      if (FieldMatches(key, "ClaimUID")) {
        Scope s(this, "ClaimInfoState", "ClaimUID");
        return DecodeNamedString(&c->claim_uid, kUidType);
      }
      if (FieldMatches(key, "ClaimName")) {
        Scope s(this, "ClaimInfoState", "ClaimName");
        return DecodeString(&c->claim_name);
      }
      if (FieldMatches(key, "Namespace")) {
        Scope s(this, "ClaimInfoState", "Namespace");
        return DecodeString(&c->namespace_);
      }
      if (FieldMatches(key, "PodUIDs")) {
        Scope s(this, "ClaimInfoState", "PodUIDs");
        return DecodeMap(&c->pod_uids, kPodUidsType, [&](bool* v) { return DecodeEmpty(v); });
      }
      if (FieldMatches(key, "DriverState")) {
        Scope s(this, "ClaimInfoState", "DriverState");
        return DecodeMap(&c->driver_state, kDriverMapType,
                         [&](GoDriverState* v) { return DecodeDriverState(v); });
      }
      return Skip();
    });
  }

  bool DecodeData(GoData* d) {
    return DecodeStruct(kDataType, [&](std::string_view key) {
      // TypeMeta's fields are promoted, under their JSON names; Go 1.24+
      // (every kubelet 1.34+) names the embedded struct in the error path.
      if (FieldMatches(key, "kind")) {
        Scope embedded(this, "CheckpointData", "TypeMeta");
        Scope s(this, "CheckpointData", "kind");
        return DecodeString(&d->kind);
      }
      if (FieldMatches(key, "apiVersion")) {
        Scope embedded(this, "CheckpointData", "TypeMeta");
        Scope s(this, "CheckpointData", "apiVersion");
        return DecodeString(&d->api_version);
      }
      if (FieldMatches(key, "ClaimInfoStateList")) {
        Scope s(this, "CheckpointData", "ClaimInfoStateList");
        return DecodeSlice(&d->list, kListType, [&](GoClaim* c) { return DecodeClaim(c); });
      }
      return Skip();
    });
  }

  const StateLayout layout_;
};

// ---------------------------------------------------------------------------
// Go model -> public types.

template <class T, class U, class F>
std::optional<std::vector<U>> ToVector(GoSlice<T>&& s, F&& convert) {
  if (s.nil) return std::nullopt;
  std::vector<U> out;
  out.reserve(s.len);
  for (size_t i = 0; i < s.len; ++i) out.push_back(convert(std::move(s.buf[i])));
  return out;
}

Device ToDevice(GoDevice&& g) {
  Device d;
  d.pool_name = std::move(g.pool_name);
  d.device_name = std::move(g.device_name);
  d.share_id = std::move(g.share_id);
  d.request_names = ToStringList(std::move(g.request_names));
  d.cdi_device_ids = ToStringList(std::move(g.cdi_device_ids));
  return d;
}

DriverState ToDriverState(GoDriverState&& g) {
  DriverState s;
  s.devices = ToVector<GoDevice, Device>(std::move(g.devices), ToDevice);
  s.skip_node_operations = ToStringList(std::move(g.skip_node_operations));
  return s;
}

ClaimInfoState ToClaim(GoClaim&& g) {
  ClaimInfoState c;
  c.claim_uid = std::move(g.claim_uid);
  c.claim_name = std::move(g.claim_name);
  c.namespace_ = std::move(g.namespace_);
  if (!g.pod_uids.nil) {
    c.pod_uids.emplace();
    for (auto& [uid, unused] : g.pod_uids.m) c.pod_uids->insert(uid);
  }
  if (!g.driver_state.nil) {
    c.driver_state.emplace();
    for (auto& [driver, st] : g.driver_state.m) {
      c.driver_state->emplace(driver, ToDriverState(std::move(st)));
    }
  }
  return c;
}

// The outer state.Checkpoint.
class FileParser : public GoJsonReader {
 public:
  explicit FileParser(std::string_view in) : GoJsonReader(in) {}

  bool Decode(Checkpoint* cp) {
    return Run([&] {
      GoJsonKind k = GoJsonKind::kNull;  // set by Peek
      if (!Peek(&k)) return false;
      if (k == GoJsonKind::kNull) return Literal("null");
      if (k != GoJsonKind::kObject) return Mismatch(k, "state.Checkpoint");
      return Object([&](std::string_view key, const unsigned char*) {
        if (FieldMatches(key, "Data")) {
          FieldScope s(this, "Checkpoint", "Data");
          return DecodeString(&cp->data);
        }
        if (FieldMatches(key, "Checksum")) {
          FieldScope s(this, "Checkpoint", "Checksum");
          uint64_t v = cp->checksum;
          if (!DecodeUint(&v, UINT32_MAX, "uint32")) return false;
          cp->checksum = static_cast<uint32_t>(v);
          return true;
        }
        return Skip();
      });
    });
  }
};

// Scans the top-level object for the kind of its last "Data" member.
class ShapeParser : public GoJsonReader {
 public:
  explicit ShapeParser(std::string_view in) : GoJsonReader(in) {}

  bool DataIsString() {
    bool is_string = false;
    const bool ok = Run([&] {
      GoJsonKind k = GoJsonKind::kNull;  // set by Peek
      if (!Peek(&k)) return false;
      if (k != GoJsonKind::kObject) return SkipKind(k);
      return Object([&](std::string_view key, const unsigned char*) {
        if (!FieldMatches(key, "Data")) return Skip();
        GoJsonKind vk = GoJsonKind::kNull;  // set by Peek
        if (!Peek(&vk)) return false;
        is_string = vk == GoJsonKind::kString;
        return SkipKind(vk);
      });
    });
    return ok && is_string;
  }
};

}  // namespace

absl::StatusOr<CheckpointData> DecodeData(std::string_view data, StateLayout layout) {
  GoData g;
  DataParser parser(data, layout);
  if (!parser.Decode(&g)) return parser.error();
  CheckpointData out;
  out.kind = std::move(g.kind);
  out.api_version = std::move(g.api_version);
  out.claim_info_state_list = ToVector<GoClaim, ClaimInfoState>(std::move(g.list), ToClaim);
  return out;
}

absl::StatusOr<Checkpoint> DecodeFile(std::string_view bytes) {
  // GetOrCreate decodes into NewCheckpoint(nil), whose Data does not depend
  // on the layout (an empty list is null in every release).
  Checkpoint cp = NewCheckpoint(std::nullopt, StateLayout::k137);
  FileParser parser(bytes);
  if (!parser.Decode(&cp)) return parser.error();
  return cp;
}

bool LooksLikeDraCheckpoint(std::string_view bytes) { return ShapeParser(bytes).DataIsString(); }

}  // namespace devmgr::dra
