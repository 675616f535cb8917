#include "manager/run_container_options.h"

#include <algorithm>
#include <map>
#include <utility>

#include "common/logging.h"

namespace devmgr::manager {
namespace {

// Go iterates protobuf maps in random order; sorted keys are one instance
// of it and keep devmgr's output reproducible.
std::vector<std::pair<std::string, std::string>> SortedEntries(
    const google::protobuf::Map<std::string, std::string>& m) {
  std::vector<std::pair<std::string, std::string>> out(m.begin(), m.end());
  std::sort(out.begin(), out.end());
  return out;
}

template <typename T, typename Key>
const T* FindBy(const std::vector<T>& v, const std::string& key, Key key_of) {
  for (const T& x : v) {
    if (key_of(x) == key) return &x;
  }
  return nullptr;
}

}  // namespace

void RunContainerOptionsMerger::Add(const v1beta1::ContainerAllocateResponse& resp) {
  for (const auto& [k, v] : SortedEntries(resp.envs())) {
    const EnvVar* e = FindBy(opts_.envs, k, [](const EnvVar& x) { return x.name; });
    if (e != nullptr) {
      if (log_) DM_VINFO(4, "Skip existing env", {"envKey", k}, {"envValue", v});
      if (log_ && e->value != v) {
        DM_ERROR("", "Environment variable has conflicting setting", {"envKey", k}, {"expected", v},
                 {"got", e->value});
      }
      continue;
    }
    if (log_) DM_VINFO(4, "Add env", {"envKey", k}, {"envValue", v});
    opts_.envs.push_back({k, v});
  }
  for (const v1beta1::DeviceSpec& dev : resp.devices()) {
    const DeviceOption* d = FindBy(opts_.devices, dev.container_path(),
                                   [](const DeviceOption& x) { return x.path_in_container; });
    if (d != nullptr) {
      if (log_ && d->path_on_host != dev.host_path()) {
        DM_ERROR("", "Container device has conflicting mapping host devices",
                 {"containerPath", dev.container_path()}, {"got", d->path_on_host},
                 {"expected", dev.host_path()});
      }
      continue;
    }
    opts_.devices.push_back({dev.host_path(), dev.container_path(), dev.permissions()});
  }
  for (const v1beta1::Mount& m : resp.mounts()) {
    const MountOption* x = FindBy(opts_.mounts, m.container_path(),
                                  [](const MountOption& o) { return o.container_path; });
    if (x != nullptr) {
      if (log_ && x->host_path != m.host_path()) {
        DM_ERROR("", "Container mount has conflicting mapping host mounts",
                 {"containerPath", m.container_path()}, {"got", x->host_path},
                 {"expected", m.host_path()});
      }
      continue;
    }
    opts_.mounts.push_back(
        {m.container_path(), m.container_path(), m.host_path(), m.read_only(), false});
  }
  for (const auto& [k, v] : SortedEntries(resp.annotations())) {
    const Annotation* a = FindBy(opts_.annotations, k, [](const Annotation& x) { return x.name; });
    if (a != nullptr) {
      if (log_ && a->value != v) {
        DM_ERROR("", "Annotation has conflicting setting", {"annotationKey", k}, {"expected", v},
                 {"got", a->value});
      }
      continue;
    }
    opts_.annotations.push_back({k, v});
  }
  if (cdi_enabled_) {
    for (const v1beta1::CDIDevice& c : resp.cdi_devices()) {
      if (std::find(opts_.cdi_devices.begin(), opts_.cdi_devices.end(), c.name()) !=
          opts_.cdi_devices.end()) {
        continue;
      }
      opts_.cdi_devices.push_back(c.name());
    }
  }
}

}  // namespace devmgr::manager
