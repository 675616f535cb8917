// The resources devmgr's API endpoint serves, one row each: group, version,
// plural, kind, scope and the fields a fieldSelector may name.
#ifndef DEVMGR_APISERVER_RESOURCE_TYPE_H_
#define DEVMGR_APISERVER_RESOURCE_TYPE_H_

#include <string>
#include <string_view>
#include <vector>

namespace devmgr::apiserver {

struct ResourceType {
  std::string group;     // "" for the core group
  std::string version;   // "v1"
  std::string resource;  // plural, "resourceslices"
  std::string kind;      // "ResourceSlice"
  bool namespaced = false;
  bool has_status = false;  // a status subresource: PUT on the object keeps the old status
  // Field paths a fieldSelector may name besides metadata.name (and
  // metadata.namespace for namespaced types).
  std::vector<std::string> selectable_fields;

  // "resource.k8s.io/v1", or "v1" for the core group.
  std::string ApiVersion() const;
  // schema.GroupResource.String(): "resourceslices.resource.k8s.io", "nodes".
  std::string QualifiedResource() const;
  // schema.GroupKind.String(): "ResourceSlice.resource.k8s.io", "Node".
  std::string QualifiedKind() const;
  // schema.GroupVersionKind.String(): "resource.k8s.io/v1, Kind=ResourceSlice".
  std::string GroupVersionKind() const;
};

// resource.k8s.io/v1 resourceslices, resourceclaims, resourceclaimtemplates,
// deviceclasses and core v1 nodes.
const ResourceType& ResourceSlices();
const ResourceType& ResourceClaims();
const ResourceType& ResourceClaimTemplates();
const ResourceType& DeviceClasses();
const ResourceType& Nodes();

// The served type for (group, version, plural), or nullptr.
const ResourceType* FindResourceType(std::string_view group, std::string_view version,
                                     std::string_view resource);

}  // namespace devmgr::apiserver

#endif  // DEVMGR_APISERVER_RESOURCE_TYPE_H_
