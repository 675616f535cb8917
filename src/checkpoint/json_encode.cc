// The device manager's checkpoint encoder: json.Marshal's bytes for the
// checkpoint structs (field order, null for nil slices and maps, sorted map
// keys); strings and the []byte fields' base64 are written as Go writes them
// by go_json_write.cc. The decoder is json_codec.cc.
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checkpoint/json_codec.h"
#include "checkpoint/render.h"

namespace devmgr::checkpoint {
namespace {

// ---------------------------------------------------------------------------
// Encoding.

void AppendStringList(std::string* out, const DeviceList& l) { AppendGoJsonStringList(out, l); }

void AppendBytes(std::string* out, const std::optional<std::string>& b) {
  if (!b) {
    out->append("null");
    return;
  }
  out->push_back('"');
  AppendBase64(out, *b);
  out->push_back('"');
}

void AppendNuma(std::string* out, const DevicesPerNUMA& m) {
  if (!m) {
    out->append("null");
    return;
  }
  // json.Marshal sorts map keys by their string form.
  std::vector<std::pair<std::string, const DeviceList*>> keys;
  keys.reserve(m->size());
  for (const auto& [node, ids] : *m) keys.emplace_back(std::to_string(node), &ids);
  std::sort(keys.begin(), keys.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  out->push_back('{');
  bool first = true;
  for (const auto& [k, ids] : keys) {
    if (!first) out->push_back(',');
    first = false;
    out->push_back('"');
    out->append(k);
    out->append("\":");
    AppendStringList(out, *ids);
  }
  out->push_back('}');
}

template <class Entry>
void AppendEntry(std::string* out, const Entry& e) {
  out->append("{\"PodUID\":");
  AppendGoJsonString(out, e.pod_uid);
  out->append(",\"ContainerName\":");
  AppendGoJsonString(out, e.container_name);
  out->append(",\"ResourceName\":");
  AppendGoJsonString(out, e.resource_name);
  out->append(",\"DeviceIDs\":");
  if constexpr (std::is_same_v<Entry, PodDevicesEntry>) {
    AppendNuma(out, e.device_ids);
  } else {
    AppendStringList(out, e.device_ids);
  }
  out->append(",\"AllocResp\":");
  AppendBytes(out, e.alloc_resp);
  out->push_back('}');
}

template <class Entry>
void AppendEntries(std::string* out, const std::optional<std::vector<Entry>>& entries) {
  if (!entries) {
    out->append("null");
    return;
  }
  out->push_back('[');
  bool first = true;
  for (const Entry& e : *entries) {
    if (!first) out->push_back(',');
    first = false;
    AppendEntry(out, e);
  }
  out->push_back(']');
}

void AppendRegistered(std::string* out, const RegisteredDevices& r) {
  if (!r) {
    out->append("null");
    return;
  }
  out->push_back('{');
  bool first = true;
  for (const auto& [name, ids] : *r) {  // std::map: bytewise order, as Go sorts
    if (!first) out->push_back(',');
    first = false;
    AppendGoJsonString(out, name);
    out->push_back(':');
    AppendStringList(out, ids);
  }
  out->push_back('}');
}

}  // namespace

namespace render {

void AppendJsonEntry(std::string* out, const PodDevicesEntry& e) { AppendEntry(out, e); }

void AppendJsonList(std::string* out, const DeviceList& l) { AppendStringList(out, l); }

}  // namespace render

std::string EncodeJson(const Checkpoint& cp) {
  std::string out;
  out.reserve(4096);
  out.append("{\"Data\":{\"PodDeviceEntries\":");
  if (cp.format == FormatVersion::kV2) {
    AppendEntries(&out, cp.data.pod_device_entries);
    out.append(",\"RegisteredDevices\":");
    AppendRegistered(&out, cp.data.registered_devices);
  } else {
    AppendEntries(&out, cp.data_v1.pod_device_entries);
    out.append(",\"RegisteredDevices\":");
    AppendRegistered(&out, cp.data_v1.registered_devices);
  }
  out.append("},\"Checksum\":");
  out.append(std::to_string(cp.checksum));
  if (cp.format == FormatVersion::kV2 && cp.boot_id) {
    out.append(",\"BootID\":");
    AppendGoJsonString(&out, *cp.boot_id);
  }
  out.push_back('}');
  return out;
}

}  // namespace devmgr::checkpoint
