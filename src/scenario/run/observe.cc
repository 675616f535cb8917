#include "scenario/run/observe.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "apiserver/field_selector.h"
#include "apiserver/resource_type.h"
#include "common/logging.h"
#include "dra/manager.h"
#include "podresources/lister.h"
#include "topology/bitmask.h"

namespace devmgr::scenario {
namespace {

ResourceHints FromProviderHints(const topology::ProviderHints& in) {
  ResourceHints out;
  for (const auto& [r, list] : in) {
    if (!list) {
      out[r] = std::nullopt;
      continue;
    }
    std::vector<HintSpec> hs;
    for (const topology::TopologyHint& t : *list) {
      HintSpec h;
      if (t.numa_node_affinity) h.numa = t.numa_node_affinity->GetBits();
      h.preferred = t.preferred;
      hs.push_back(std::move(h));
    }
    out[r] = std::move(hs);
  }
  return out;
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The DRA part: claims, the claim-info cache, driver calls, the checkpoint,
// the ResourceSlices.
void ObserveDra(const Expectations& e, const ObserveContext& ctx, Observed* o) {
  o->kubelet_minor = ctx.kubelet_minor;
  if (ctx.dra_store == nullptr) return;
  if (!e.claims.empty()) {
    apiserver::ApiOr<apiserver::Store::ListResult> l =
        ctx.dra_store->List(apiserver::ResourceClaims(), "", apiserver::FieldSelector{});
    if (l.ok()) o->dra_claims = std::move(l.value.items);
    if (ctx.node->dra_manager() != nullptr)
      o->dra_claim_infos = ctx.node->dra_manager()->ClaimInfos();
  }
  if (!e.dra_calls.empty()) {
    o->dra_calls_since_start = ctx.dra_calls;
    const size_t mark = std::min(ctx.dra_calls_mark, ctx.dra_calls.size());
    o->dra_calls_since_step.assign(ctx.dra_calls.begin() + static_cast<std::ptrdiff_t>(mark),
                                   ctx.dra_calls.end());
  }
  if (e.dra_checkpoint) o->dra_checkpoint_bytes = ReadFile(ctx.dra_checkpoint_path);
  if (!e.resource_slices.empty()) {
    apiserver::ApiOr<apiserver::Store::ListResult> l =
        ctx.dra_store->List(apiserver::ResourceSlices(), "", apiserver::FieldSelector{});
    if (l.ok()) o->dra_slices = std::move(l.value.items);
  }
  if (e.api_requests && ctx.api != nullptr) {
    o->api_requests_since_start = ctx.api->Requests();
    for (const apiserver::RequestRecord& r : o->api_requests_since_start) {
      if (r.seq > ctx.api_requests_mark) o->api_requests_since_step.push_back(r);
    }
  }
}

}  // namespace

Observed Observe(const Expectations& e, const ObserveContext& ctx) {
  Observed o;
  bool need_status = false;
  for (const auto& r : e.resources) need_status |= r.capacity || r.allocatable;
  o.node = need_status ? ctx.node->UpdateNodeStatus() : ctx.node->node_resources();
  o.resources = ctx.node->manager().Snapshot();
  o.pods = ctx.pods->Pods();
  o.active_pod_uids = ctx.pods->ActivePodUids();
  o.allocations = ctx.node->manager().Allocations();
  o.pod_statuses = ctx.node->PodResourceStatuses();
  bool topo = false;
  for (const auto& p : e.pods) {
    topo |= p.topology_hints.has_value() || !p.absent_hints.empty();
    for (const auto& c : p.containers) {
      topo |= c.has_numa_affinity || c.topology_hints || !c.absent_hints.empty();
    }
  }
  if (topo) {
    for (const auto& rec : o.pods) {
      const std::string& uid = rec.pod.uid;
      if (ctx.node->topology_manager() != nullptr) {
        if (auto trace = ctx.node->topology_manager()->LastAdmission(uid)) {
          for (const auto& m : trace->merges) {
            MergeObs mo;
            mo.container = m.container;
            for (const auto& [name, hints] : m.provider_hints) {
              mo.providers[name] = FromProviderHints(hints);
            }
            o.merges[uid].push_back(std::move(mo));
          }
        }
      }
      for (const auto& c : rec.containers) {
        if (std::optional<uint64_t> a = ctx.node->NumaAffinity(uid, c.name)) {
          o.numa_affinity[{uid, c.name}] = topology::BitMask(*a).GetBits();
        }
      }
    }
  }
  if (e.pod_resources) {
    // What an agent on the socket would get, from the same Lister (List
    // runs the device manager's garbage collection, as the kubelet's does).
    podresources::Lister lister(ctx.node, ctx.pods, *ctx.pod_resources);
    const v1::ListPodResourcesResponse list = lister.List();
    o.pod_resources = FromProto(list, lister.GetAllocatableResources());
    for (const PrPodExpect& p : e.pod_resources->get) {
      const auto [ns, name] = SplitGetRef(p.ref);
      absl::StatusOr<v1::GetPodResourcesResponse> r = lister.Get(ns, name);
      PrGetObs g;
      if (r.ok()) {
        g.pod = FromProto(r->pod_resources());
      } else {
        g.error = std::string(r.status().message());
      }
      o.pod_resources->get[p.ref] = std::move(g);
    }
  }
  if (e.checkpoint) {
    std::ifstream in(ctx.checkpoint_path, std::ios::binary);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      o.checkpoint_bytes = ss.str();
    }
  }
  for (const auto& c : e.calls) {
    PluginHost* h = ctx.host(c.plugin);
    o.calls_since_start[c.plugin] = h->Calls();
    o.calls_since_step[c.plugin] = h->CallsSinceMark();
  }
  ObserveDra(e, ctx, &o);
  if (!e.log.empty()) {
    // Only the lines logged since the step started.
    std::vector<std::string> lines = RecentLogLines(200);
    auto it = std::find(lines.rbegin(), lines.rend(), ctx.log_mark);
    if (!ctx.log_mark.empty() && it != lines.rend()) lines.erase(lines.begin(), it.base());
    o.log_lines = std::move(lines);
  }
  return o;
}

std::vector<std::string> RecentLogLines(size_t n) {
  std::vector<std::string> lines = log::RecentLines(n);
  for (std::string& l : lines) {
    while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
  }
  return lines;
}

}  // namespace devmgr::scenario
