#include "pod/pod.h"

#include <algorithm>

namespace devmgr::pod {

std::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kPending:
      return "Pending";
    case Phase::kRunning:
      return "Running";
    case Phase::kSucceeded:
      return "Succeeded";
    case Phase::kFailed:
      return "Failed";
  }
  return "Unknown";
}

std::vector<const Container*> AllContainersInKubeletOrder(const Pod& pod) {
  std::vector<const Container*> out;
  out.reserve(pod.init_containers.size() + pod.containers.size());
  for (const Container& c : pod.init_containers) out.push_back(&c);
  for (const Container& c : pod.containers) out.push_back(&c);
  return out;
}

bool IsInitContainer(const Pod& pod, std::string_view name) {
  return std::any_of(pod.init_containers.begin(), pod.init_containers.end(),
                     [&](const Container& c) { return c.name == name; });
}

const Container* FindContainer(const Pod& pod, std::string_view name) {
  for (const Container* c : AllContainersInKubeletOrder(pod)) {
    if (c->name == name) return c;
  }
  return nullptr;
}

std::map<std::string, int64_t> PodLimits(const Pod& pod) {
  // Sum of app containers' limits.
  std::map<std::string, int64_t> result;
  for (const Container& c : pod.containers) {
    for (const auto& [r, v] : c.limits) result[r] += v;
  }
  // Walk init containers in order, keeping the running sum of restartable
  // (sidecar) init containers seen so far.
  std::map<std::string, int64_t> restartable_sum;
  std::map<std::string, int64_t> init_max;  // max over init containers
  for (const Container& c : pod.init_containers) {
    if (c.restartable) {
      for (const auto& [r, v] : c.limits) restartable_sum[r] += v;
      // A sidecar's own term is the cumulative sidecar sum including itself.
      for (const auto& [r, v] : restartable_sum) {
        init_max[r] = std::max(init_max[r], v);
      }
    } else {
      for (const auto& [r, v] : c.limits) {
        auto it = restartable_sum.find(r);
        int64_t term = v + (it == restartable_sum.end() ? 0 : it->second);
        init_max[r] = std::max(init_max[r], term);
      }
    }
  }
  // Sidecars keep running alongside the app containers.
  for (const auto& [r, v] : restartable_sum) result[r] += v;
  for (const auto& [r, v] : init_max) result[r] = std::max(result[r], v);
  return result;
}

bool IsDraBackedResource(const Pod& pod, std::string_view container_name,
                         std::string_view resource_name) {
  for (const ExtendedResourceMapping& m : pod.extended_resource_mappings) {
    if (m.container_name == container_name && m.resource_name == resource_name) return true;
  }
  return false;
}

}  // namespace devmgr::pod
