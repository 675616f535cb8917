#include "scenario/expect/captures.h"

#include <algorithm>

#include "checkpoint/checkpoint.h"
#include "fmt/format.h"

namespace devmgr::scenario {
namespace {

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

absl::StatusOr<std::vector<std::string>> ResourceSet(const CaptureSpec& c, const Observed& o) {
  for (const auto& r : o.resources) {
    if (r.resource_name != c.resource) continue;
    if (c.set == "healthy") return r.healthy;
    if (c.set == "unhealthy") return r.unhealthy;
    if (c.set == "allocated") return r.allocated;
    std::vector<std::string> ids;
    for (const auto& d : r.devices) ids.push_back(d.id);
    return Sorted(std::move(ids));
  }
  std::vector<std::string> names;
  for (const auto& r : o.resources) names.push_back(r.resource_name);
  return absl::NotFoundError(
      fmt::format("capture '{}': resource {} is unknown to the kubelet "
                  "(resources: {})",
                  c.name, c.resource, ListString(names)));
}

absl::StatusOr<std::vector<std::string>> CheckpointEntry(const CaptureSpec& c,
                                                         const std::string& uid,
                                                         const Observed& o) {
  if (!o.checkpoint_bytes) {
    return absl::NotFoundError(fmt::format("capture '{}': no checkpoint file", c.name));
  }
  const checkpoint::VerifyResult v = checkpoint::Verify(*o.checkpoint_bytes);
  if (!v.parsed) {
    return absl::NotFoundError(
        fmt::format("capture '{}': the checkpoint does not parse: {}", c.name, v.error));
  }
  const checkpoint::Checkpoint cp = v.format == checkpoint::FormatVersion::kV1
                                        ? checkpoint::ConvertV1ToV2(v.checkpoint)
                                        : v.checkpoint;
  if (cp.data.pod_device_entries) {
    for (const auto& e : *cp.data.pod_device_entries) {
      if (e.pod_uid != uid || e.container_name != c.container || e.resource_name != c.resource) {
        continue;
      }
      std::vector<std::string> ids;
      if (e.device_ids) {
        for (const auto& [numa, list] : *e.device_ids) {
          if (list) ids.insert(ids.end(), list->begin(), list->end());
        }
      }
      return Sorted(std::move(ids));
    }
  }
  return absl::NotFoundError(fmt::format("capture '{}': the checkpoint has no entry {}/{}/{}",
                                         c.name, c.pod, c.container, c.resource));
}

}  // namespace

absl::StatusOr<std::vector<std::string>> TakeCapture(const CaptureSpec& c, const Observed& o) {
  if (!c.set.empty()) return ResourceSet(c, o);
  const node::PodRecord* rec = FindPod(o.pods, c.pod);
  if (c.checkpoint) return CheckpointEntry(c, rec ? rec->pod.uid : c.pod, o);
  if (rec == nullptr) {
    return absl::NotFoundError(fmt::format("capture '{}': no pod '{}'", c.name, c.pod));
  }
  const bool has_container =
      std::any_of(rec->containers.begin(), rec->containers.end(),
                  [&](const node::ContainerRecord& x) { return x.name == c.container; });
  if (!has_container) {
    return absl::NotFoundError(
        fmt::format("capture '{}': pod '{}' has no container '{}'", c.name, c.pod, c.container));
  }
  for (const auto& p : o.allocations) {
    if (p.pod_uid != rec->pod.uid) continue;
    for (const auto& ca : p.containers) {
      if (ca.container_name != c.container) continue;
      auto it = ca.devices.find(c.resource);
      if (it != ca.devices.end()) return Sorted(it->second);
    }
  }
  return std::vector<std::string>{};
}

Expectations CaptureNeeds(const std::vector<CaptureSpec>& captures) {
  Expectations e;
  for (const CaptureSpec& c : captures) {
    if (c.checkpoint) e.checkpoint = CheckpointExpect{};
  }
  return e;
}

}  // namespace devmgr::scenario
