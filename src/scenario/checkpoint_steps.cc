// The steps that edit the kubelet's checkpoint file.
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "absl/strings/escaping.h"
#include "checkpoint/checkpoint.h"
#include "common/fs.h"
#include "fmt/format.h"
#include "scenario/step_handlers.h"

namespace devmgr::scenario {
absl::Status DeleteCheckpointStep(RunContext& ctx, const Step&, StepResult*) {
  const std::string path = ctx.CheckpointPath();
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::FailedPreconditionError(fmt::format("unlink {}: {}", path, std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status TruncateCheckpointStep(RunContext& ctx, const Step& st, StepResult*) {
  const std::string path = ctx.CheckpointPath();
  if (truncate(path.c_str(), st.truncate_to) != 0) {
    return absl::FailedPreconditionError(
        fmt::format("truncate {}: {}", path, std::strerror(errno)));
  }
  return absl::OkStatus();
}

// Changes the stored checksum (the JSON stays valid), else flips a byte.
absl::Status CorruptCheckpointStep(RunContext& ctx, const Step&, StepResult*) {
  const std::string path = ctx.CheckpointPath();
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::FailedPreconditionError("no checkpoint to corrupt at " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  in.close();
  const size_t k = text.find("\"Checksum\":");
  bool changed = false;
  if (k != std::string::npos) {
    size_t i = k + 11;
    while (i < text.size() && text[i] == ' ') ++i;
    if (i < text.size() && isdigit(static_cast<unsigned char>(text[i]))) {
      text[i] = text[i] == '9' ? '1' : static_cast<char>(text[i] + 1);
      changed = true;
    }
  }
  if (!changed && !text.empty()) text[text.size() / 2] ^= 0x20;
  return fs::WriteOutputFile(path, text);
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

absl::Status WriteCheckpointStep(RunContext& ctx, const Step& st, StepResult* r) {
  if (!st.checkpoint) return fs::WriteOutputFile(ctx.CheckpointPath(), st.content);
  // Pod refs name pods the scenario admitted; anything else is a UID.
  auto uid = [&ctx](const std::string& ref) {
    auto rec = ctx.pods->Find(ref);
    return rec ? rec->pod.uid : ref;
  };
  absl::StatusOr<std::string> bytes = EncodeCheckpointSpec(*st.checkpoint, uid);
  if (!bytes.ok()) return bytes.status();
  const checkpoint::VerifyResult v = checkpoint::Verify(*bytes);
  r->notes.push_back(fmt::format("checksum {} ({})", v.stored, v.valid ? "valid" : "invalid"));
  return fs::WriteOutputFile(ctx.CheckpointPath(), *bytes);
}

}  // namespace devmgr::scenario
