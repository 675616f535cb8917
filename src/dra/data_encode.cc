// json.Marshal of the kubelet's state.CheckpointData, per struct layout:
// fields in Go struct order, TypeMeta's omitempty fields, map keys sorted
// (std::map and std::set order bytewise, as Go sorts map keys), nil as null,
// strings as Go escapes them (checkpoint/go_json.h).
#include <string>

#include "checkpoint/go_json.h"
#include "dra/checkpoint.h"

namespace devmgr::dra {
namespace {

using checkpoint::AppendGoJsonString;

void AppendStringList(std::string* out, const StringList& l) {
  checkpoint::AppendGoJsonStringList(out, l);
}

void AppendDevice(std::string* out, const Device& d, StateLayout layout) {
  out->append("{\"PoolName\":");
  AppendGoJsonString(out, d.pool_name);
  out->append(",\"DeviceName\":");
  AppendGoJsonString(out, d.device_name);
  if (layout != StateLayout::k134) {
    out->append(",\"ShareID\":");
    if (d.share_id) {
      AppendGoJsonString(out, *d.share_id);
    } else {
      out->append("null");
    }
  }
  out->append(",\"RequestNames\":");
  AppendStringList(out, d.request_names);
  out->append(",\"CDIDeviceIDs\":");
  AppendStringList(out, d.cdi_device_ids);
  out->push_back('}');
}

void AppendDriverState(std::string* out, const DriverState& s, StateLayout layout) {
  out->append("{\"Devices\":");
  if (!s.devices) {
    out->append("null");
  } else {
    out->push_back('[');
    for (size_t i = 0; i < s.devices->size(); ++i) {
      if (i > 0) out->push_back(',');
      AppendDevice(out, (*s.devices)[i], layout);
    }
    out->push_back(']');
  }
  // omitempty: a nil or empty slice is left out.
  if (layout == StateLayout::k137 && s.skip_node_operations && !s.skip_node_operations->empty()) {
    out->append(",\"skipNodeOperations\":");
    AppendStringList(out, s.skip_node_operations);
  }
  out->push_back('}');
}

}  // namespace

void AppendClaim(std::string* out, const ClaimInfoState& c, StateLayout layout) {
  out->append("{\"ClaimUID\":");
  AppendGoJsonString(out, c.claim_uid);
  out->append(",\"ClaimName\":");
  AppendGoJsonString(out, c.claim_name);
  out->append(",\"Namespace\":");
  AppendGoJsonString(out, c.namespace_);
  out->append(",\"PodUIDs\":");
  if (!c.pod_uids) {
    out->append("null");
  } else {
    out->push_back('{');
    bool first = true;
    for (const std::string& uid : *c.pod_uids) {
      if (!first) out->push_back(',');
      first = false;
      AppendGoJsonString(out, uid);
      out->append(":{}");
    }
    out->push_back('}');
  }
  out->append(",\"DriverState\":");
  if (!c.driver_state) {
    out->append("null");
  } else {
    out->push_back('{');
    bool first = true;
    for (const auto& [driver, state] : *c.driver_state) {
      if (!first) out->push_back(',');
      first = false;
      AppendGoJsonString(out, driver);
      out->push_back(':');
      AppendDriverState(out, state, layout);
    }
    out->push_back('}');
  }
  out->push_back('}');
}

std::string EncodeData(const CheckpointData& data, StateLayout layout) {
  std::string out;
  out.reserve(256);
  out.push_back('{');
  // metav1.TypeMeta is inlined; both of its fields are omitempty.
  bool first = true;
  if (!data.kind.empty()) {
    out.append("\"kind\":");
    AppendGoJsonString(&out, data.kind);
    first = false;
  }
  if (!data.api_version.empty()) {
    if (!first) out.push_back(',');
    out.append("\"apiVersion\":");
    AppendGoJsonString(&out, data.api_version);
    first = false;
  }
  if (!first) out.push_back(',');
  out.append("\"ClaimInfoStateList\":");
  if (!data.claim_info_state_list) {
    out.append("null");
  } else {
    out.push_back('[');
    for (size_t i = 0; i < data.claim_info_state_list->size(); ++i) {
      if (i > 0) out.push_back(',');
      AppendClaim(&out, (*data.claim_info_state_list)[i], layout);
    }
    out.push_back(']');
  }
  out.push_back('}');
  return out;
}

}  // namespace devmgr::dra
