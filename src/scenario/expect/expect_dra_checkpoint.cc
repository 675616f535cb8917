// `expect.dra_checkpoint`: the DRA manager's checkpoint, dra_manager_state
// (whether it exists and verifies: the CRC32 of its Data and the layout of
// the kubelet release; its entries, by claim).
#include <algorithm>
#include <string>
#include <vector>

#include "common/status_util.h"
#include "dra/checkpoint.h"
#include "dra/state.h"
#include "fmt/format.h"
#include "scenario/expect/expect_kind.h"

namespace devmgr::scenario {
namespace {

const Keys kKeys = {"exists", "valid", "entry_count", "claims", "absent_claims", "pods"};

absl::Status Parse(const ExpectReader& r, const YAML::Node& expect, Expectations* e) {
  if (!expect["dra_checkpoint"]) return absl::OkStatus();
  const YAML::Node n = expect["dra_checkpoint"];
  DraCheckpointExpect c;
  c.loc = r.Loc(n);
  DEVMGR_RETURN_IF_ERROR(r.ExpectMap(n, "expect.dra_checkpoint"));
  DEVMGR_RETURN_IF_ERROR(r.CheckKeys(n, kKeys, "expect.dra_checkpoint"));
  if (n["exists"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(n["exists"], "exists", &c.exists));
  if (n["valid"]) DEVMGR_RETURN_IF_ERROR(r.OptBool(n["valid"], "valid", &c.valid));
  if (n["entry_count"]) {
    DEVMGR_RETURN_IF_ERROR(r.OptInt(n["entry_count"], "entry_count", 0, &c.entry_count));
  }
  if (n["claims"]) DEVMGR_RETURN_IF_ERROR(r.StringList(n["claims"], "claims", &c.claims));
  if (n["absent_claims"]) {
    DEVMGR_RETURN_IF_ERROR(r.StringList(n["absent_claims"], "absent_claims", &c.absent_claims));
  }
  if (n["pods"]) DEVMGR_RETURN_IF_ERROR(r.StringList(n["pods"], "pods", &c.pods));
  e->dra_checkpoint = std::move(c);
  return absl::OkStatus();
}

// "namespace/name" of an entry; a claim named without a namespace is in
// "default".
std::string Qualified(const std::string& ref) {
  return ref.find('/') == std::string::npos ? "default/" + ref : ref;
}

// Each listed pod is among the PodUIDs of some entry.
void CheckPods(const DraCheckpointExpect& c, const dra::CheckpointData& data, const Observed& o,
               std::vector<Failure>* out) {
  for (const std::string& ref : c.pods) {
    const node::PodRecord* rec = FindPod(o.pods, ref);
    const std::string uid = rec != nullptr ? rec->pod.uid : ref;
    bool found = false;
    if (data.claim_info_state_list) {
      for (const dra::ClaimInfoState& s : *data.claim_info_state_list) {
        found |= s.pod_uids && s.pod_uids->count(uid) > 0;
      }
    }
    if (!found) {
      Fail(out, c.loc, fmt::format("dra_checkpoint.pods['{}']", ref),
           "an entry whose PodUIDs hold the pod", "none");
    }
  }
}

void CheckEntries(const DraCheckpointExpect& c, const dra::CheckpointData& data, const Observed& o,
                  std::vector<Failure>* out) {
  CheckPods(c, data, o, out);
  std::vector<std::string> names;
  if (data.claim_info_state_list) {
    for (const dra::ClaimInfoState& s : *data.claim_info_state_list) {
      names.push_back(s.namespace_ + "/" + s.claim_name);
    }
  }
  auto has = [&](const std::string& ref) {
    return std::find(names.begin(), names.end(), Qualified(ref)) != names.end();
  };
  if (c.entry_count && static_cast<int64_t>(names.size()) != *c.entry_count) {
    Fail(out, c.loc, "dra_checkpoint.entry_count", IntString(*c.entry_count),
         fmt::format("{} {}", names.size(), ListString(names)));
  }
  for (const std::string& ref : c.claims) {
    if (!has(ref)) {
      Fail(out, c.loc, fmt::format("dra_checkpoint.claims['{}']", ref), "an entry",
           "none; entries: " + ListString(names));
    }
  }
  for (const std::string& ref : c.absent_claims) {
    if (has(ref)) {
      Fail(out, c.loc, fmt::format("dra_checkpoint.absent_claims['{}']", ref), "no entry",
           "an entry");
    }
  }
}

void Check(const Expectations& e, const Observed& o, std::vector<Failure>* out) {
  if (!e.dra_checkpoint) return;
  const DraCheckpointExpect& c = *e.dra_checkpoint;
  const bool exists = o.dra_checkpoint_bytes.has_value();
  if (c.exists && exists != *c.exists) {
    Fail(out, c.loc, "dra_checkpoint.exists", BoolString(*c.exists), BoolString(exists));
    return;
  }
  const bool content =
      c.valid || c.entry_count || !c.claims.empty() || !c.absent_claims.empty() || !c.pods.empty();
  if (!exists) {
    if (content) Fail(out, c.loc, "dra_checkpoint", "a dra_manager_state file", "no file");
    return;
  }
  const dra::VerifyResult v =
      dra::Verify(*o.dra_checkpoint_bytes, dra::LayoutForMinor(o.kubelet_minor));
  if (c.valid && v.valid != *c.valid) {
    Fail(out, c.loc, "dra_checkpoint.valid", BoolString(*c.valid),
         v.valid     ? "true"
         : !v.parsed ? "false (" + v.error + ")"
         : v.stored != v.computed
             ? fmt::format("false (checksum {} stored, {} computed)", v.stored, v.computed)
             : "false (" + v.data_error + ")");
  }
  if (!v.data) {
    if (c.entry_count || !c.claims.empty() || !c.absent_claims.empty() || !c.pods.empty()) {
      Fail(out, c.loc, "dra_checkpoint", "a readable dra_manager_state",
           v.parsed ? v.data_error : v.error);
    }
    return;
  }
  CheckEntries(c, *v.data, o, out);
}

}  // namespace

const ExpectKind& DraCheckpointExpectKind() {
  static const ExpectKind kKind = {
      .name = "dra_checkpoint",
      .expect_keys = {"dra_checkpoint"},
      .parse = Parse,
      .check = Check,
  };
  return kKind;
}

}  // namespace devmgr::scenario
