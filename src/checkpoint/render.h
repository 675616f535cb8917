// The pieces of a V2 checkpoint's two renderings — the json.Marshal bytes
// and the go-spew text that the checksum covers — one entry or one
// registered-device list at a time, for IncrementalEncoder. Whole-checkpoint
// rendering (Encode, SpewV2) is built from the same code, so the pieces are
// byte-identical to it by construction. Grammar: docs/checkpoint_format.md.
#ifndef DEVMGR_CHECKPOINT_RENDER_H_
#define DEVMGR_CHECKPOINT_RENDER_H_

#include <string>
#include <string_view>

#include "checkpoint/checkpoint.h"

namespace devmgr::checkpoint::render {

// ---- go-spew text (V2) ----
// S = kSpewHead E kSpewRegistered R "}" where
//   E = "<nil>" | "[" entry (" " entry)* "]" | "[]"
//   R = "<nil>" | "map[" name ":" list (" " name ":" list)* "]"
inline constexpr std::string_view kSpewHead =
    "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)";
inline constexpr std::string_view kSpewRegistered = " RegisteredDevices:(map[string][]string)";

// "{PodUID:(string)... AllocResp:([]uint8)[...]}" for one entry.
void AppendSpewEntry(std::string* out, const PodDevicesEntry& e);
// "[a b c]", "[]" or "<nil>".
void AppendSpewList(std::string* out, const DeviceList& l);

// ---- json.Marshal bytes (V2, no BootID) ----
// J = `{"Data":{"PodDeviceEntries":` E `,"RegisteredDevices":` R
//     `},"Checksum":` decimal `}`
//   E = "null" | "[" entry ("," entry)* "]"
//   R = "null" | "{" "\"name\":" list ("," ...)* "}"
inline constexpr std::string_view kJsonHead = "{\"Data\":{\"PodDeviceEntries\":";
inline constexpr std::string_view kJsonRegistered = ",\"RegisteredDevices\":";
inline constexpr std::string_view kJsonChecksum = "},\"Checksum\":";

// `{"PodUID":"...",...,"AllocResp":"<base64>"}` for one entry.
void AppendJsonEntry(std::string* out, const PodDevicesEntry& e);
// `["a","b"]`, `[]` or `null`.
void AppendJsonList(std::string* out, const DeviceList& l);

}  // namespace devmgr::checkpoint::render

#endif  // DEVMGR_CHECKPOINT_RENDER_H_
