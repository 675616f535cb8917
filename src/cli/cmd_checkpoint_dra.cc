// `devmgr checkpoint` on the DRA manager's dra_manager_state: inspect,
// verify, diff and repair (see checkpoint_dra.h and
// docs/checkpoint_format.md "dra_manager_state").
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/inspect.h"
#include "cli/checkpoint_dra.h"
#include "cli/checkpoint_output.h"
#include "cli/commands.h"
#include "dra/checkpoint.h"
#include "dra/inspect.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace devmgr::cli {
namespace {

using checkpoint::Printable;
using dra::StateLayout;
using json = nlohmann::ordered_json;

// The newest layout reads the files of every release (fields a file lacks
// stay empty).
constexpr StateLayout kReadLayout = StateLayout::k137;

// The kubelet's own words for the two ways the file stops it from starting.
constexpr char kCorruptConsequence[] =
    "a kubelet fails to start on it: \"create ResourceClaim cache: GetOrCreate() on checkpoint "
    "state: failed to get checkpoint dra_manager_state: checkpoint is corrupted\"";

std::string ChecksumText(const dra::VerifyResult& r) {
  if (r.stored == r.computed) return fmt::format("{} (valid)", r.stored);
  return fmt::format(
      "CORRUPT: stored {}, computed {} ({}; `devmgr checkpoint repair` recomputes it)", r.stored,
      r.computed, kCorruptConsequence);
}

json ListJson(const dra::StringList& l) {
  if (!l) return nullptr;
  json a = json::array();
  for (const std::string& s : *l) a.push_back(s);
  return a;
}

json ClaimJson(const dra::ClaimInfoState& c) {
  json j = json::object();
  j["uid"] = c.claim_uid;
  j["namespace"] = c.namespace_;
  j["name"] = c.claim_name;
  json pods = nullptr;
  if (c.pod_uids) {
    pods = json::array();
    for (const std::string& p : *c.pod_uids) pods.push_back(p);
  }
  j["podUIDs"] = pods;
  json drivers = nullptr;
  if (c.driver_state) {
    drivers = json::object();
    for (const auto& [driver, st] : *c.driver_state) {
      json dj = json::object();
      json devices = nullptr;
      if (st.devices) {
        devices = json::array();
        for (const dra::Device& d : *st.devices) {
          json v = json::object();
          v["poolName"] = d.pool_name;
          v["deviceName"] = d.device_name;
          v["shareID"] = d.share_id ? json(*d.share_id) : json(nullptr);
          v["requestNames"] = ListJson(d.request_names);
          v["cdiDeviceIDs"] = ListJson(d.cdi_device_ids);
          devices.push_back(std::move(v));
        }
      }
      dj["devices"] = devices;
      dj["skipNodeOperations"] = ListJson(st.skip_node_operations);
      drivers[driver] = std::move(dj);
    }
  }
  j["drivers"] = drivers;
  return j;
}

json DraJson(const std::string& name, const dra::VerifyResult& r) {
  json j = json::object();
  j["file"] = name;
  j["format"] = "dra_manager_state";
  j["checksum"] =
      json{{"stored", r.stored}, {"computed", r.computed}, {"valid", r.stored == r.computed}};
  if (!r.data) {
    j["dataError"] = r.data_error;
    return j;
  }
  j["kind"] = r.data->kind;
  j["apiVersion"] = r.data->api_version;
  json claims = nullptr;
  if (r.data->claim_info_state_list) {
    claims = json::array();
    for (const dra::ClaimInfoState& c : *r.data->claim_info_state_list) {
      claims.push_back(ClaimJson(c));
    }
  }
  j["claims"] = claims;
  return j;
}

void AppendClaimTable(std::string* out, const dra::ClaimInfoState& c) {
  *out += fmt::format("claim {} (uid {})\n", dra::ClaimKey(c), Printable(c.claim_uid));
  if (!c.pod_uids || c.pod_uids->empty()) {
    *out += "  pods:    none\n";
  } else {
    for (const std::string& p : *c.pod_uids) *out += fmt::format("  pod:     {}\n", Printable(p));
  }
  if (!c.driver_state || c.driver_state->empty()) {
    *out += "  drivers: none\n";
    return;
  }
  for (const auto& [driver, st] : *c.driver_state) {
    *out += fmt::format("  driver {}\n", Printable(driver));
    if (!st.devices || st.devices->empty()) *out += "    no devices\n";
    if (st.devices) {
      for (const dra::Device& d : *st.devices) {
        *out += fmt::format("    device {}\n", dra::DeviceLine(d));
      }
    }
    if (st.skip_node_operations && !st.skip_node_operations->empty()) {
      std::string ops;
      for (const std::string& op : *st.skip_node_operations) ops += " " + Printable(op);
      *out += fmt::format("    skipNodeOperations:{}\n", ops);
    }
  }
}

std::string DraTable(const std::string& name, const dra::VerifyResult& r) {
  std::string out;
  out += fmt::format("file:      {}\n", name);
  out += "format:    dra_manager_state (the kubelet's DRA claim cache; CRC32 of Data)\n";
  out += fmt::format("checksum:  {}\n", ChecksumText(r));
  if (!r.data) {
    out += fmt::format(
        "data:      NOT READABLE: {} (a kubelet fails to start on it: \"create ResourceClaim "
        "cache: GetEntries() on checkpoint: ...\")\n",
        r.data_error);
    return out;
  }
  out += fmt::format("kind:      {} {}\n", Printable(r.data->kind), Printable(r.data->api_version));
  const size_t n = r.data->claim_info_state_list ? r.data->claim_info_state_list->size() : 0;
  out += fmt::format("claims:    {}\n", n);
  if (r.data->claim_info_state_list) {
    for (const dra::ClaimInfoState& c : *r.data->claim_info_state_list) AppendClaimTable(&out, c);
  }
  return out;
}

}  // namespace

bool IsDraCheckpoint(const std::string& path, std::string_view bytes) {
  const size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return base == dra::kCheckpointName || dra::LooksLikeDraCheckpoint(bytes);
}

int InspectDra(const std::string& name, const std::string& bytes, const std::string& output) {
  const dra::VerifyResult r = dra::Verify(bytes, kReadLayout);
  if (!r.parsed) {
    std::cerr << fmt::format("devmgr checkpoint inspect: {}: not a readable checkpoint: {}\n", name,
                             r.error);
    return kExitUsage;
  }
  if (output == "table") {
    std::cout << DraTable(name, r);
  } else {
    const json j = DraJson(name, r);
    if (output == "json") {
      std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    } else {
      std::cout << ToYaml(j);
    }
  }
  std::cout.flush();
  return kExitOk;
}

bool VerifyDraLine(const std::string& name, const std::string& bytes, std::string* line) {
  const dra::VerifyResult r = dra::Verify(bytes, kReadLayout);
  if (!r.parsed) {
    *line = fmt::format("{}: CORRUPT dra parse error: {}{}\n", name, r.error,
                        bytes.empty() ? " (empty file)" : "");
  } else if (r.stored != r.computed) {
    *line = fmt::format("{}: CORRUPT dra checksum mismatch: stored {}, computed {}\n", name,
                        r.stored, r.computed);
  } else if (!r.data) {
    *line = fmt::format("{}: CORRUPT dra Data error: {}\n", name, r.data_error);
  } else {
    *line = fmt::format("{}: OK dra checksum {}\n", name, r.stored);
  }
  return r.valid;
}

int DiffDra(const std::string& name_a, const std::string& a, const std::string& name_b,
            const std::string& b) {
  const dra::VerifyResult ra = dra::Verify(a, kReadLayout);
  const dra::VerifyResult rb = dra::Verify(b, kReadLayout);
  for (const auto* r : {&ra, &rb}) {
    if (!r->parsed || !r->data) {
      const std::string& name = r == &ra ? name_a : name_b;
      std::cerr << fmt::format("devmgr checkpoint diff: {}: not a readable checkpoint: {}\n", name,
                               r->parsed ? r->data_error : r->error);
      return kExitUsage;
    }
  }
  std::vector<std::string> lines;
  if (ra.valid != rb.valid) {
    lines.push_back(fmt::format("~ checksum: {} -> {}", ra.valid ? "valid" : "CORRUPT",
                                rb.valid ? "valid" : "CORRUPT"));
  }
  for (std::string& l : dra::Diff(*ra.data, *rb.data)) lines.push_back(std::move(l));
  for (const std::string& l : lines) std::cout << l << "\n";
  std::cout.flush();
  return lines.empty() ? kExitOk : kExitFailed;
}

absl::StatusOr<std::string> RepairDra(const std::string& name, const std::string& bytes) {
  const dra::VerifyResult r = dra::Verify(bytes, kReadLayout);
  if (!r.parsed) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: not a readable checkpoint: {}; refusing to repair (fix the JSON by hand first)", name,
        r.error));
  }
  dra::Checkpoint cp = r.file;
  cp.checksum = dra::Crc32Ieee(cp.data);
  if (r.stored == cp.checksum) {
    std::cerr << fmt::format("{}: checksum {} was already valid (dra)\n", name, cp.checksum);
  } else {
    std::cerr << fmt::format("{}: checksum {} -> {} (dra)\n", name, r.stored, cp.checksum);
  }
  if (!r.data) {
    std::cerr << fmt::format(
        "warning: {}: Data does not decode ({}); a kubelet still fails to start on the repaired "
        "file\n",
        name, r.data_error);
  }
  return dra::EncodeFile(cp);
}

}  // namespace devmgr::cli
