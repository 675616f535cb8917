// `expect.checkpoint`: the device manager's checkpoint file (whether it
// exists and verifies, its podDevices entries, its registered devices).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "common/status_util.h"
#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

const Keys kCheckpointKeys = {"exists",  "valid",         "entry_count",
                              "entries", "entries_exact", "registered"};
const Keys kEntryKeys = {"pod", "container", "resource", "devices"};

absl::Status ParseEntries(const ExpectReader& r, const YAML::Node& entries, CheckpointExpect* c) {
  DEVMGR_RETURN_IF_ERROR(r.ExpectSeq(entries, "checkpoint entries"));
  for (const YAML::Node& e : entries) {
    DEVMGR_RETURN_IF_ERROR(r.ExpectMap(e, "a checkpoint entry"));
    DEVMGR_RETURN_IF_ERROR(r.CheckKeys(e, kEntryKeys, "a checkpoint entry"));
    CheckpointEntryExpect ce;
    ce.loc = r.Loc(e);
    if (!e["pod"] || !e["container"] || !e["resource"]) {
      return r.Error(e, "a checkpoint entry needs pod, container and resource");
    }
    DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(e["pod"], "pod", &ce.pod));
    DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(e["container"], "container", &ce.container));
    DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(e["resource"], "resource", &ce.resource));
    if (e["devices"]) {
      DEVMGR_RETURN_IF_ERROR(r.Set(e["devices"], "checkpoint entry devices", &ce.devices));
    }
    c->entries.push_back(std::move(ce));
  }
  return absl::OkStatus();
}

absl::Status ParseRegistered(const ExpectReader& r, const YAML::Node& reg_node,
                             CheckpointExpect* c) {
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(reg_node, "checkpoint registered"));
  // Only lists: the exact map. Any absent, $NAME or mapping value: a
  // check per listed resource.
  bool lists = true;
  for (auto it = reg_node.begin(); it != reg_node.end(); ++it) lists &= it->second.IsSequence();
  std::map<std::string, std::vector<std::string>> reg;
  for (auto it = reg_node.begin(); it != reg_node.end(); ++it) {
    std::string res;
    DEVMGR_RETURN_IF_ERROR(r.NonEmptyString(it->first, "resource name", &res));
    if (lists) {
      DEVMGR_RETURN_IF_ERROR(r.StringList(it->second, "registered devices", &reg[res]));
    } else {
      DEVMGR_RETURN_IF_ERROR(r.Set(it->second, fmt::format("checkpoint.registered['{}']", res),
                                   &c->registered_sets[res]));
    }
  }
  if (lists) c->registered = std::move(reg);
  return absl::OkStatus();
}

absl::Status Parse(const ExpectReader& r, const YAML::Node& expect, Expectations* e) {
  if (!expect["checkpoint"]) return absl::OkStatus();
  const YAML::Node n = expect["checkpoint"];
  CheckpointExpect c;
  c.loc = r.Loc(n);
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(n, "expect.checkpoint"));
  DEVMGR_RETURN_IF_ERROR(r.CheckKeys(n, kCheckpointKeys, "expect.checkpoint"));
  if (n["exists"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(n["exists"], "exists", &c.exists));
  if (n["valid"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(n["valid"], "valid", &c.valid));
  if (n["entry_count"]) {
    DEVMGR_RETURN_IF_ERROR(r.OptInt(n["entry_count"], "entry_count", 0, &c.entry_count));
  }
  if (n["entries"] && n["entries_exact"]) {
    return r.Error(n["entries_exact"], "give entries or entries_exact, not both");
  }
  const YAML::Node entries = n["entries_exact"] ? n["entries_exact"] : n["entries"];
  c.entries_exact = static_cast<bool>(n["entries_exact"]);
  if (entries) DEVMGR_RETURN_IF_ERROR(ParseEntries(r, entries, &c));
  if (n["registered"]) DEVMGR_RETURN_IF_ERROR(ParseRegistered(r, n["registered"], &c));
  e->checkpoint = std::move(c);
  return absl::OkStatus();
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

struct CheckpointEntry {
  std::string pod, container, resource;
  std::vector<std::string> devices;  // sorted, every NUMA node's
};

std::vector<CheckpointEntry> CheckpointEntries(const checkpoint::Checkpoint& cp) {
  std::vector<CheckpointEntry> entries;
  if (!cp.data.pod_device_entries) return entries;
  for (const auto& e : *cp.data.pod_device_entries) {
    CheckpointEntry x{e.pod_uid, e.container_name, e.resource_name, {}};
    if (e.device_ids) {
      for (const auto& [numa, ids] : *e.device_ids) {
        if (ids) x.devices.insert(x.devices.end(), ids->begin(), ids->end());
      }
    }
    std::sort(x.devices.begin(), x.devices.end());
    x.devices.erase(std::unique(x.devices.begin(), x.devices.end()), x.devices.end());
    entries.push_back(std::move(x));
  }
  return entries;
}

std::string PodUid(const Observed& o, const std::string& ref) {
  const node::PodRecord* r = FindPod(o.pods, ref);
  return r ? r->pod.uid : ref;
}

void CheckRegistered(const CheckpointExpect& c, const checkpoint::Checkpoint& cp, const Observed& o,
                     std::vector<Failure>* out) {
  std::map<std::string, std::vector<std::string>> got;
  if (cp.data.registered_devices) {
    for (const auto& [r, ids] : *cp.data.registered_devices) {
      got[r] = ids ? Sorted(*ids) : std::vector<std::string>{};
    }
  }
  for (const auto& [r, want] : c.registered_sets) {
    auto it = got.find(r);
    CheckSet(want, c.loc, fmt::format("checkpoint.registered['{}']", r),
             it == got.end() ? std::nullopt : std::optional(it->second), o.captures, out);
  }
  if (c.registered) {
    std::map<std::string, std::vector<std::string>> want;
    for (const auto& [r, ids] : *c.registered) want[r] = Sorted(ids);
    if (got != want) {
      auto show = [](const std::map<std::string, std::vector<std::string>>& m) {
        std::string s;
        for (const auto& [r, ids] : m)
          s += fmt::format("{}{}={}", s.empty() ? "" : " ", r, ListString(ids));
        return "{" + s + "}";
      };
      Fail(out, c.loc, "checkpoint.registered", show(want), show(got));
    }
  }
}

void CheckEntries(const CheckpointExpect& c, const checkpoint::Checkpoint& cp, const Observed& o,
                  std::vector<Failure>* out) {
  const std::vector<CheckpointEntry> entries = CheckpointEntries(cp);
  auto show_all = [&] {
    std::string s;
    for (const auto& e : entries) {
      s += fmt::format("{}{}/{}/{}={}", s.empty() ? "" : ", ", e.pod, e.container, e.resource,
                       ListString(e.devices));
    }
    return "[" + s + "]";
  };
  if (c.entry_count && static_cast<int64_t>(entries.size()) != *c.entry_count) {
    Fail(out, c.loc, "checkpoint.entry_count", IntString(*c.entry_count),
         fmt::format("{} {}", entries.size(), show_all()));
  }
  for (const auto& want : c.entries) {
    const std::string uid = PodUid(o, want.pod);
    auto it = std::find_if(entries.begin(), entries.end(), [&](const CheckpointEntry& e) {
      return e.pod == uid && e.container == want.container && e.resource == want.resource;
    });
    const std::string w =
        fmt::format("checkpoint.entries[{}/{}/{}]", want.pod, want.container, want.resource);
    if (want.devices.absent) {
      if (it != entries.end()) {
        Fail(out, want.loc, w, "absent (no such entry)", ListString(it->devices));
      }
    } else if (it == entries.end()) {
      Fail(out, want.loc, w, "an entry", "absent; entries: " + show_all());
    } else {
      CheckSet(want.devices, want.loc, w + ".devices", it->devices, o.captures, out);
    }
  }
  if (c.entries_exact && entries.size() != c.entries.size()) {
    Fail(out, c.loc, "checkpoint.entries_exact",
         fmt::format("exactly {} entries", c.entries.size()), show_all());
  }
}

void CheckCheckpoint(const CheckpointExpect& c, const Observed& o, std::vector<Failure>* out) {
  const bool exists = o.checkpoint_bytes.has_value();
  if (c.exists && exists != *c.exists) {
    Fail(out, c.loc, "checkpoint.exists", BoolString(*c.exists), BoolString(exists));
    return;
  }
  if (!exists) {
    if (c.valid || c.entry_count || !c.entries.empty() || c.registered ||
        !c.registered_sets.empty()) {
      Fail(out, c.loc, "checkpoint", "a checkpoint file", "no file");
    }
    return;
  }
  const checkpoint::VerifyResult v = checkpoint::Verify(*o.checkpoint_bytes);
  if (c.valid && v.valid != *c.valid) {
    Fail(out, c.loc, "checkpoint.valid", BoolString(*c.valid),
         v.valid ? "true"
         : !v.parsed
             ? "false (" + v.error + ")"
             : fmt::format("false (checksum {} stored, {} computed)", v.stored, v.computed));
  }
  if (!v.parsed) {
    if (c.entry_count || !c.entries.empty() || c.registered || !c.registered_sets.empty()) {
      Fail(out, c.loc, "checkpoint", "a readable checkpoint", v.error);
    }
    return;
  }
  const checkpoint::Checkpoint cp = v.format == checkpoint::FormatVersion::kV1
                                        ? checkpoint::ConvertV1ToV2(v.checkpoint)
                                        : v.checkpoint;
  CheckEntries(c, cp, o, out);
  CheckRegistered(c, cp, o, out);
}

void Check(const Expectations& e, const Observed& o, std::vector<Failure>* out) {
  if (e.checkpoint) CheckCheckpoint(*e.checkpoint, o, out);
}

}  // namespace

const ExpectKind& CheckpointExpectKind() {
  static const ExpectKind kKind = {
      .name = "checkpoint",
      .expect_keys = {"checkpoint"},
      .parse = Parse,
      .check = Check,
  };
  return kKind;
}

}  // namespace devmgr::scenario
