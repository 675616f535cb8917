// A fieldSelector (k8s.io/apimachinery pkg/fields): comma-separated
// requirements "field=value", "field==value" or "field!=value" over the
// fields a resource type allows, matched against the stored JSON.
#ifndef DEVMGR_APISERVER_FIELD_SELECTOR_H_
#define DEVMGR_APISERVER_FIELD_SELECTOR_H_

#include <string>
#include <vector>

#include "apiserver/api_error.h"
#include "apiserver/resource_type.h"
#include "nlohmann/json.hpp"

namespace devmgr::apiserver {

// Thread-compatible value type.
class FieldSelector {
 public:
  struct Requirement {
    std::string field;
    bool equals = true;  // false: "!="
    std::string value;
  };

  // Selects everything.
  FieldSelector() = default;

  // Parses `text` for `type`. BadRequest for a malformed selector or a field
  // the type does not allow ("field label not supported for
  // resource.k8s.io/v1, Kind=ResourceSlice: spec.foo", as the real server).
  static ApiOr<FieldSelector> Parse(const std::string& text, const ResourceType& type);

  bool Matches(const nlohmann::json& object) const;
  bool Empty() const { return requirements_.empty(); }
  const std::vector<Requirement>& requirements() const { return requirements_; }

 private:
  std::vector<Requirement> requirements_;
};

// The value of a dotted field path in `object` as a field selector sees it:
// strings as they are, booleans "true"/"false", "" when absent.
std::string FieldValue(const nlohmann::json& object, const std::string& path);

}  // namespace devmgr::apiserver

#endif  // DEVMGR_APISERVER_FIELD_SELECTOR_H_
