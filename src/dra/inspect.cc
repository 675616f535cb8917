#include "dra/inspect.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/inspect.h"
#include "fmt/format.h"

namespace devmgr::dra {
namespace {

using checkpoint::Printable;

std::string ListText(const StringList& l) {
  std::string out = "[";
  if (l) {
    for (size_t i = 0; i < l->size(); ++i) {
      if (i > 0) out += ' ';
      out += Printable((*l)[i]);
    }
  }
  return out + "]";
}

std::string SetText(const std::optional<std::set<std::string>>& s) {
  std::string out = "[";
  if (s) {
    bool first = true;
    for (const std::string& v : *s) {
      if (!first) out += ' ';
      first = false;
      out += Printable(v);
    }
  }
  return out + "]";
}

std::string DriversText(const ClaimInfoState& c) {
  std::string out = "[";
  if (c.driver_state) {
    bool first = true;
    for (const auto& [driver, unused] : *c.driver_state) {
      if (!first) out += ' ';
      first = false;
      out += Printable(driver);
    }
  }
  return out + "]";
}

std::string ClaimSummary(const ClaimInfoState& c) {
  return fmt::format("{} uid={} pods={} drivers={}", ClaimKey(c), Printable(c.claim_uid),
                     SetText(c.pod_uids), DriversText(c));
}

size_t DeviceCount(const DriverState& s) { return s.devices ? s.devices->size() : 0; }

// The devices of a driver as a multiset of lines.
std::multiset<std::string> DeviceLines(const DriverState& s) {
  std::multiset<std::string> out;
  if (s.devices) {
    for (const Device& d : *s.devices) out.insert(DeviceLine(d));
  }
  return out;
}

void DiffDriver(const std::string& prefix, const DriverState& a, const DriverState& b,
                std::vector<std::string>* out) {
  const std::multiset<std::string> da = DeviceLines(a);
  const std::multiset<std::string> db = DeviceLines(b);
  std::set<std::string> lines(da.begin(), da.end());
  lines.insert(db.begin(), db.end());
  for (const std::string& l : lines) {
    const size_t na = da.count(l);
    const size_t nb = db.count(l);
    for (size_t i = nb; i < na; ++i) out->push_back(prefix + "- device " + l);
    for (size_t i = na; i < nb; ++i) out->push_back(prefix + "+ device " + l);
  }
  if (ListText(a.skip_node_operations) != ListText(b.skip_node_operations)) {
    out->push_back(prefix + fmt::format("skipNodeOperations {} -> {}",
                                        ListText(a.skip_node_operations),
                                        ListText(b.skip_node_operations)));
  }
}

void DiffClaim(const ClaimInfoState& a, const ClaimInfoState& b, std::vector<std::string>* out) {
  const std::string head = fmt::format("~ claim {}: ", ClaimKey(b));
  if (ClaimKey(a) != ClaimKey(b)) {
    out->push_back(head + fmt::format("name {} -> {}", ClaimKey(a), ClaimKey(b)));
  }
  const std::set<std::string> none;
  const std::set<std::string>& pa = a.pod_uids ? *a.pod_uids : none;
  const std::set<std::string>& pb = b.pod_uids ? *b.pod_uids : none;
  for (const std::string& p : pa) {
    if (!pb.count(p)) out->push_back(head + fmt::format("pod {} removed", Printable(p)));
  }
  for (const std::string& p : pb) {
    if (!pa.count(p)) out->push_back(head + fmt::format("pod {} added", Printable(p)));
  }
  const std::map<std::string, DriverState> empty;
  const auto& da = a.driver_state ? *a.driver_state : empty;
  const auto& db = b.driver_state ? *b.driver_state : empty;
  for (const auto& [driver, state] : da) {
    auto it = db.find(driver);
    if (it == db.end()) {
      out->push_back(head + fmt::format("driver {} removed", Printable(driver)));
    } else {
      DiffDriver(head + fmt::format("driver {}: ", Printable(driver)), state, it->second, out);
    }
  }
  for (const auto& [driver, state] : db) {
    if (!da.count(driver)) {
      out->push_back(head + fmt::format("driver {} added ({} devices)", Printable(driver),
                                        DeviceCount(state)));
    }
  }
}

// Claims by UID, in list order; a repeated UID keeps its first entry.
std::map<std::string, const ClaimInfoState*> ByUid(const CheckpointData& d) {
  std::map<std::string, const ClaimInfoState*> out;
  if (d.claim_info_state_list) {
    for (const ClaimInfoState& c : *d.claim_info_state_list) out.emplace(c.claim_uid, &c);
  }
  return out;
}

}  // namespace

std::string ClaimKey(const ClaimInfoState& c) {
  return Printable(c.namespace_) + "/" + Printable(c.claim_name);
}

std::string DeviceLine(const Device& d) {
  std::string out = Printable(d.pool_name) + "/" + Printable(d.device_name);
  if (d.share_id) out += " share=" + Printable(*d.share_id);
  if (d.request_names && !d.request_names->empty()) out += " requests=" + ListText(d.request_names);
  if (d.cdi_device_ids && !d.cdi_device_ids->empty()) out += " cdi=" + ListText(d.cdi_device_ids);
  return out;
}

std::vector<std::string> Diff(const CheckpointData& a, const CheckpointData& b) {
  std::vector<std::string> out;
  if (a.kind != b.kind) {
    out.push_back(fmt::format("~ kind: {} -> {}", Printable(a.kind), Printable(b.kind)));
  }
  if (a.api_version != b.api_version) {
    out.push_back(
        fmt::format("~ apiVersion: {} -> {}", Printable(a.api_version), Printable(b.api_version)));
  }
  const auto ca = ByUid(a);
  const auto cb = ByUid(b);
  for (const auto& [uid, claim] : ca) {
    if (!cb.count(uid)) out.push_back("- claim " + ClaimSummary(*claim));
  }
  for (const auto& [uid, claim] : cb) {
    auto it = ca.find(uid);
    if (it == ca.end()) {
      out.push_back("+ claim " + ClaimSummary(*claim));
    } else {
      DiffClaim(*it->second, *claim, &out);
    }
  }
  return out;
}

}  // namespace devmgr::dra
