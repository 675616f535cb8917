// The checkpoint edits of the step interpreter (write_checkpoint's
// encoding, corrupt_checkpoint's byte change), as pure functions.
#include <cctype>
#include <functional>

#include "absl/strings/escaping.h"
#include "checkpoint/checkpoint.h"
#include "fmt/format.h"
#include "scenario/steps/step_interpreter.h"

namespace devmgr::scenario {

// The last digit goes down by one (0 becomes 1), so the number stays in
// the range of its type: dra_manager_state's checksum is a uint32, and a
// larger number would be a JSON error, not "checkpoint is corrupted".
std::string CorruptCheckpointBytes(std::string text) {
  const size_t k = text.find("\"Checksum\":");
  bool changed = false;
  if (k != std::string::npos) {
    size_t i = k + 11;
    while (i < text.size() && text[i] == ' ') ++i;
    size_t end = i;
    while (end < text.size() && isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end > i) {
      char& last = text[end - 1];
      last = last == '0' ? '1' : static_cast<char>(last - 1);
      changed = true;
    }
  }
  if (!changed && !text.empty()) text[text.size() / 2] ^= 0x20;
  return text;
}

absl::StatusOr<std::string> EncodeCheckpointSpec(
    const CheckpointSpec& spec, const std::function<std::string(const std::string&)>& uid) {
  checkpoint::Checkpoint cp;
  checkpoint::RegisteredDevices reg = std::map<std::string, checkpoint::DeviceList>{};
  for (const auto& [r, ids] : spec.registered) (*reg)[r] = ids;
  std::vector<checkpoint::PodDevicesEntry> v2;
  std::vector<checkpoint::PodDevicesEntryV1> v1;
  for (const CheckpointEntrySpec& e : spec.entries) {
    std::string resp;
    if (e.alloc_resp && !absl::Base64Unescape(*e.alloc_resp, &resp)) {
      return absl::InvalidArgumentError(
          fmt::format("write_checkpoint: alloc_resp of {}/{}/{} is not base64", e.pod, e.container,
                      e.resource));
    }
    if (spec.v1) {
      checkpoint::PodDevicesEntryV1 x{uid(e.pod), e.container, e.resource,
                                      std::vector<std::string>{}, resp};
      for (const auto& [numa, ids] : e.devices) {
        x.device_ids->insert(x.device_ids->end(), ids.begin(), ids.end());
      }
      v1.push_back(std::move(x));
    } else {
      checkpoint::PodDevicesEntry x{uid(e.pod), e.container, e.resource,
                                    std::map<int64_t, checkpoint::DeviceList>{}, resp};
      for (const auto& [numa, ids] : e.devices) (*x.device_ids)[numa] = ids;
      v2.push_back(std::move(x));
    }
  }
  if (spec.v1) {
    cp.format = checkpoint::FormatVersion::kV1;
    cp.data_v1.pod_device_entries = std::move(v1);
    cp.data_v1.registered_devices = std::move(reg);
    cp.checksum = checkpoint::ComputeChecksumV1(cp.data_v1);
  } else {
    cp.data.pod_device_entries = std::move(v2);
    cp.data.registered_devices = std::move(reg);
    cp.checksum = checkpoint::ComputeChecksum(cp.data);
  }
  if (spec.wrong_checksum) cp.checksum = (cp.checksum + 1) & 0xffffffffu;
  if (spec.checksum) cp.checksum = *spec.checksum;
  return checkpoint::Encode(cp);
}

}  // namespace devmgr::scenario
