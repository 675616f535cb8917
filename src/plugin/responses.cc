#include "plugin/responses.h"

#include <algorithm>
#include <set>

#include "plugin/response_template.h"

namespace devmgr::plugin {
namespace {

void Expand(const ResponseTemplate& t, const TemplateVars& v,
            v1beta1::ContainerAllocateResponse* out) {
  for (const auto& [k, val] : t.envs) {
    (*out->mutable_envs())[ExpandTemplate(k, v)] = ExpandTemplate(val, v);
  }
  for (const MountConfig& m : t.mounts) {
    v1beta1::Mount* pm = out->add_mounts();
    pm->set_container_path(ExpandTemplate(m.container_path, v));
    pm->set_host_path(ExpandTemplate(m.host_path, v));
    pm->set_read_only(m.read_only);
  }
  for (const DeviceSpecConfig& d : t.device_specs) {
    v1beta1::DeviceSpec* pd = out->add_devices();
    pd->set_container_path(ExpandTemplate(d.container_path, v));
    pd->set_host_path(ExpandTemplate(d.host_path, v));
    pd->set_permissions(d.permissions);
  }
  for (const auto& [k, val] : t.annotations) {
    (*out->mutable_annotations())[ExpandTemplate(k, v)] = ExpandTemplate(val, v);
  }
  for (const std::string& c : t.cdi_devices) out->add_cdi_devices()->set_name(ExpandTemplate(c, v));
}

}  // namespace

v1beta1::ContainerAllocateResponse BuildContainerAllocateResponse(
    const Config& config, const std::vector<std::string>& device_ids) {
  TemplateVars v;
  for (size_t i = 0; i < device_ids.size(); ++i) {
    if (i > 0) v.device_ids += ',';
    v.device_ids += device_ids[i];
  }
  v.device_count = device_ids.size();
  v.resource_name = config.resource;
  v1beta1::ContainerAllocateResponse out;
  Expand(config.allocate.per_container, v, &out);
  for (size_t i = 0; i < device_ids.size(); ++i) {
    v.device_id = device_ids[i];
    v.device_index = i;
    Expand(config.allocate.per_device, v, &out);
  }
  return out;
}

std::vector<std::string> PreferredDevices(const PreferredAllocationConfig& policy,
                                          const v1beta1::ContainerPreferredAllocationRequest& req) {
  using Policy = PreferredAllocationConfig::Policy;
  std::vector<std::string> out;
  if (policy.empty_without_must_include && req.must_include_deviceids().empty()) return out;
  switch (policy.policy) {
    case Policy::kAll:
      return {req.available_deviceids().begin(), req.available_deviceids().end()};
    case Policy::kFixed:
      return policy.fixed;
    case Policy::kEchoMustInclude:
      return {req.must_include_deviceids().begin(), req.must_include_deviceids().end()};
    case Policy::kFirst:
    case Policy::kLast: {
      const size_t size =
          req.allocation_size() > 0 ? static_cast<size_t>(req.allocation_size()) : 0;
      std::set<std::string> taken;
      for (const std::string& id : req.must_include_deviceids()) {
        if (out.size() >= size) break;
        if (taken.insert(id).second) out.push_back(id);
      }
      std::vector<std::string> rest;
      for (const std::string& id : req.available_deviceids()) {
        if (!taken.count(id)) rest.push_back(id);
      }
      std::sort(rest.begin(), rest.end());
      rest.erase(std::unique(rest.begin(), rest.end()), rest.end());
      if (policy.policy == Policy::kLast) std::reverse(rest.begin(), rest.end());
      for (const std::string& id : rest) {
        if (out.size() >= size) break;
        out.push_back(id);
      }
      return out;
    }
  }
  return out;
}

}  // namespace devmgr::plugin
