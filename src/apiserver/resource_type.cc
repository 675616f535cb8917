#include "apiserver/resource_type.h"

namespace devmgr::apiserver {

std::string ResourceType::ApiVersion() const {
  return group.empty() ? version : group + "/" + version;
}

std::string ResourceType::QualifiedResource() const {
  return group.empty() ? resource : resource + "." + group;
}

std::string ResourceType::QualifiedKind() const {
  return group.empty() ? kind : kind + "." + group;
}

std::string ResourceType::GroupVersionKind() const { return ApiVersion() + ", Kind=" + kind; }

// The selectable fields are those of the types' field label conversion
// functions (pkg/apis/resource/v1/conversion.go, pkg/apis/core/v1).
const ResourceType& ResourceSlices() {
  static const ResourceType t{"resource.k8s.io",
                              "v1",
                              "resourceslices",
                              "ResourceSlice",
                              false,
                              false,
                              {"spec.nodeName", "spec.driver", "spec.pool.name"}};
  return t;
}

const ResourceType& ResourceClaims() {
  static const ResourceType t{
      "resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", true, true, {}};
  return t;
}

const ResourceType& DeviceClasses() {
  static const ResourceType t{
      "resource.k8s.io", "v1", "deviceclasses", "DeviceClass", false, false, {}};
  return t;
}

// Templates are read by the resource claim controller's emulation
// (src/dra/pod_claims.h); no status subresource.
const ResourceType& ResourceClaimTemplates() {
  static const ResourceType t{
      "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", true, false, {}};
  return t;
}

const ResourceType& Nodes() {
  static const ResourceType t{"", "v1", "nodes", "Node", false, true, {"spec.unschedulable"}};
  return t;
}

const ResourceType* FindResourceType(std::string_view group, std::string_view version,
                                     std::string_view resource) {
  for (const ResourceType* t : {&ResourceSlices(), &ResourceClaims(), &ResourceClaimTemplates(),
                                &DeviceClasses(), &Nodes()}) {
    if (t->group == group && t->version == version && t->resource == resource) return t;
  }
  return nullptr;
}

}  // namespace devmgr::apiserver
